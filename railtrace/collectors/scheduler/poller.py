"""The Slurm poller: every `interval_s`, what Slurm says of every job, and one raw message per
job whose placement changed since it was last published.

The tools run with TZ=UTC and SLURM_TIME_FORMAT=standard, so the times scontrol prints
(local time, no zone) are read as what they are whatever the host's zone or the user's
environment. A record is published again only when what it places changes (state, hosts,
GPUs, start, end): a job's RunTime moves on every poll and is no news. A record the reader
refuses is published once per change too, so the worker dead-letters it with the reason; a
pending job (no hosts yet) is counted and published when it starts. A failed poll (the
controller down, munge refusing, a timeout) is counted, logged, and retried with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from railtrace.streams import wire
from railtrace.streams.scheduler import read_placements, split

from ..backoff import next_delay
from ..emit import Emit, Outgoing
from .config import SchedulerCollectorConfig

log = logging.getLogger(__name__)

#: What scontrol prints, exit 0, when it holds no job.
NO_JOBS = b"No jobs in the system"
_JOB_ID = re.compile(rb"JobId=(\S+)")
# A record's partition as scontrol (`Partition=gpu`) or squeue's JSON (`"partition": "gpu"`)
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
    emit_failures: int = 0
    last_error: str | None = None
    down_since: float | None = field(default_factory=time.monotonic)


@dataclass(frozen=True, slots=True)
class Record:
    """One job's record of a poll and what it places (or why it places nothing)."""

    key: bytes
    signature: Any
    data: bytes
    refused: bool


class SlurmPoller:
    """Polls Slurm until cancelled; `stats` says how it went."""

    def __init__(
        self,
        config: SchedulerCollectorConfig,
        emit: Emit,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.emit = emit
        self.stats = PollStats()
        self.source = f"{config.command}:{config.cluster}"
        self._rng = rng or random.Random()
        # What was last published per job key: a job is published again only on a change.
        self._published: dict[bytes, Any] = {}

    def argv(self) -> list[str]:
        tool = self.config.command
        path = str(self.config.bin_dir / tool) if self.config.bin_dir else tool
        if tool == "scontrol":
            return [path, "show", "job", "-d"]
        return [path, "--json", "--states=all"]

    def env(self) -> dict[str, str]:
        env = {**os.environ, "TZ": "UTC", "SLURM_TIME_FORMAT": "standard", "LC_ALL": "C"}
        if self.config.slurm_conf is not None:
            env["SLURM_CONF"] = str(self.config.slurm_conf)
        return env

    async def run(self) -> None:
        log.info("scheduler collector starting", extra={"command": self.argv()})
        failures_in_a_row = 0
        while True:
            ok = await self.poll_once()
            failures_in_a_row = 0 if ok else failures_in_a_row + 1
            c = self.config
            await asyncio.sleep(
                next_delay(c.interval_s, c.backoff_max_s, failures_in_a_row, self._rng)
            )

    async def poll_once(self) -> bool:
        """Run the tool once and publish what changed; False (counted, logged) when Slurm
        could not be read. Never raises but CancelledError."""
        stats = self.stats
        stats.polls += 1
        polled_ns = time.time_ns()
        try:
            output = await self._run_tool()
        except (OSError, TimeoutError, ToolError) as exc:
            stats.failures += 1
            stats.last_error = str(exc) if isinstance(exc, ToolError) else _describe(exc)
            if stats.down_since is None:
                stats.down_since = time.monotonic()
            log.warning(
                "scheduler poll failed", extra={"command": self.argv(), "error": stats.last_error}
            )
            return False
        stats.successes += 1
        stats.down_since = None
        stats.last_error = None
        records, waiting = await asyncio.to_thread(self._records, output)
        stats.jobs_listed = len(records) + waiting
        stats.waiting = waiting
        await self._publish(records, polled_ns)
        return True

    async def _run_tool(self) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env(),
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.config.timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        if proc.returncode != 0:
            said = (err or out).decode("utf-8", "replace").strip().splitlines()
            raise ToolError(
                f"{self.config.command} exited {proc.returncode}: {said[0] if said else ''}"[:300]
            )
        return out

    def _records(self, output: bytes) -> tuple[list[Record], int]:
        """The records of one poll, one per job that places or is refused; and how many jobs
        wait for hosts."""
        if output.strip() in (b"", NO_JOBS):
            return [], 0
        records: list[Record] = []
        waiting = 0
        wanted = set(self.config.partitions)
        for chunk in split(output):
            if wanted and not wanted & _partitions(chunk.data):
                self.stats.other_partitions += 1
                continue
            placed = read_placements(self.source, chunk.data)
            waiting += placed.waiting
            if placed.placements:
                p = placed.placements[0]
                signature: Any = (p.state, p.hosts, p.start_ns, p.end_ns)
                key = p.job_id.encode()
            elif placed.dead_letters:
                signature = tuple(d.reason for d in placed.dead_letters)
                m = _JOB_ID.search(chunk.data)
                key = m.group(1)[:128] if m else self.source.encode()
            else:
                continue
            records.append(Record(key, signature, chunk.data, not placed.placements))
        return records, waiting

    async def _publish(self, records: list[Record], polled_ns: int) -> None:
        stats = self.stats
        seen: set[bytes] = set()
        for r in records:
            seen.add(r.key)
            if self._published.get(r.key) == r.signature:
                stats.unchanged += 1
                continue
            # Published as record 1 of its own: where a job's record falls in the listing
            # moves from poll to poll, and one identity per job and source lets the store keep
            # the job's latest placement.
            out = wire.SchedulerOutput(
                self.source, 1, r.data.decode("utf-8", "replace"), "UTC", polled_ns
            )
            message = Outgoing(
                stream="scheduler",
                key=r.key,
                value=wire.encode_scheduler_output(out),
                state_change=True,
                ts_ns=polled_ns,
            )
            try:
                await self.emit(message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the spool not writable: count it, retry next poll
                stats.emit_failures += 1
                log.error(
                    "scheduler record not handed to delivery",
                    extra={"job": r.key.decode("utf-8", "replace"), "error": _describe(exc)},
                )
                continue
            self._published[r.key] = r.signature
            stats.records += 1
            stats.refused += r.refused
        # A job no longer listed is forgotten: if it comes back (requeued), it is news.
        for key in self._published.keys() - seen:
            del self._published[key]


def _partitions(record: bytes) -> set[str]:
    m = _PARTITION.search(record)
    if m is None:
        return set()
    return set((m.group(1) or m.group(2)).decode("utf-8", "replace").split(","))


class ToolError(RuntimeError):
    """The Slurm tool ran but failed; the message holds its exit code and first line."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"
