"""What good log lines give by themselves, and which of their facts an input lost.

A log line may take its time, year, process or host from the lines before it; those fields
are found by reading each good line after two different preludes and are left out of the
comparison. Shared by the logs and the replay checks."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from railtrace.streams.logs import LogParser
from railtrace.streams.records import CollectiveTimeout, JobFact, NetError, RankInfo

from .cases import Case

#: Two different pasts for a log line: another time, year and NCCL process before it. A field
#: of a good line's fact that differs between the two is taken from context, not from the line.
#: NCCL-prefixed, so they touch the clock and the current process but no multi-line record.
PRELUDES = (
    b"2001-02-03T04:05:06.000000Z probe-a:111:111 [0] NCCL INFO fuzz probe\n",
    b"2011-08-13T14:15:16.000000Z probe-b:222:222 [1] NCCL INFO fuzz probe\n",
)
ONCE_KEYS: dict[type, tuple[str, ...]] = {
    RankInfo: ("host", "pid", "comm_id", "rank"),
    CollectiveTimeout: ("rank", "seq", "op"),
    NetError: ("kind", "peer", "ts_ns", "host", "pid"),
}


def _fields(fact: Any) -> dict[str, Any]:
    return {f.name: getattr(fact, f.name) for f in dataclasses.fields(fact) if f.name != "origin"}


@dataclass
class Expected:
    """What a window of good lines gives alone: per line, its facts and the fields to ignore."""

    facts: list[list[dict[str, Any]]]
    types: list[list[type]]
    context: list[set[str]]
    boundaries: list[bool]  # after line i, no multi-line record is open


def expect_lines(job: str, source: str, year: int, lines: Sequence[bytes]) -> Expected:
    """`_expect_lines`, remembered: inputs share their good windows."""
    return _expect_lines(job, source, year, tuple(lines))


@functools.lru_cache(maxsize=20_000)
def _expect_lines(job: str, source: str, year: int, lines: tuple[bytes, ...]) -> Expected:
    """Read the good lines alone; for each, also read it after each of two preludes put right
    before it (the parser restored to its state there), so that the fields a line takes from
    the lines before it (time, year, NCCL process) are known."""
    parser = LogParser(job, source, year_hint=year)
    facts: list[list[dict[str, Any]]] = []
    types: list[list[type]] = []
    boundaries: list[bool] = []
    context: list[set[str]] = []
    before = parser.snapshot()
    for line in lines:
        out = parser.feed(line)
        facts.append([_fields(f) for f in out])
        types.append([type(f) for f in out])
        snap = parser.snapshot()
        boundaries.append(
            not snap["torch"]["awaiting_last_error"] and snap["ras"]["section"] is None
        )
        drop: set[str] = set()
        if not out:
            context.append(drop)
            before = snap
            continue
        probes = []
        for prelude in PRELUDES:
            probe = LogParser.restore(before)
            probe.feed(prelude)
            probes.append(probe.feed(line))
        before = snap
        a, b = probes
        if len(a) != len(b) or len(a) != len(out):
            drop = {"ts_ns", "started_ns", "host", "pid"}
        for fa, fb in zip(a, b, strict=False):
            da, db = _fields(fa), _fields(fb)
            drop |= {k for k in da if da[k] != db.get(k)}
        context.append(drop)
    return Expected(facts, types, context, boundaries)


def compare_line(
    want: list[dict[str, Any]],
    types: list[type],
    drop: set[str],
    got: list[JobFact],
    earlier: list[JobFact],
) -> tuple[list[str], int]:
    """The facts of one good line missing from `got` (what the line gave among garbage), and
    how many of them an earlier line already reported where the parser reports once."""
    lost: list[str] = []
    superseded = 0
    pool = [(type(f), {k: v for k, v in _fields(f).items() if k not in drop}) for f in got]
    for kind, fields in zip(types, want, strict=True):
        projected = {k: v for k, v in fields.items() if k not in drop}
        if (kind, projected) in pool:
            pool.remove((kind, projected))
            continue
        once = ONCE_KEYS.get(kind)
        if once is not None:
            key = {k: projected[k] for k in once if k in projected}
            if any(
                type(f) is kind and all(getattr(f, k) == v for k, v in key.items()) for f in earlier
            ):
                superseded += 1
                continue
        lost.append(f"{kind.__name__} | {projected}")
    return lost, superseded


def year_of(case: Case) -> int:
    return int(case.ctx.get("year", 2026))
