"""What the ranks' PyTorch watchdogs say together: when the hang began, and which ranks were
behind.

Every rank's watchdog prints how far its process group got (`last completed work: N`). A
collective hangs because some rank never reached it: the ranks whose last completed work is
the lowest of their group are the ones the others waited for, and their hosts are where to
look first. Pure functions over the job's WatchdogState facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from railtrace.streams.records import WatchdogState

NS = 1_000_000_000


def stall_of(state: WatchdogState) -> int:
    """When the hang a watchdog line reports began, as far as the line tells: a heartbeat
    abort names how long the watchdog was stuck; any other line dates it no later than
    itself. 0 for an undated line.

    >>> from railtrace.streams.records import LogOrigin
    >>> s = WatchdogState(900 * NS, "j", None, 3, "0", "heartbeat", None, None, None, 600, "",
    ...                   LogOrigin("f", 1))
    >>> stall_of(s) // NS
    300
    """
    if not state.ts_ns:
        return 0
    if state.stuck_s is not None:
        return max(1, state.ts_ns - state.stuck_s * NS)
    return state.ts_ns


@dataclass(frozen=True, slots=True)
class Behind:
    """Ranks of one process group that completed less work than the others that reported."""

    pg: str
    ranks: tuple[int, ...]
    last_completed: int
    #: The most any other rank of the group completed, and how many ranks reported.
    others_completed: int
    reported: int
    #: The latest report the finding rests on.
    ts_ns: int


def ranks_behind(states: Iterable[WatchdogState]) -> list[Behind]:
    """Per process group with at least two ranks reporting different progress, the ranks at
    the lowest last-completed work (each rank's latest word counts: its number only grows).

    >>> from railtrace.streams.records import LogOrigin
    >>> def said(rank, done, line):
    ...     return WatchdogState(line * NS, "j", None, rank, "0", "failure", done + 1, done + 2,
    ...                          done, None, "", LogOrigin("f", line))
    >>> (b,) = ranks_behind([said(0, 7752, 1), said(4, 7752, 2), said(3, 7751, 3)])
    >>> b.pg, b.ranks, b.last_completed, b.others_completed, b.reported
    ('0', (3,), 7751, 7752, 3)
    """
    latest: dict[str, dict[int, tuple[int, int]]] = {}
    for s in states:
        if s.rank is None or s.last_completed is None:
            continue
        ranks = latest.setdefault(s.pg, {})
        done, ts = ranks.get(s.rank, (s.last_completed, s.ts_ns))
        ranks[s.rank] = (max(done, s.last_completed), max(ts, s.ts_ns))
    out = []
    for pg, ranks in sorted(latest.items()):
        lowest = min(done for done, _ in ranks.values())
        highest = max(done for done, _ in ranks.values())
        if len(ranks) < 2 or lowest == highest:
            continue
        behind = tuple(sorted(r for r, (done, _) in ranks.items() if done == lowest))
        ts = max(ts for _, ts in ranks.values())
        out.append(Behind(pg, behind, lowest, highest, len(ranks), ts))
    return out
