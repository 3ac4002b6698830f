"""Links holding only consequences of a stall (traffic drops, pauses sent) are read lazily, as
far as the verdict needs them: the verdict must be the one scoring every link gives, and a
quiet link must be read again when an anomaly of its own arrives."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from attribution_support import HOST_A, JOB, LEAF, LEAF_PORT, T0, S, fabric, feed, job_facts

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.candidates import Observations
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.attribution.quiet import ByName, QuietLinks, quiet_kinds
from railtrace.streams.attribution.verdicts import build_verdict
from railtrace.streams.records import (
    CollectiveTimeout,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    XidEvent,
)

K = LinkEventKind
STALL = T0 + 1_000 * S
#: The consequences a stalled job's links show, and the anomalies of a link's own.
CONSEQUENCES = [K.TRAFFIC_DROP] * 3 + [K.PFC_PAUSING]
FAULTS = [k for k in K if k not in (K.COUNTER_RESET, K.TRAFFIC_DROP, K.PFC_PAUSING)]


def _events(rng: random.Random, lid: str, faults: float) -> list[LinkEvent]:
    """A link's events, each an anomaly of its own with probability `faults`."""
    link = fabric().links[lid]
    out = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        end = rng.choice((link.a, link.b))
        kind = rng.choice(FAULTS if rng.random() < faults else CONSEQUENCES)
        # Mostly at or just after the stall (equal scores, decided by name), some far off.
        ts = STALL + rng.choice((0, 0, 10 * S, rng.randrange(-400, 100) * S))
        value = rng.choice((0.0, 1.0, 5e3, 4e6, 1e9))
        span = rng.choice((0.0, 10.0, 60.0))
        out.append(LinkEvent(ts, end.device, end.interface, kind, value, "drawn", "", span))
    return sorted(out, key=lambda e: (e.ts_ns, e.kind.value))


def _view(rng: random.Random) -> JobView:
    corr = Correlator(fabric())
    feed(corr, job_facts())
    view = corr.job_view(JOB)
    assert view is not None
    origin = LogOrigin("kern.log", 1)
    for n in range(rng.choice((0, 0, 1, 2))):
        host = rng.choice(sorted(view.hosts))
        xid = rng.choice((79, 48, 13, 45))
        ts = STALL + rng.randrange(-100, 30) * S
        view.add(XidEvent(ts, JOB, host, f"0000:{n:02x}:00.0", xid, "drawn", origin))
    view.add(
        CollectiveTimeout(
            STALL + 600 * S, JOB, HOST_A, 0, 7, "ALLREDUCE", 600_000, 600_000, STALL, origin
        )
    )
    return view


def _profile(rng: random.Random) -> AttributionProfile:
    """The default rules, or ones that blame and tie on consequences alone (so that the tie
    with the best must be read from the quiet links too), with 1 to 6 candidates listed."""
    changes: dict[str, float] = {"max_candidates": rng.randint(1, 6)}
    if rng.random() < 0.5:
        changes |= {"min_blame_score": 0.0, "min_confidence": 0.0, "tie_margin": 0.3}
    judging = DEFAULT_PROFILE.judging.model_copy(update=changes)
    return DEFAULT_PROFILE.model_copy(update={"judging": judging})


def _split(obs: Observations) -> Observations:
    """The same observations with the quiet links held apart, as the correlator hands them:
    those an NCCL error points across are read with the others, and skipped among the quiet."""
    groups: dict[frozenset[LinkEventKind], list[str]] = {}
    for lid, ev in obs.events.items():
        if _quiet(ev):
            groups.setdefault(frozenset(e.kind for e in ev), []).append(lid)
    named = frozenset(lid for lids in groups.values() for lid in lids if lid in obs.corroborated)
    loud = {lid: ev for lid, ev in obs.events.items() if not _quiet(ev) or lid in named}
    quiet = QuietLinks(
        tuple((kinds, ByName(lids)) for kinds, lids in groups.items()),
        lambda lid: obs.events.get(lid, []),
        named,
    )
    return replace(obs, events=loud, quiet=quiet)


def _quiet(events: list[LinkEvent]) -> bool:
    return quiet_kinds(frozenset(e.kind for e in events))


