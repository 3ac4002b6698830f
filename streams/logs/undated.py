"""Facts whose lines gave no time, and how they are dated rather than placed at the epoch.

A LogParser dates a line without a stamp by the nearest earlier stamped line of its file, or by
the log shipper's stamp on its message; a line before both (a pasted excerpt, `ncclras` output
saved to a file, NCCL INFO lines, which carry no time) comes out undated, with time 0. The
drivers (the embedded replay, the streaming worker) pass every fact of a job through one
`JobClock`, which decides:

- a fact that describes where the job runs (NICs, ranks, channels, init, an env dump's
  placement) did not happen at a moment that matters: it is dated by the first time the job's
  logs showed, in any of its files (held until one shows), and says so in `origin.dated_by`;
- an event (a timeout, an error, an Xid, a RAS report, a step report) is only evidence at its
  time: undated, it is a dead letter with the reason, counted, never a guess.

A job none of whose files ever shows a time keeps its structure facts held: the replay makes
them dead letters at the end (`leftover`); a worker holds them (at most MAX_HELD) until a
time comes. Both see the job's files in the same order, so both date the same way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from railtrace.streams import codec
from railtrace.streams.records import (
    ChannelEdge,
    DeadLetter,
    InitComplete,
    JobFact,
    JobPlacement,
    LogOrigin,
    NetDevices,
    RankInfo,
)

#: Facts that say where a job runs and how its ranks talk: dated by the job's first time.
STRUCTURE = (NetDevices, RankInfo, ChannelEdge, InitComplete, JobPlacement)
#: Structure facts held for a job that has shown no time yet. A worker keeps them in its
#: state, in the job's one changelog record (about 340 bytes each: 700 KB at the cap, under
#: Kafka's 1 MB); NCCL's INFO setup of one 8-GPU host is about 100 of them, so the files of 20
#: hosts without any stamp fit before the job's first stamped line.
MAX_HELD = 2048
SNAPSHOT_VERSION = 1


class JobClock:
    """The first time a job's logs showed, and its structure facts read before it."""

    def __init__(self) -> None:
        #: (time, "<source> line N") of the first fact of the job that had a time.
        self.first: tuple[int, str] | None = None
        self.held: list[JobFact] = []

    def date(self, facts: list[JobFact]) -> tuple[list[JobFact], list[DeadLetter]]:
        """`facts` (in the order they were read) with every undated one dated, held, or turned
        into a dead letter; held facts come out, dated, just before the first timed fact."""
        out: list[JobFact] = []
        dead: list[DeadLetter] = []
        for fact in facts:
            if fact.ts_ns:
                if self.first is None:
                    origin = fact.origin
                    self.first = (fact.ts_ns, f"{origin.source} line {origin.line_no}")
                    out.extend(_at(held, self.first) for held in self.held)
                    self.held = []
                out.append(fact)
            elif not isinstance(fact, STRUCTURE):
                dead.append(
                    _dead(
                        fact,
                        "no time on its line, on any line before it in its file, nor from a "
                        "log shipper: an event is not placed at a guessed time",
                    )
                )
            elif self.first is not None:
                out.append(_at(fact, self.first))
            elif len(self.held) < MAX_HELD:
                self.held.append(fact)
            else:
                dead.append(
                    _dead(fact, f"the job has shown no time yet and {MAX_HELD} facts wait for one")
                )
        return out, dead

    def leftover(self) -> list[DeadLetter]:
        """The held facts as dead letters: the job's logs ended without showing any time."""
        dead = [_dead(f, "no line of the job's logs carried a time") for f in self.held]
        self.held = []
        return dead

    def snapshot(self) -> dict[str, Any]:
        """The clock as plain JSON (held facts as tagged records)."""
        return {
            "v": SNAPSHOT_VERSION,
            "first": None if self.first is None else list(self.first),
            "held": [codec.encode(f) for f in self.held],
        }

    @classmethod
    def restore(cls, snap: dict[str, Any]) -> JobClock:
        """The clock `snapshot` saved; ValueError for another version."""
        if snap.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"unknown JobClock snapshot version {snap.get('v')!r}")
        clock = cls()
        first = snap["first"]
        clock.first = None if first is None else (int(first[0]), str(first[1]))
        clock.held = [codec.decode(raw) for raw in snap["held"]]
        return clock


def _at(fact: JobFact, first: tuple[int, str]) -> JobFact:
    ts, label = first
    o = fact.origin
    return replace(fact, ts_ns=ts, origin=LogOrigin(o.source, o.line_no, label))


def _dead(fact: JobFact, reason: str) -> DeadLetter:
    o = fact.origin
    return DeadLetter(
        source=o.source,
        reason=f"{type(fact).__name__}: {reason}",
        line_no=o.line_no,
        extra={"rule": "untimed", "job_id": fact.job_id},
    )
