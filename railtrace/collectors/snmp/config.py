"""Configuration of the SNMP collector: poll targets and the trap receiver.

Plain pydantic models in the style of `railtrace.settings` (extra keys forbidden, secrets as
SecretStr so they never reach a log line), self-contained so they can become a section of the
one Settings object unchanged. Protocol names are net-snmp's (`snmpget -a SHA -x AES`), so
an operator can copy them from a working command line.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

AuthProtocol = Literal["MD5", "SHA", "SHA224", "SHA256", "SHA384", "SHA512"]
# Net-snmp's AES192/AES256 localize keys after Blumenthal; AES192C/AES256C after Reeder (Cisco).
PrivProtocol = Literal["DES", "3DES", "AES", "AES192", "AES256", "AES192C", "AES256C"]


class UsmCredentials(BaseModel):
    """An SNMPv3 USM user: authPriv when both keys are set, authNoPriv with only auth_key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(min_length=1)
    auth_protocol: AuthProtocol = "SHA"
    auth_key: SecretStr | None = None
    priv_protocol: PrivProtocol = "AES"
    priv_key: SecretStr | None = None

    @model_validator(mode="after")
    def _keys(self) -> Self:
        # RFC 3414 needs 8+ octet pass phrases; net-snmp refuses shorter ones as well.
        for key in (self.auth_key, self.priv_key):
            if key is not None and len(key.get_secret_value()) < 8:
                raise ValueError("USM pass phrases must be at least 8 characters")
        if self.priv_key is not None and self.auth_key is None:
            raise ValueError("privacy without authentication does not exist in USM")
        return self


class SnmpTarget(BaseModel):
    """One switch to poll. `name` is the device name the pipeline and topology use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    host: str = Field(min_length=1)
    port: int = Field(default=161, ge=1, le=65535)
    version: Literal["2c", "3"] = "2c"
    community: SecretStr | None = None
    v3: UsmCredentials | None = None
    interval_s: float = Field(default=30.0, gt=0)
    # Per request: a walk is several GETBULKs, each waiting timeout_s * (retries + 1) at most.
    timeout_s: float = Field(default=2.0, gt=0)
    retries: int = Field(default=1, ge=0, le=10)
    max_repetitions: int = Field(default=25, ge=1, le=200)

    @model_validator(mode="after")
    def _credentials(self) -> Self:
        if self.version == "2c" and self.community is None:
            raise ValueError(f"target {self.name}: SNMPv2c needs a community")
        if self.version == "3" and self.v3 is None:
            raise ValueError(f"target {self.name}: SNMPv3 needs v3 credentials")
        return self


class TrapUser(UsmCredentials):
    """A v3 user traps may come from. Traps are sent by the authoritative engine, so the
    receiver must know the sender's snmpEngineID (hex, e.g. "80001f8880..."): one entry per
    (user, sending engine)."""

    engine_id: str = Field(pattern=r"^(0x)?([0-9a-fA-F]{2}){5,32}$")


class TrapReceiverConfig(BaseModel):
    """Where traps are received and whom they are accepted from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "0.0.0.0"  # traps come from every switch
    # 162 needs privileges; many deployments DNAT 162 to an unprivileged port.
    port: int = Field(default=162, ge=0, le=65535)
    communities: tuple[SecretStr, ...] = ()
    users: tuple[TrapUser, ...] = ()


class SnmpCollectorConfig(BaseModel):
    """The whole SNMP collector: targets to poll and, optionally, the trap receiver."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    targets: tuple[SnmpTarget, ...] = ()
    traps: TrapReceiverConfig | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        names = [t.name for t in self.targets]
        if len(names) != len(set(names)):
            raise ValueError("target names must be unique: they key the messages")
        return self