@pytest.mark.parametrize("seed", range(400))
def test_reading_quiet_links_lazily_gives_the_verdict_that_scoring_every_link_gives(
    seed: int,
) -> None:
    rng = random.Random(seed)
    fab = fabric()
    lids = rng.sample(sorted(fab.links), rng.choice((3, 20, 120)))
    # From a fault among many consequences to trouble everywhere.
    faults = rng.choice((0.0, 0.01, 0.05, 0.5))
    events = {lid: _events(rng, lid, faults) for lid in lids}
    weights = {lid: rng.choice((1.0, 1.0, 0.5, 0.125)) for lid in lids}
    corroborated = {lid: STALL for lid in rng.sample(lids, rng.choice((0, 0, 1, 3)))}
    onset = STALL - rng.randrange(1, 120) * S if rng.random() < 0.2 else None
    full = Observations(
        weights, events, corroborated, paths_inferred=rng.random() < 0.3, onset_from_ns=onset
    )
    state = JobState.SLOW if rng.random() < 0.25 else JobState.STALLED
    view, profile = _view(rng), _profile(rng)

    everything = build_verdict(view, full, fab, profile, STALL, None, state)
    lazily = build_verdict(view, _split(full), fab, profile, STALL, None, state)

    assert lazily == everything


def _drop(lid: str, ts: int) -> list[LinkEvent]:
    link = fabric().links[lid]
    return [
        LinkEvent(ts, end.device, end.interface, K.TRAFFIC_DROP, 0.0, "fell", "in_octets", 10.0)
        for end in (link.a, link.b)
        if end.device not in fabric().host_nics
    ]


def test_a_quiet_link_that_goes_down_after_a_judgement_is_read_again_and_blamed() -> None:
    corr = Correlator(fabric())
    feed(corr, job_facts())
    weights = corr.job_links(JOB)
    host_link = next(lid for lid in weights if lid.endswith(f"{LEAF}:{LEAF_PORT}"))
    drops = [e for lid in sorted(weights) for e in _drop(lid, STALL + 5 * S)]
    origin = LogOrigin("a.log", 9)
    timeout = CollectiveTimeout(
        STALL + 600 * S, JOB, HOST_A, 0, 7, "ALLREDUCE", 600_000, 600_000, STALL, origin
    )
    before = feed(corr, [*drops, timeout])[-1]
    assert before.state == JobState.STALLED and before.cause_link is None

    # Arriving late (a slow poller): the cable went down at the stall, and every drop was its
    # consequence.
    after = feed(corr, [LinkEvent(STALL, LEAF, LEAF_PORT, K.DOWN, 0.0, "oper down")])[-1]

    assert after.cause_link is not None and after.cause_link.link_id == host_link


@pytest.mark.parametrize("inferred", [False, True])
def test_behind_a_fault_only_the_quiet_links_the_verdict_lists_are_read(inferred: bool) -> None:
    fab = fabric()
    lids = sorted(fab.links)[:500]
    culprit = lids[250]
    events = {lid: _drop(lid, STALL + 5 * S) for lid in lids}
    events[culprit] = [LinkEvent(STALL, *_switch_end(culprit), K.DOWN, 0.0, "oper down")]
    full = Observations(dict.fromkeys(lids, 1.0), events, {}, paths_inferred=inferred)
    split = _split(full)
    read: list[str] = []

    def counted(lid: str) -> list[LinkEvent]:
        read.append(lid)
        return events[lid]

    assert split.quiet is not None
    lazily = replace(split, quiet=replace(split.quiet, events_of=counted))
    view = _view(random.Random(0))
    verdict = build_verdict(view, lazily, fab, DEFAULT_PROFILE, STALL)

    assert verdict == build_verdict(view, full, fab, DEFAULT_PROFILE, STALL)
    assert verdict.cause_link is not None and verdict.cause_link.link_id == culprit
    # One link to see that traffic fell with the job, then the four listed behind the culprit
    # and the one after them that stops the reading, in each of the verdict's two readings.
    assert len(read) <= 2 * (1 + DEFAULT_PROFILE.judging.max_candidates)


def _switch_end(lid: str) -> tuple[str, str]:
    link = fabric().links[lid]
    end = link.b if link.a.device in fabric().host_nics else link.a
    return end.device, end.interface
