"""The per-job state of the `parse-logs` agent: one LogParser per source file of a job and the
job's clock, snapshotted into the `log-parsers` table; and which raw-logs partition a job's
key falls in, which says whether this worker owns the job.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from aiokafka.partitioner import murmur2

from railtrace.streams import wire
from railtrace.streams.logs import LogParser
from railtrace.streams.logs.sources import SourceHosts
from railtrace.streams.logs.undated import JobClock


class JobParsers:
    """The LogParsers of one job, one per source file, and the job's clock for the lines that
    carry no time (`streams.logs.undated`)."""

    def __init__(
        self,
        named: SourceHosts,
        local: tzinfo,
        parsers: dict[str, LogParser] | None = None,
        clock: JobClock | None = None,
    ) -> None:
        self.named = named
        self.local = local
        self.by_source: dict[str, LogParser] = parsers or {}
        self.clock = clock or JobClock()

    def parser(self, logs: wire.LogBatch) -> LogParser:
        p = self.by_source.get(logs.source)
        if p is None:
            hint = self.named.of(logs.source)
            p = LogParser(logs.job_id, logs.source, logs.year, hint, self.local)
            self.by_source[logs.source] = p
        return p

    def snapshot(self) -> dict[str, Any]:
        return {
            "v": 1,
            "parsers": {s: p.snapshot() for s, p in self.by_source.items()},
            "clock": self.clock.snapshot(),
        }

    @classmethod
    def restore(cls, named: SourceHosts, local: tzinfo, snap: dict[str, Any]) -> JobParsers:
        if snap.get("v") != 1:
            raise ValueError(f"unknown parser-set snapshot version {snap.get('v')!r}")
        parsers = {s: LogParser.restore(p, local) for s, p in snap["parsers"].items()}
        # absent from parser sets saved before undated lines were dated by the job
        clock = JobClock.restore(snap["clock"]) if "clock" in snap else None
        return cls(named, local, parsers, clock)


def partition_of(key: bytes, partitions: int) -> int:
    """The partition the default (murmur2) partitioner gives `key`, as the log shippers and
    the tables use it."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions
