"""Attribution on the fabric as cabled: when LLDP shows two of a host's cables swapped at the
leaves, the correlator is handed the fabric with the cables really there."""

from __future__ import annotations

from attribution_support import HOST_A, JOB, T0, S, fabric, feed, job_facts

from railtrace.streams.attribution import Correlator
from railtrace.streams.records import (
    CauseKind,
    CollectiveTimeout,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
)
from railtrace.topology.asbuilt import as_built
from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.fabric import build_fabric
from railtrace.topology.lldp import CablingDifference

NIC0, NIC1 = Endpoint(HOST_A, "mlx5_0"), Endpoint(HOST_A, "mlx5_1")


def _swapped() -> tuple[Endpoint, list[CablingDifference]]:
    """The planned leaf port of HOST_A's mlx5_1, and LLDP seeing mlx5_0 and mlx5_1 swapped."""
    plan = fabric()
    leaf0, leaf1 = (plan.links[plan.link_at[nic]] for nic in (NIC0, NIC1))
    port0 = leaf0.a if leaf0.a != NIC0 else leaf0.b
    port1 = leaf1.a if leaf1.a != NIC1 else leaf1.b
    return (
        port1,
        [
            CablingDifference(port0, CablingKind.MISWIRED, NIC0, NIC1),
            CablingDifference(port1, CablingKind.MISWIRED, NIC1, NIC0),
        ],
    )


def _hang(corr: Correlator, down_at: Endpoint) -> None:
    stall = T0 + 100 * S
    feed(
        corr,
        [
            *job_facts(),
            LinkEvent(stall + S, down_at.device, down_at.interface, LinkEventKind.DOWN),
            CollectiveTimeout(
                stall + 600 * S,
                JOB,
                HOST_A,
                0,
                7,
                "ALLREDUCE",
                600_000,
                600_000,
                stall,
                LogOrigin("train.log", 9),
            ),
        ],
    )


def test_the_cable_really_on_the_failed_port_is_blamed_once_the_fabric_is_as_cabled() -> None:
    port1, differences = _swapped()
    plan = CablePlan([Cable(link.a, link.b) for link in fabric().links.values()])
    built, notes = as_built(plan, differences)
    cabled = build_fabric(built)
    cabled.as_built = notes

    # On the plan, the port that went down carries HOST_A's mlx5_1: not the job's NIC.
    on_plan = Correlator(fabric())
    _hang(on_plan, port1)
    (v,) = on_plan.verdicts()
    assert v.state == JobState.STALLED and v.cause_kind == CauseKind.UNKNOWN

    # As cabled, the job's mlx5_0 is on that port: its cable is blamed, with the plan's note.
    corr = Correlator(fabric())
    _hang(corr, port1)
    corr.use_fabric(cabled)
    (v,) = corr.reevaluate([JOB])
    assert v.cause_link is not None
    assert {v.cause_link.a, v.cause_link.b} == {NIC0, port1}
    assert any(e.kind == "miswired" and "the plan has" in e.detail for e in v.evidence)
