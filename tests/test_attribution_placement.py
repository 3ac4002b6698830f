"""Attribution when NCCL prints no channels (NCCL_DEBUG unset or WARN): the scheduler's
placement alone must put the job's spine hops among the candidates."""

from __future__ import annotations

from attribution_support import HOST_A, HOST_B, JOB, ORIGIN, T0, S, fabric, feed, job_facts

from railtrace.streams.attribution import Correlator
from railtrace.streams.records import (
    CauseKind,
    CollectiveTimeout,
    JobPlacement,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    PlacedHost,
)

PLACED = JobPlacement(
    T0, JOB, "", (PlacedHost(HOST_A), PlacedHost(HOST_B)), "slurm", "RUNNING", T0, None,
    LogOrigin("scheduler/squeue.json", 1),
)  # fmt: skip


def _timeout(at_ns: int) -> CollectiveTimeout:
    """PyTorch's watchdog line, which WARN-level jobs print too."""
    return CollectiveTimeout(
        at_ns, JOB, HOST_A, 0, 42, "ALLREDUCE", 600_000, 601_000, at_ns - 601 * S, ORIGIN
    )


def _uplink() -> str:
    """A spine uplink of HOST_A's rail-0 leaf: on the job's path only via a spine."""
    f = fabric()
    return sorted(lid for lid in f.links if lid.startswith("leaf-su01-r0:") and "spine" in lid)[0]


def _verdict(facts: list) -> tuple:
    corr = Correlator(fabric())
    uplink = _uplink()
    leaf_end = corr.fabric.links[uplink].a
    fault = T0 + 100 * S
    feed(
        corr,
        [
            *facts,
            LinkEvent(fault, leaf_end.device, leaf_end.interface, LinkEventKind.DOWN),
            _timeout(fault + 601 * S),
        ],
    )
    (v,) = corr.verdicts()
    return v, uplink


def test_a_spine_uplink_is_blamed_from_the_placement_alone():
    v, uplink = _verdict([PLACED])
    assert v.state == JobState.STALLED and v.cause_kind == CauseKind.LINK
    assert v.cause_link is not None and v.cause_link.link_id == uplink


def test_without_a_placement_or_channels_the_spine_uplink_is_not_even_a_candidate():
    v, uplink = _verdict([])
    assert v.cause_link is None
    assert uplink not in {c.link.link_id for c in v.candidates if c.link}


def test_the_placement_alone_blames_with_less_confidence_than_the_channels():
    placed, _ = _verdict([PLACED])
    channels, _ = _verdict(job_facts())
    assert channels.cause_link is not None
    assert placed.cause_link == channels.cause_link
    assert 0.35 < placed.confidence < channels.confidence


def test_a_placement_repeated_changes_nothing():
    corr = Correlator(fabric())
    feed(corr, [PLACED])
    links = corr.job_links(JOB)
    assert corr.observe(PLACED) == []
    assert corr.job_links(JOB) == links and any("spine" in lid for lid in links)
