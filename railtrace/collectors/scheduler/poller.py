"""The Slurm poller: every `interval_s`, what Slurm says of every job, and one raw message per
job whose placement changed since it was last published.

A record is published again only when what it places changes (state, hosts, GPUs, start,
end): a job's RunTime moves on every poll and is no news. A record the reader refuses is
published once per change too, so the worker dead-letters it with the reason; a pending job
(no hosts yet) is counted and published when it starts. A failed poll (the controller down,
munge or slurmrestd refusing, a timeout) is counted, logged, and retried with backoff.

A job can end between two polls and be forgotten by slurmctld (MinJobAge, 300 s by default)
before the next one; with the poll interval near it, or polls failing for longer, its end
would never be seen. So a job published as running that Slurm no longer lists is asked for by
id (a listing that missed it must not end it); when Slurm does not hold it either, its last
record is published again with `gone_ns`, the first poll that missed it: the worker takes the
job as ended between its last two polls (`ended_unseen`), not as running forever.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from railtrace.streams import wire
from railtrace.streams.scheduler import read_placements, split
from railtrace.streams.scheduler.common import SLURM_ENDED

from ..backoff import next_delay
from ..emit import Emit, Outgoing
from .config import SchedulerCollectorConfig
from .source import JobSource, SourceError, source_of

log = logging.getLogger(__name__)

#: What scontrol prints, exit 0, when it holds no job.
NO_JOBS = b"No jobs in the system"
# A record's job id as scontrol (`JobId=42`) or squeue's and slurmrestd's JSON print it.
_JOB_ID = re.compile(rb'(?:^|\s)JobId=(\S+)|"job_id"\s*:\s*(\d+)')
# A record's partition as scontrol (`Partition=gpu`) or the JSON (`"partition": "gpu"`)
# prints it; a pending job may name several, comma-separated.
_PARTITION = re.compile(rb'(?:^|\s)Partition=(\S+)|"partition"\s*:\s*"([^"]*)"')


@dataclass
class PollStats:
    """Counters for metrics, health and tests; `down_since` is the monotonic time of the
    first failed poll since the last good one (or when polling began), None while up."""

    polls: int = 0
    successes: int = 0
    failures: int = 0
    jobs_listed: int = 0
    waiting: int = 0
    records: int = 0
    unchanged: int = 0
    other_partitions: int = 0
    refused: int = 0
    ended_unseen: int = 0
    lookup_failures: int = 0
    emit_failures: int = 0
    last_error: str | None = None
    down_since: float | None = field(default_factory=time.monotonic)


@dataclass(frozen=True, slots=True)
class Record:
    """One job's record of a poll and what it places (or why it places nothing); `running`
    when it places the job in a state that has not ended it."""

    key: bytes
    signature: Any
    data: bytes
    refused: bool
    running: bool


@dataclass(frozen=True, slots=True)
class Listing:
    """One output of Slurm: its records, how many jobs wait for hosts, and the id of every
    job it holds (waiting, refused, other partitions included)."""

    records: list[Record]
    waiting: int
    held: set[bytes]


@dataclass(slots=True)
class Running:
    """A job last published running: its latest record, the poll that read it, and the first
    poll that no longer listed it (None while listed)."""

    data: bytes
    seen_ns: int
    missed_ns: int | None = None


class SlurmPoller:
    """Polls Slurm until cancelled; `stats` says how it went."""

    def __init__(
        self,
        config: SchedulerCollectorConfig,
        emit: Emit,
        rng: random.Random | None = None,
        slurm: JobSource | None = None,
    ) -> None:
        self.config = config
        self.emit = emit
        self.slurm = slurm or source_of(config)
        self.stats = PollStats()
        self.source = f"{config.command}:{config.cluster}"
        self._rng = rng or random.Random()
        # What was last published per job key: a job is published again only on a change.
        self._published: dict[bytes, Any] = {}
        self._running: dict[bytes, Running] = {}

    async def run(self) -> None:
        log.info("scheduler collector starting", extra=self.slurm.describe())
        failures_in_a_row = 0
        while True:
            ok = await self.poll_once()
            failures_in_a_row = 0 if ok else failures_in_a_row + 1
            c = self.config
            await asyncio.sleep(
                next_delay(c.interval_s, c.backoff_max_s, failures_in_a_row, self._rng)
            )

    async def poll_once(self) -> bool:
        """Read Slurm once and publish what changed; False (counted, logged) when Slurm
        could not be read. Never raises but CancelledError."""
        stats = self.stats
        stats.polls += 1
        polled_ns = time.time_ns()
        try:
            output = await self.slurm.jobs()
        except (OSError, TimeoutError, SourceError) as exc:
            stats.failures += 1
            stats.last_error = _describe(exc)
            if stats.down_since is None:
                stats.down_since = time.monotonic()
            log.warning(
                "scheduler poll failed", extra={**self.slurm.describe(), "error": stats.last_error}
            )
            return False
        stats.successes += 1
        stats.down_since = None
        stats.last_error = None
        listing = await asyncio.to_thread(self._listing, output)
        stats.jobs_listed = len(listing.records) + listing.waiting
        stats.waiting = listing.waiting
        for r in listing.records:
            await self._publish(r, polled_ns)
        # A job no longer listed is forgotten: if it comes back (requeued), it is news.
        listed = {r.key for r in listing.records}
        for key in self._published.keys() - listed:
            del self._published[key]
        for key in sorted(self._running.keys() - listing.held):
            await self._vanished(key, polled_ns)
        return True

    def _listing(self, output: bytes) -> Listing:
        """The records of one output, one per job that places or is refused."""
        if output.strip() in (b"", NO_JOBS):
            return Listing([], 0, set())
        records: list[Record] = []
        waiting = 0
        held: set[bytes] = set()
        wanted = set(self.config.partitions)
        for chunk in split(output):
            m = _JOB_ID.search(chunk.data)
            job = (m.group(1) or m.group(2))[:128] if m else None
            if job is not None:
                held.add(job)
            if wanted and not wanted & _partitions(chunk.data):
                self.stats.other_partitions += 1
                continue
            placed = read_placements(self.source, chunk.data)
            waiting += placed.waiting
            if placed.placements:
                p = placed.placements[0]
                signature: Any = (p.state, p.hosts, p.start_ns, p.end_ns)
                record = Record(
                    p.job_id.encode(), signature, chunk.data, False, p.state not in SLURM_ENDED
                )
            elif placed.dead_letters:
                signature = tuple(d.reason for d in placed.dead_letters)
                record = Record(job or self.source.encode(), signature, chunk.data, True, False)
            else:
                continue
            records.append(record)
        return Listing(records, waiting, held)

    async def _publish(self, r: Record, polled_ns: int) -> None:
        """Publish `r` unless it is what was last published of its job."""
        stats = self.stats
        if self._published.get(r.key) == r.signature:
            stats.unchanged += 1
        else:
            # Published as record 1 of its own: where a job's record falls in the listing
            # moves from poll to poll, and one identity per job and source lets the store
            # keep the job's latest placement.
            out = wire.SchedulerOutput(
                self.source, 1, r.data.decode("utf-8", "replace"), "UTC", polled_ns
            )
            if not await self._emit(r.key, out, polled_ns):
                return
            self._published[r.key] = r.signature
            stats.records += 1
            stats.refused += r.refused
        if r.running:
            self._running[r.key] = Running(r.data, polled_ns)
        else:
            self._running.pop(r.key, None)

    async def _vanished(self, key: bytes, polled_ns: int) -> None:
        """A job published as running that this poll did not list: published as Slurm now
        holds it, or, when it no longer does, as ended unseen. A failed lookup is asked
        again at the next poll."""
        job = self._running[key]
        if job.missed_ns is None:
            job.missed_ns = polled_ns
        job_id = key.decode("utf-8", "replace")
        try:
            output = await self.slurm.job(job_id)
        except (OSError, TimeoutError, SourceError) as exc:
            self.stats.lookup_failures += 1
            log.warning(
                "scheduler job lookup failed",
                extra={**self.slurm.describe(), "job": job_id, "error": _describe(exc)},
            )
            return
        listing = await asyncio.to_thread(self._listing, output)
        if key in listing.held:
            job.missed_ns = None
            for r in listing.records:
                if r.key == key:
                    await self._publish(r, polled_ns)
            return
        out = wire.SchedulerOutput(
            self.source, 1, job.data.decode("utf-8", "replace"), "UTC", job.seen_ns, job.missed_ns
        )
        if not await self._emit(key, out, job.missed_ns):
            return
        del self._running[key]
        self._published.pop(key, None)
        self.stats.records += 1
        self.stats.ended_unseen += 1
        log.info(
            "scheduler job ended unseen",
            extra={"job": job_id, "last_seen_ns": job.seen_ns, "gone_ns": job.missed_ns},
        )

    async def _emit(self, key: bytes, out: wire.SchedulerOutput, ts_ns: int) -> bool:
        """Hand one record to delivery; False (counted, logged) when the spool refuses it:
        it is published again at the next poll."""
        message = Outgoing(
            stream="scheduler",
            key=key,
            value=wire.encode_scheduler_output(out),
            state_change=True,
            ts_ns=ts_ns,
        )
        try:
            await self.emit(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the spool not writable: count it, retry next poll
            self.stats.emit_failures += 1
            log.error(
                "scheduler record not handed to delivery",
                extra={"job": key.decode("utf-8", "replace"), "error": _describe(exc)},
            )
            return False
        return True


def _partitions(record: bytes) -> set[str]:
    m = _PARTITION.search(record)
    if m is None:
        return set()
    return set((m.group(1) or m.group(2)).decode("utf-8", "replace").split(","))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SourceError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"
