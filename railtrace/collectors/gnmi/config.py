"""What the gNMI collector needs to know about each switch, as self-contained pydantic models.

Kept apart from railtrace's settings so the CLI can build these from any source (a YAML
inventory, the topology, flags) without this package knowing which. Validation happens here
because a wrong target must fail at load time, not minutes later inside a reconnect loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from .profiles import PROFILES

#: The smallest sample interval accepted: below it switch CPUs, not links, become the story.
MIN_SAMPLE_INTERVAL_S = 1.0
DEFAULT_SAMPLE_INTERVAL_S = 10.0


class TlsSettings(BaseModel):
    """TLS towards one target. Without `ca_file` the system's trust roots are used.

    `cert_file` and `key_file` (both or neither) are the client certificate for targets that
    require mutual TLS. `server_name` overrides the name checked against the target's
    certificate, for targets dialled by IP address with a certificate naming their hostname.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str | None = None

    @model_validator(mode="after")
    def _pair(self) -> TlsSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together: give both or neither")
        return self


class Credentials(BaseModel):
    """Username and password, sent as `username`/`password` call metadata on every RPC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    username: str
    password: SecretStr


class Backoff(BaseModel):
    """Reconnect delays: exponential from `initial_s` up to `max_s`, each jittered.

    The jitter keeps a fleet of collectors from reconnecting in lockstep after a switch
    reload or a management network blip.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    initial_s: float = Field(default=1.0, gt=0)
    max_s: float = Field(default=60.0, gt=0)
    factor: float = Field(default=2.0, ge=1)


class GnmiTarget(BaseModel):
    """One switch to dial: its railtrace name (the message key and `source`), its gNMI address
    (`host:port`), how to secure and authenticate the connection, and what to subscribe to.

    Plaintext is used only with `insecure=True` and no `tls`; a target with neither is
    refused, so a forgotten TLS block never silently sends passwords in the clear.

    `fallback_encoding` is the encoding to subscribe with when the target does not implement
    Capabilities (it answers UNIMPLEMENTED: gNMI makes the RPC mandatory, but openconfig's
    reference fake target and some switch OSes lack it); None means the profile's first.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    address: str = Field(min_length=1)
    tls: TlsSettings | None = None
    insecure: bool = False
    credentials: Credentials | None = None
    profile: str = "openconfig"
    sample_interval_s: float = Field(default=DEFAULT_SAMPLE_INTERVAL_S, ge=MIN_SAMPLE_INTERVAL_S)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    backoff: Backoff = Backoff()
    fallback_encoding: Literal["PROTO", "JSON_IETF", "JSON"] | None = None

    @model_validator(mode="after")
    def _check(self) -> GnmiTarget:
        if self.insecure and self.tls is not None:
            raise ValueError(f"target {self.name}: `insecure` and `tls` exclude each other")
        if not self.insecure and self.tls is None:
            raise ValueError(f"target {self.name}: give `tls` settings or set `insecure: true`")
        if self.profile not in PROFILES:
            known = ", ".join(sorted(PROFILES))
            raise ValueError(f"target {self.name}: unknown profile {self.profile!r} ({known})")
        return self

    @property
    def sample_interval_ns(self) -> int:
        """The sample interval as gNMI carries it."""
        return int(self.sample_interval_s * 1_000_000_000)
