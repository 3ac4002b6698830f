"""Which files the log scraper takes up, and for which job.

The path templates (`collect.logs.paths`) are expanded every `rescan_interval_ms`. A file whose
path names its job (`{job_id}`) is taken up at once; one whose path does not is read from its
start for Slurm's `SLURM_JOB_ID=` (`jobpath.slurm_job_id`) until it names one, has shown enough
lines, or `job_id_wait_ms` passed; then it falls back to `fallback_job_id`, or is skipped until
it is replaced by another file (counted in `files_without_job`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from railtrace.collectors.hosts.config import LogScraperConfig
from railtrace.collectors.hosts.jobpath import PathTemplate, slurm_job_id
from railtrace.collectors.hosts.logfollow import ScraperStats, identity, is_file
from railtrace.collectors.hosts.tailer import decode
from railtrace.streams.records import valid_job_id

log = logging.getLogger(__name__)

#: Bytes of a file's start searched for SLURM_JOB_ID.
SLURM_SCAN_BYTES = 64 * 1024


class LogFinder:
    """Finds the files to follow and hands each to `adopt(path, job_id)`; `followed(path)`
    says which the scraper follows already. Counts into the scraper's `stats`."""

    def __init__(
        self,
        config: LogScraperConfig,
        stats: ScraperStats,
        followed: Callable[[str], bool],
        adopt: Callable[[str, str], None],
    ) -> None:
        self.config = config
        self.stats = stats
        self._followed = followed
        self._adopt = adopt
        self._templates = [PathTemplate(p) for p in config.paths]
        self._undecided: dict[str, float] = {}  # path -> when first seen without a job id
        self._ignored: dict[str, tuple[int, int]] = {}  # path -> identity that named no job
        self._next_rescan = 0.0

    def poll(self, now: float) -> None:
        """Expand the templates when a rescan is due, and decide the files seen undecided."""
        if now >= self._next_rescan:
            self._rescan(now)
            self._next_rescan = now + self.config.rescan_interval_ms / 1000
        self._decide_undecided(now)

    def _rescan(self, now: float) -> None:
        for template in self._templates:
            try:
                found = template.expand()
            except OSError as exc:
                self.stats.read_errors += 1
                log.warning(
                    "cannot expand path template",
                    extra={"template": template.template, "error": str(exc)},
                )
                continue
            for path in found:
                if self._followed(path) or path in self._undecided:
                    continue
                if not is_file(path):
                    continue
                ignored = self._ignored.get(path)
                if ignored is not None and ignored == identity(path):
                    continue
                job = template.job_id(path)
                if job is None:
                    self._undecided[path] = now
                elif valid_job_id(job):
                    self._adopt(path, job)
                else:
                    self._ignore(path, "its job id is not one (letters, digits and ._:@+-)")

    def _decide_undecided(self, now: float) -> None:
        for path, since in list(self._undecided.items()):
            try:
                with open(path, "rb") as fh:
                    head = fh.read(SLURM_SCAN_BYTES)
            except OSError:
                del self._undecided[path]  # gone: found again by a later rescan if it returns
                continue
            complete = [decode(x) for x in head.split(b"\n")[:-1]][: self.config.slurm_scan_lines]
            job = slurm_job_id(complete)
            if job is not None:
                del self._undecided[path]
                self._adopt(path, job)
                continue
            settled = (
                len(complete) >= self.config.slurm_scan_lines
                or len(head) >= SLURM_SCAN_BYTES
                or now - since >= self.config.job_id_wait_ms / 1000
            )
            if not settled:
                continue
            del self._undecided[path]
            if self.config.fallback_job_id is not None:
                self._adopt(path, self.config.fallback_job_id)
            else:
                self._ignore(
                    path, "no {job_id} in its template, no SLURM_JOB_ID in its first lines"
                )

    def _ignore(self, path: str, why: str) -> None:
        """Skip a file that names no job railtrace can serve, until it is replaced."""
        self.stats.files_without_job += 1
        ident = identity(path)
        if ident is not None:
            self._ignored[path] = ident
        log.warning("log file names no job: skipped", extra={"path": path, "why": why})
