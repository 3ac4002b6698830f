"""What the poller asks of Slurm, whichever way it is read (the client tools, slurmrestd): every
job it holds, and one job by id. Both answer with the bytes Slurm printed, in a format the
capture's reader takes, so the poller cuts, compares and publishes them alike."""

from __future__ import annotations

from typing import Any, Protocol

from .config import SchedulerCollectorConfig


class SourceError(RuntimeError):
    """Slurm was reached but did not answer (a tool's non-zero exit, an HTTP error, errors in
    slurmrestd's reply); the message says how, briefly, and never holds a secret."""


class JobSource(Protocol):
    """A way to read Slurm. Both calls raise SourceError, OSError (refused, not found) or
    TimeoutError; the poller counts and logs them."""

    def describe(self) -> dict[str, Any]:
        """What a log line names the source by (the command line, the URL): no secret."""
        ...

    def missing(self) -> str | None:
        """What this host lacks to read Slurm this way (a tool not installed), or None."""
        ...

    async def jobs(self) -> bytes:
        """Every job Slurm holds, as one output."""
        ...

    async def job(self, job_id: str) -> bytes:
        """The job `job_id` as Slurm holds it; an output without it (empty, or a listing of
        no job) when Slurm no longer does."""
        ...


def source_of(config: SchedulerCollectorConfig) -> JobSource:
    """The source `config.command` names."""
    if config.command == "slurmrestd":
        from .restd import RestdSource

        return RestdSource(config)
    from .tools import ToolSource

    return ToolSource(config)
