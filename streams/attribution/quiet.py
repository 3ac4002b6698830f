"""The links of a job holding nothing but consequences of its stall, read only as far as the
verdict needs them.

When a 16k-GPU job stops, each of its tens of thousands of links reports the traffic drop:
evidence that the job stopped, not of why. Such a link scores at most its kinds' weight (0.1 for
a drop), and is listed only to fill the candidates behind the culprit or to set the runner-up.
Scoring every one at each judgement took seconds. So these links are scored in order of that
ceiling, then of name (the verdict's own order for equal scores), and reading stops once no
unread link could enter what the verdict shows: its first candidates, and the candidates within
the tie margin of the best. What is read is scored by `link_score`, as every other link is, so
the verdict is the one that scoring them all would give.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from railtrace.streams.attribution.candidates import CONSEQUENCES, LinkScore, rank_key
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.streams.attribution.scoring import combine, path_factor
from railtrace.streams.records import Candidate, CauseKind, LinkEvent, LinkEventKind

Ranked = LinkScore | Candidate


def quiet_kinds(kinds: frozenset[LinkEventKind]) -> bool:
    """Whether a link holding events of `kinds` holds consequences only."""
    return bool(kinds) and kinds <= CONSEQUENCES


class ByName:
    """Link ids given in name order as far as they are read. A reading usually stops after
    the first few, so those are picked in one pass; the whole is sorted (once) only when a
    reading goes past them."""

    __slots__ = ("_sorted", "lids")
    FIRST = 16

    def __init__(self, lids: Iterable[str]) -> None:
        self.lids = tuple(lids)
        self._sorted: list[str] | None = None

    def __iter__(self) -> Iterator[str]:
        if self._sorted is None:
            first = heapq.nsmallest(self.FIRST, self.lids)
            yield from first
            if len(first) == len(self.lids):
                return
            self._sorted = sorted(self.lids)
            yield from self._sorted[len(first) :]
        else:
            yield from self._sorted


@dataclass(frozen=True, slots=True)
class QuietLinks:
    """A judgement's quiet links: the job's links whose events are all consequences, grouped
    by the kinds they hold; `events_of` gives a link's events in the judgement's window
    (filtered as the other links' are), and `skip` the quiet links read with the others
    because something besides their events scores them (an NCCL error naming the peer
    across them)."""

    groups: tuple[tuple[frozenset[LinkEventKind], ByName], ...]
    events_of: Callable[[str], list[LinkEvent]]
    skip: frozenset[str] = frozenset()

    def lids(self) -> Iterator[str]:
        """Every quiet link not skipped, in no particular order."""
        for _, group in self.groups:
            for lid in group.lids:
                if lid not in self.skip:
                    yield lid


def ceiling(
    kinds: frozenset[LinkEventKind], profile: AttributionProfile, slow: bool, inferred: bool
) -> float:
    """The highest score `link_score` can give a quiet link holding `kinds`: the strongest
    kind at its largest magnitude, at the stall itself, on a link the job surely used.

    Computed with `link_score`'s own operations in its own order, each of which can only
    keep or lower a score as its inputs fall, so no reading of the events can exceed it.
    """
    rules = profile.scoring
    score = combine([max(rules.kind(k, math.inf, slow) for k in kinds)])
    score *= path_factor(1.0)
    if inferred:
        score *= rules.inferred_paths_factor
    return round(score, 4)


def ranked_head(
    known: list[Ranked],
    quiet: QuietLinks | None,
    score: Callable[[str, list[LinkEvent]], LinkScore | None],
    ceil: Callable[[frozenset[LinkEventKind]], float],
    k: int,
    floor: float = math.inf,
) -> list[Ranked]:
    """The candidates in verdict order, as far as a verdict reads them: all of `known` (in
    verdict order already), and of the quiet links those among the first `k` overall and
    those scoring at least `floor`. So the first `k` and every candidate at or above `floor`
    are those of the full ranking."""
    if quiet is None:
        return known
    best = [rank_key(r) for r in known[:k]]  # the first k ranks seen so far
    kept: list[LinkScore] = []  # the quiet links read that were among them, or reach floor
    for kinds, lids in sorted(quiet.groups, key=lambda g: (-ceil(g[0]), sorted(g[0]))):
        top = ceil(kinds)
        for lid in lids:
            if lid in quiet.skip:
                continue
            # Unread links of this group come later in name and score no higher: once the
            # best of them cannot pass the k-th, none can.
            if top < floor and len(best) >= k and (-top, True, CauseKind.LINK, lid) > best[-1]:
                break
            scored = score(lid, quiet.events_of(lid))
            if scored is None:
                continue
            rank = rank_key(scored)
            if len(best) < k or rank < best[-1]:
                bisect.insort(best, rank)
                del best[k:]
                kept.append(scored)
            elif scored.score >= floor:
                kept.append(scored)
    # Those read that fell out of the first k again rank after them, and below floor.
    return sorted([*known, *kept], key=rank_key) if kept else known
