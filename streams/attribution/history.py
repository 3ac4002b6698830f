"""Recent link anomalies by link id: what a job's stall is held against.

Link events are rare next to samples (a few per incident), so every correlator can afford to
see all of them: the embedded replay keeps them here in memory, and a streaming worker keeps
the same data in a table replicated to every worker, so that a job's hang meets the anomalies
of links whose telemetry other partitions normalised.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Protocol

from railtrace.streams.records import LinkEvent, LinkEventKind
from railtrace.topology.ends import Endpoint

#: Link events that are kept in the store and shown on a link's page but never held against a
#: stall: a counter reset says nothing about the link, and a switch whose counters run
#: backwards reports one per sample, which would have every job re-judged for each.
NOT_EVIDENCE = frozenset({LinkEventKind.COUNTER_RESET})
_NO_KINDS: frozenset[LinkEventKind] = frozenset()


def order(e: LinkEvent) -> tuple[int, str, str, str, str, float, str]:
    return (e.ts_ns, e.device, e.interface, e.kind.value, e.series, e.value, e.detail)


class LinkEventSource(Protocol):
    """Read access to link anomalies, whatever holds them."""

    def between(self, link_id: str, lo_ns: int, hi_ns: int) -> list[LinkEvent]:
        """Events on `link_id` with lo_ns <= ts <= hi_ns, oldest first."""
        ...

    @property
    def version(self) -> int:
        """Changes whenever the events change: nothing to re-judge while it stands still."""
        ...

    def kinds(self) -> Mapping[str, frozenset[LinkEventKind]]:
        """The links holding any event, each with the kinds it holds (at any time). A job's
        paths cross hundreds of links and a handful have anomalies, so a judgement asks
        `between` only of these; and when a large job stops, tens of thousands of its links
        hold nothing but the traffic drop, which a judgement reads lazily (see `quiet`)."""
        ...


class LinkHistory:
    """Events per link in time order; `prune` drops what no stall can still reach."""

    def __init__(self) -> None:
        self._events: dict[str, list[LinkEvent]] = {}
        # Each link's event times, beside its events: every judgement asks `between` of each
        # link on the job's paths that holds events, and a bisect of plain ints is several
        # times cheaper than one through a key function.
        self._times: dict[str, list[int]] = {}
        self._kinds: dict[str, frozenset[LinkEventKind]] = {}
        self._version = 0

    @property
    def version(self) -> int:
        return self._version

    def add(self, link_id: str, event: LinkEvent) -> bool:
        """Insert in a total order (time, then the rest of the event), whatever order events
        arrive in; False (and no change) when the same event is already there, or when it is
        no evidence (`NOT_EVIDENCE`)."""
        if event.kind in NOT_EVIDENCE:
            return False
        history = self._events.setdefault(link_id, [])
        i = bisect.bisect_left(history, order(event), key=order)
        if i < len(history) and history[i] == event:
            return False
        history.insert(i, event)
        self._times.setdefault(link_id, []).insert(i, event.ts_ns)
        kinds = self._kinds.get(link_id, _NO_KINDS)
        if event.kind not in kinds:
            self._kinds[link_id] = kinds | {event.kind}
        self._version += 1
        return True

    def rekey(self, link_at: Mapping[Endpoint, str]) -> None:
        """File every event under the link its port is on in `link_at` (a fabric's, changed
        under the history: a miswired cable found); events on ports it lacks are dropped."""
        events = [e for history in self._events.values() for e in history]
        self._events, self._times, self._kinds = {}, {}, {}
        for e in events:
            lid = link_at.get(Endpoint(e.device, e.interface))
            if lid is not None:
                self.add(lid, e)
        self._version += 1

    def between(self, link_id: str, lo_ns: int, hi_ns: int) -> list[LinkEvent]:
        times = self._times.get(link_id)
        if not times or times[0] > hi_ns or times[-1] < lo_ns:
            return []
        i = bisect.bisect_left(times, lo_ns)
        j = bisect.bisect_right(times, hi_ns, lo=i)
        return self._events[link_id][i:j]

    def prune(self, before_ns: int) -> None:
        """Forget events older than `before_ns` (the oldest time any open stall can look at)."""
        for link_id in list(self._events):
            times = self._times[link_id]
            i = bisect.bisect_left(times, before_ns)
            if i == len(times):
                del self._events[link_id], self._times[link_id], self._kinds[link_id]
                self._version += 1
            elif i:
                del self._events[link_id][:i], times[:i]
                self._kinds[link_id] = frozenset(e.kind for e in self._events[link_id])
                self._version += 1

    def kinds(self) -> Mapping[str, frozenset[LinkEventKind]]:
        return self._kinds

    def events(self, link_id: str) -> list[LinkEvent]:
        return list(self._events.get(link_id, ()))
