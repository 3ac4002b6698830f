"""Configuration of the UFM collector: the UFM Telemetry endpoints to poll and how their
InfiniBand names (node GUID, port number) become railtrace's device and interface names.

Plain pydantic models in the style of `railtrace.settings` (extra keys forbidden, the password
a SecretStr so it never reaches a log line), self-contained so they are a section of the one
Settings object unchanged. The `switches` file is only named here; it is read when the
collector is built, so a settings file loads on a host that does not have it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

#: UFM Telemetry serves Prometheus text at this path unless told otherwise (`/csv`, `/json`
#: and cset/fset filter names are other paths of the same endpoint).
DEFAULT_PATH = "/metrics"


class UfmEndpoint(BaseModel):
    """One UFM Telemetry HTTP endpoint; it may serve many switches (every GUID it samples).

    `url` without a path gets DEFAULT_PATH. `verify_tls = false` only for a lab: it accepts
    any certificate; `ca_file` is the CA bundle for a private CA.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    url: str = Field(min_length=1)
    interval_s: float = Field(default=10.0, ge=1)
    timeout_s: float = Field(default=5.0, gt=0)
    # Consecutive failures back the next poll off up to this long, so a dead UFM host is
    # retried ever less often; the first good poll returns to `interval_s`.
    backoff_max_s: float = Field(default=300.0, ge=1)
    verify_tls: bool = True
    ca_file: Path | None = None
    username: str | None = Field(default=None, min_length=1)
    password: SecretStr | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"url must be http(s)://host[:port][/path], got {url!r}")
        if parts.path in ("", "/"):
            parts = parts._replace(path=DEFAULT_PATH)
        return urlunsplit(parts)

    @model_validator(mode="after")
    def _auth(self) -> Self:
        if (self.username is None) != (self.password is None):
            raise ValueError(f"endpoint {self.name}: basic auth needs username and password")
        return self


class UfmCollectorConfig(BaseModel):
    """The whole UFM collector (deploy/collectors/README.md, "UFM (InfiniBand)").

    `switches` is the mapping CSV (`node_guid,device[,port_num,interface]`).
    `interface_template` names a port that has no row of its own; the default, the bare IB
    port number, is the one name UFM itself gives a port: the switch OS's names (MLNX-OS
    `IB1/N`, NVOS `swNpM` for cage N, split port M) follow cages and splits that the port
    number alone does not tell, so give those as rows. Whatever it yields must be the
    interface names of `cables.csv`. `data_unit_bytes` multiplies PortXmitData/PortRcvData:
    4 per the InfiniBand spec (units of 4 octets), 1 if a UFM release turns out to count bytes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoints: tuple[UfmEndpoint, ...] = ()
    switches: Path | None = None
    interface_template: str = "{port_num}"
    data_unit_bytes: Literal[1, 4] = 4

    @field_validator("interface_template")
    @classmethod
    def _template(cls, template: str) -> str:
        try:
            one, two = template.format(port_num=1), template.format(port_num=2)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"interface_template {template!r}: only {{port_num}}: {exc}") from exc
        if one == two:
            raise ValueError(f"interface_template {template!r} must contain {{port_num}}")
        return template

    @model_validator(mode="after")
    def _endpoints(self) -> Self:
        names = [e.name for e in self.endpoints]
        if len(names) != len(set(names)):
            raise ValueError("UFM endpoint names must be unique: they label the metrics")
        if self.endpoints and self.switches is None:
            raise ValueError("UFM endpoints need `switches`, the node GUID -> device CSV")
        return self
