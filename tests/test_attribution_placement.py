"""Attribution when NCCL prints no channels (NCCL_DEBUG unset or WARN): the scheduler's
placement alone must put the job's spine hops among the candidates."""

from __future__ import annotations

from pathlib import Path

import orjson
from attribution_support import HOST_A, HOST_B, JOB, ORIGIN, T0, S, fabric, feed, job_facts

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.jobs import JobView
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
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.ends import Endpoint
from railtrace.topology.gpunics import parse_topo_matrix

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


HALF = JobPlacement(
    T0, JOB, "", (PlacedHost(HOST_A, (0, 1, 2, 3), 4), PlacedHost(HOST_B, (0, 1, 2, 3), 4)),
    "slurm", "RUNNING", T0, None, LogOrigin("scheduler/job.txt", 1),
)  # fmt: skip
H100_8NIC = (
    Path(__file__).parent
    / "fixtures"
    / "scheduler"
    / "nvidia-smi-topo-m-h100-8nic-sglang-30401.txt"
)


def _half_node_verdict(nic: str, mapped: bool) -> tuple:
    """A job on GPUs 0-3 of two hosts at NCCL WARN; HOST_A's cable on `nic` goes down."""
    f = build_fabric(rail_optimized(64).plan)
    if mapped:
        f.default_gpu_nics = parse_topo_matrix(H100_8NIC.read_text())
    corr = Correlator(f)
    cable = f.link_at[Endpoint(HOST_A, nic)]
    leaf_end = next(e for e in (f.links[cable].a, f.links[cable].b) if e.device != HOST_A)
    fault = T0 + 100 * S
    feed(
        corr,
        [
            HALF,
            LinkEvent(fault, leaf_end.device, leaf_end.interface, LinkEventKind.DOWN),
            _timeout(fault + 601 * S),
        ],
    )
    (v,) = corr.verdicts()
    return v, cable


def test_a_job_on_half_a_node_is_not_blamed_on_a_rail_of_the_other_half():
    # mlx5_5 is GPU5's NIC: the job holds GPUs 0-3, so its traffic never crosses that cable.
    v, cable = _half_node_verdict("mlx5_5", mapped=True)
    assert v.cause_link is None or v.cause_link.link_id != cable
    assert cable not in {c.link.link_id for c in v.candidates if c.link}
    # Without the GPU-to-NIC map every rail is the job's, and the cable is taken for it.
    unmapped, _ = _half_node_verdict("mlx5_5", mapped=False)
    assert unmapped.cause_link is not None and unmapped.cause_link.link_id == cable


def test_a_job_on_half_a_node_is_blamed_on_a_rail_of_its_own_gpus():
    v, cable = _half_node_verdict("mlx5_2", mapped=True)
    assert v.state == JobState.STALLED and v.cause_link is not None
    assert v.cause_link.link_id == cable


def test_a_restored_view_keeps_the_gpus_of_a_half_node_job():
    """A worker that takes the job over from its table judges it on the same rails."""
    f = build_fabric(rail_optimized(64).plan)
    f.default_gpu_nics = parse_topo_matrix(H100_8NIC.read_text())
    corr = Correlator(f)
    feed(corr, [HALF])
    view = corr.job_view(JOB)
    assert view is not None and view.host_gpus[HOST_A] == (0, 1, 2, 3)
    restored = JobView.restore(orjson.loads(orjson.dumps(view.snapshot())))
    assert restored.host_gpus == view.host_gpus
    other = Correlator(f)
    other.adopt(restored)
    assert other.job_links(JOB) == corr.job_links(JOB)
    # An ended job's record prints no GPU indexes: what the running one printed is kept.
    ended = JobPlacement(
        T0 + 9 * S, JOB, "", (PlacedHost(HOST_A), PlacedHost(HOST_B)), "slurm", "COMPLETED",
        T0, T0 + 9 * S, LogOrigin("scheduler/job.txt", 1),
    )  # fmt: skip
    corr.observe(ended)
    assert corr.job_view(JOB).host_gpus[HOST_A] == (0, 1, 2, 3)  # type: ignore[union-attr]


def test_a_job_known_only_from_its_scheduler_is_unknown_until_its_own_lines_come():
    """A placement says where a job runs, never how it is doing: the scheduler collector
    places every job of a cluster, most of whose logs railtrace may never see."""
    corr = Correlator(fabric())
    (placed,) = corr.observe(PLACED)
    assert placed.state == JobState.UNKNOWN and placed.hosts == 2
    first_line = job_facts()[0]
    changed = corr.observe(first_line)
    assert [(v.state, v.hosts) for v in changed] == [(JobState.HEALTHY, 2)]
    restored = JobView.restore(orjson.loads(orjson.dumps(corr.job_view(JOB).snapshot())))  # type: ignore[union-attr]
    assert restored.heard
