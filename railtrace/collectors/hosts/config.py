"""Settings of the host-side collectors, self-contained so they can be nested into railtrace's
one Settings object (and its TOML / `RAILTRACE_` environment sources) without change.

Every model forbids unknown fields: a misspelt option in a config file is an error at start-up,
not a collector that silently runs on defaults.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from railtrace.streams.records import JOB_ID_MAX_LENGTH, JOB_ID_PATTERN

#: Lines that mean a collective is hanging or failed: a batch holding one goes out at once and
#: is marked as a state change, so a full delivery spool never drops it.
DEFAULT_ALERT_PATTERNS = [
    r"Watchdog caught collective operation timeout",
    r"NCCL WARN",
    r"NCCL ERROR",
    r"NCCL error",
    r"nccl(?:Internal|System|Remote|UnhandledCuda|InvalidUsage)Error",
    r"NVRM: Xid",
]


def _check_patterns(patterns: list[str]) -> list[str]:
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise ValueError(f"bad regular expression {p!r}: {exc}") from exc
    return patterns


class LogScraperConfig(BaseModel):
    """`railtrace collect logs`: follow NCCL / PyTorch log files of the jobs running here.

    `paths` are path templates (see `jobpath.PathTemplate`): shell-style globs in which the
    one placeholder `{job_id}` stands for the part of the path that names the job, e.g.
    `/var/log/jobs/{job_id}/*.log`. A template without `{job_id}` is a plain glob, and its
    files' job id is read from a `SLURM_JOB_ID=<n>` in their first `slurm_scan_lines` lines.
    """

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(default_factory=lambda: ["/var/log/jobs/{job_id}/*.log"])
    # This host's name in every source it sends (`logs/<job>/<node>:<path>`); None: the
    # host name. Two nodes of one job must never share one.
    node: str | None = Field(default=None, min_length=1, pattern=r"^[^\s:/]+$")
    state_file: Path = Path("/var/lib/railtrace/log-offsets.json")
    # Lines per raw-logs message: the same as `railtrace replay --kafka` by default.
    max_lines: int = Field(default=500, ge=1, le=100_000)
    # A batch that is not full goes out once no new line arrived for this long.
    idle_flush_ms: int = Field(default=200, ge=0)
    # ... and at the latest this long after its first line was read (a file that trickles).
    max_delay_ms: int = Field(default=2000, ge=0)
    poll_interval_ms: int = Field(default=100, ge=1)
    # How often the globs are expanded again to find new files (a glob walks directories).
    rescan_interval_ms: int = Field(default=2000, ge=1)
    # After a rename rotation the old file is still read until it has not grown for this long
    # (the writer may write to it until it reopens its log), then it is closed.
    rotate_grace_ms: int = Field(default=5000, ge=0)
    # A path that disappeared (and was not recreated) is forgotten after this long.
    forget_after_s: float = Field(default=300.0, ge=0)
    slurm_scan_lines: int = Field(default=50, ge=1)
    # A file whose first lines name no job yet is given this long to write SLURM_JOB_ID.
    job_id_wait_ms: int = Field(default=10_000, ge=0)
    # The job id of files that name none; None skips such files (counted and logged).
    fallback_job_id: str | None = Field(
        default=None, max_length=JOB_ID_MAX_LENGTH, pattern=JOB_ID_PATTERN
    )
    # A line longer than this is cut (the rest up to its newline is skipped, so the line
    # numbering stays that of the file); the parser reads the first 64 KiB anyway.
    max_line_bytes: int = Field(default=256 * 1024, ge=1024)
    # Bytes read from one file in one poll, so one huge file cannot starve the others.
    read_chunk_bytes: int = Field(default=1024 * 1024, ge=4096)
    alert_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_ALERT_PATTERNS))

    _patterns = field_validator("alert_patterns")(_check_patterns)

    @field_validator("paths")
    @classmethod
    def _templates(cls, paths: list[str]) -> list[str]:
        from railtrace.collectors.hosts.jobpath import PathTemplate

        for p in paths:
            PathTemplate(p)  # raises ValueError on a bad template
        return paths


class CountRule(BaseModel):
    """Quarantine a node once `count` Xids of `xids` arrived within `window_s` of each other."""

    model_config = ConfigDict(extra="forbid")

    xids: list[int] = Field(min_length=1)
    count: int = Field(default=3, ge=1)
    window_s: float = Field(default=3600.0, gt=0)


class QuarantineConfig(BaseModel):
    """The operator's promise of which GPU errors take a node out of the scheduler.

    Defaults: a GPU off the bus (79), a double-bit ECC error (48) and a failed row remapping
    (64) quarantine at once; graphics exceptions (13) and MMU faults (31), which are often the
    application's own fault, only when they repeat (3 within an hour, per Xid); contained (94)
    and uncontained (95) ECC errors make the node suspect of silent data corruption, which
    keeps it quarantined until an operator releases it.
    """

    model_config = ConfigDict(extra="forbid")

    immediate_xids: list[int] = Field(default_factory=lambda: [79, 48, 64])
    # Detail texts that quarantine at once whatever the Xid number (driver variants of the
    # double-bit ECC and row-remapping failure messages). Matched case-insensitively.
    immediate_detail_patterns: list[str] = Field(
        default_factory=lambda: [
            r"double[- ]bit",
            r"\bDBE\b",
            r"row[- ]?remap\w*.{0,60}fail",
        ]
    )
    counted: list[CountRule] = Field(
        default_factory=lambda: [CountRule(xids=[13]), CountRule(xids=[31])]
    )
    sdc_xids: list[int] = Field(default_factory=lambda: [94, 95])
    # Xid events kept as evidence per quarantine (the first ones: they explain the decision).
    max_evidence: int = Field(default=20, ge=1)

    _patterns = field_validator("immediate_detail_patterns")(_check_patterns)


class XidScraperConfig(BaseModel):
    """`railtrace collect xid`: NVIDIA Xid lines of this host's kernel log as node events.

    Lines come from `command`'s stdout (default: the kernel journal, followed) or, when `file`
    is set, from that file (e.g. /var/log/kern.log), read from its start and followed.
    """

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(
        default_factory=lambda: ["journalctl", "-k", "-f", "-o", "short-iso", "--no-pager"]
    )
    file: Path | None = None
    # The node the events are about. None: this host's name. Lines that name their host
    # (syslog / journal prefixes) use that name instead when `node_from_line` is set, which is
    # what a central syslog file holding many hosts needs.
    node: str | None = None
    node_from_line: bool = True
    # Seconds to wait before running the command again after it exited.
    restart_delay_s: float = Field(default=5.0, ge=0)
    poll_interval_ms: int = Field(default=200, ge=1)
    # Quarantine decisions and the Xids already seen (`dmesg -w` and `journalctl -f` repeat
    # old lines when restarted) are kept here; None keeps them in memory only.
    state_file: Path | None = Path("/var/lib/railtrace/xid-state.json")
    # Where `railtrace release-node` leaves operator requests (release, clear) for this
    # collector; it looks every second and deletes each once applied. None: no requests.
    requests_dir: Path | None = Path("/var/lib/railtrace/xid-requests")
    # Fingerprints of Xid lines remembered to recognise repeats.
    remember_lines: int = Field(default=4096, ge=16)
    policy: QuarantineConfig = Field(default_factory=QuarantineConfig)
