"""The link history a stall is held against: windows, order and pruning, whatever order the
events arrive in."""

from __future__ import annotations

import random

from railtrace.streams.attribution.history import LinkHistory
from railtrace.streams.records import LinkEvent, LinkEventKind
from railtrace.topology.ends import Endpoint

KINDS = [LinkEventKind.ERROR_BURST, LinkEventKind.DOWN, LinkEventKind.PFC_STORM]


def _events(n: int, seed: int) -> list[LinkEvent]:
    rng = random.Random(seed)
    return [
        LinkEvent(
            rng.randrange(0, 50) * 1_000,  # many share a time
            rng.choice(["leaf1", "spine1"]),
            "swp1",
            rng.choice(KINDS),
            series=rng.choice(["", "in", "out"]),
        )
        for _ in range(n)
    ]


def _naive_between(events: list[LinkEvent], lo: int, hi: int) -> list[LinkEvent]:
    return sorted({e for e in events if lo <= e.ts_ns <= hi}, key=lambda e: e.ts_ns)


def test_between_gives_every_event_in_the_window_oldest_first_whatever_the_arrival_order() -> None:
    for seed in range(20):
        events = _events(200, seed)
        history = LinkHistory()
        for e in events:
            history.add("L1", e)
        rng = random.Random(seed)
        for _ in range(50):
            lo = rng.randrange(-5_000, 55_000)
            hi = lo + rng.randrange(0, 20_000)
            got = history.between("L1", lo, hi)
            assert [e.ts_ns for e in got] == sorted(e.ts_ns for e in got)
            assert set(got) == set(_naive_between(events, lo, hi))
            assert len(got) == len(set(got))  # a repeated event is held once


def test_between_is_empty_outside_the_held_span_and_for_links_without_events() -> None:
    history = LinkHistory()
    history.add("L1", LinkEvent(10_000, "leaf1", "swp1", LinkEventKind.DOWN))
    assert history.between("L1", 0, 9_999) == []
    assert history.between("L1", 10_001, 20_000) == []
    assert history.between("L2", 0, 20_000) == []
    assert [e.ts_ns for e in history.between("L1", 10_000, 10_000)] == [10_000]


def test_pruned_events_are_gone_and_the_rest_still_answer_by_window() -> None:
    events = _events(300, 7)
    history = LinkHistory()
    for e in events:
        history.add("L1", e)
    history.prune(25_000)
    assert set(history.between("L1", 0, 60_000)) == set(_naive_between(events, 25_000, 60_000))
    history.add("L1", LinkEvent(1_000, "leaf1", "swp1", LinkEventKind.DOWN))  # arrives late
    assert [e.ts_ns for e in history.between("L1", 0, 24_999)] == [1_000]
    history.prune(10**9)
    assert "L1" not in history.kinds()
    assert history.between("L1", 0, 10**10) == []


def test_rekeyed_events_answer_under_their_new_link() -> None:
    history = LinkHistory()
    moved = LinkEvent(5_000, "leaf1", "swp1", LinkEventKind.DOWN)
    dropped = LinkEvent(6_000, "leaf1", "swp9", LinkEventKind.DOWN)
    history.add("old", moved)
    history.add("old", dropped)
    history.rekey({Endpoint("leaf1", "swp1"): "new"})
    assert history.between("new", 0, 10_000) == [moved]
    assert history.between("old", 0, 10_000) == []
    assert set(history.kinds()) == {"new"}


def test_a_counter_reset_is_never_held_as_evidence() -> None:
    history = LinkHistory()
    version = history.version
    assert not history.add("L1", LinkEvent(1, "leaf1", "swp1", LinkEventKind.COUNTER_RESET))
    assert history.version == version
    assert history.between("L1", 0, 10) == []


def test_the_kinds_a_link_holds_follow_its_events_through_adding_pruning_and_rekeying() -> None:
    history = LinkHistory()
    drop = LinkEvent(1_000, "leaf1", "swp1", LinkEventKind.TRAFFIC_DROP)
    down = LinkEvent(2_000, "leaf1", "swp1", LinkEventKind.DOWN)
    history.add("L1", drop)
    assert history.kinds() == {"L1": {LinkEventKind.TRAFFIC_DROP}}
    history.add("L1", down)
    assert history.kinds()["L1"] == {LinkEventKind.TRAFFIC_DROP, LinkEventKind.DOWN}
    history.prune(1_500)  # the drop goes, the link is down only
    assert history.kinds()["L1"] == {LinkEventKind.DOWN}
    history.rekey({Endpoint("leaf1", "swp1"): "L2"})
    assert history.kinds() == {"L2": {LinkEventKind.DOWN}}
    history.prune(10**9)
    assert history.kinds() == {}
