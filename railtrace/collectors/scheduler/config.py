"""Configuration of the scheduler collector, a section of the one Settings object.

Where Slurm is read from, how often, and how: the collector runs the client tools as they are
on the host (munge authenticates it as the user it runs as), so a host that can run
`scontrol show job` can run it; or it asks slurmrestd, Slurm's REST daemon, where a site runs
one instead of giving collectors a login node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

#: The data-parser versions of slurmrestd's jobs endpoint whose JSON the reader knows (the
#: squeue --json shapes of streams/scheduler/slurm_json.py), newest first: v0.0.38 is Slurm
#: 22.05's (Debian 12), v0.0.44 that of 25.11.
ApiVersion = Literal["v0.0.44", "v0.0.43", "v0.0.42", "v0.0.41", "v0.0.40", "v0.0.39", "v0.0.38"]
API_VERSIONS: tuple[ApiVersion, ...] = get_args(ApiVersion)


class SlurmrestdConfig(BaseModel):
    """slurmrestd, for `command = "slurmrestd"`. `url`: `http://host:port` (or https) where
    it listens with JWT authentication (rest_auth/jwt), or `unix:/path` of its socket (JWT
    too, or rest_auth/local, Debian's default: no token, slurmrestd asks slurmctld as its own
    user through munge; the socket's permissions decide who may connect). `api_version`: the
    data-parser version of the jobs endpoint, `/slurm/<version>/jobs`; `auto` asks the server
    (its OpenAPI document) and takes the newest it serves that railtrace reads, and asks again
    after a 404 (an upgraded server). `user` and the JWT go as X-SLURM-USER-NAME and
    X-SLURM-USER-TOKEN: the token from `token_file` (read at every poll, so a token rotated
    by cron is taken; as `scontrol token` prints it, `SLURM_JWT=...`, or bare) or `token`
    (e.g. the environment's RAILTRACE_COLLECT__SCHEDULER__SLURMRESTD__TOKEN). Neither for
    rest_auth/local."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = ""
    api_version: Literal["auto"] | ApiVersion = "auto"
    user: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,64}$")
    token_file: Path | None = None
    token: SecretStr | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url:
            return url
        parts = urlsplit(url)
        if parts.scheme == "unix" and parts.path.startswith("/"):
            return url
        if parts.scheme in ("http", "https") and parts.netloc and parts.path in ("", "/"):
            return url.rstrip("/")
        raise ValueError(f"url must be http(s)://host:port or unix:/path/to/socket, got {url!r}")

    @model_validator(mode="after")
    def _auth(self) -> Self:
        if self.token_file is not None and self.token is not None:
            raise ValueError("slurmrestd: token_file or token, not both")
        if (self.user is not None) != (self.token_file is not None or self.token is not None):
            raise ValueError("slurmrestd: JWT needs both user and a token (token_file or token)")
        return self


class SchedulerCollectorConfig(BaseModel):
    """`command`: `scontrol` (`scontrol show job -d`: every job Slurm still holds, with the
    GPU indexes per node), `squeue` (`squeue --json --states=all`) or `slurmrestd` (its jobs
    endpoint, the same JSON as squeue's; `slurmrestd` says where and how). `cluster` names
    the source of the records (`scontrol:<cluster>`), so two clusters' jobs never share one.
    `partitions`: only the jobs of these Slurm partitions (the GPU ones: a CPU job's hosts
    are not in cables.csv, and each would be a dead letter); empty: every job. `slurm_conf`
    sets SLURM_CONF for the tools, `bin_dir` where they are (else PATH). A failing poll is
    retried after `interval_s` doubled per failure in a row, up to `backoff_max_s`; a poll
    or request taking longer than `timeout_s` fails."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["scontrol", "squeue", "slurmrestd"] = "scontrol"
    cluster: str = Field(default="slurm", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    partitions: tuple[Annotated[str, Field(pattern=r"^[^\s,]+$")], ...] = ()
    interval_s: float = Field(default=30.0, gt=0)
    timeout_s: float = Field(default=30.0, gt=0)
    backoff_max_s: float = Field(default=300.0, gt=0)
    slurm_conf: Path | None = None
    bin_dir: Path | None = None
    slurmrestd: SlurmrestdConfig = Field(default_factory=SlurmrestdConfig)

    @model_validator(mode="after")
    def _restd(self) -> Self:
        if self.command == "slurmrestd" and not self.slurmrestd.url:
            raise ValueError('command = "slurmrestd" needs slurmrestd.url')
        return self
