"""A transport error counts against a link only when it points at the wire: fabric-side
completion statuses and events do, host-side ones never, a flush only beside a fabric-side
error of the same pair; and on RoCE the GIDs name the NICs where the peer address cannot.
The errors are parsed from real NCCL lines, then placed on the two-node test job."""

from __future__ import annotations

from dataclasses import replace

import pytest
from attribution_support import HOST_A, HOST_B, JOB, ORIGIN, T0, S, feed, job_facts
from logs_support import of_type, parse_text, real_lines

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.corroboration import corroborated, local_nic, remote_nic
from railtrace.streams.attribution.evidence import net_error
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.records import (
    CauseKind,
    ChannelEdge,
    CollectiveTimeout,
    LinkEvent,
    LinkEventKind,
    NetError,
)
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import PathFinder

FAULT = T0 + 100 * S
RETRY_EXCEEDED = ("nccl_1814_ibext_init_channels_completion.log", 10)  # status=12, 172.36.143.59
FLUSH_AFTER_IT = ("nccl_1814_ibext_init_channels_completion.log", 15)  # status=5, same pair
LOCAL_PROTECTION = ("nccl_tests_252_cumem_completion_error4.log", 2)  # error 4, 10.0.35.1
FLUSH_ALONE = ("nccl_1737_flush_error5_without_direction.log", 0)  # error 5, 10.1.32.3
ROCE_WITH_GIDS = ("nccl_1698_status12_hca_gids.log", 0)  # peer 192.168.3.5, GIDs .6.3 / .6.5
PEERS = ("172.36.143.59", "10.0.35.1", "10.1.32.3")


def _error(where: tuple[str, int], at_ns: int = FAULT + 20 * S) -> NetError:
    """The NetError of a real line, as if HOST_A's rank 0 had printed it at `at_ns`."""
    facts, _ = parse_text(real_lines(where[0])[where[1]].decode())
    (err,) = of_type(facts, NetError)
    return replace(err, ts_ns=at_ns, job_id=JOB, host=HOST_A, pid=100)


def _fabric(addresses: dict[str, Endpoint] | None = None) -> Fabric:
    """The reference fabric with every real line's peer address on HOST_B's rail-0 NIC."""
    fabric = build_fabric(rail_optimized(64).plan)
    fabric.address_of = addresses or dict.fromkeys(PEERS, Endpoint(HOST_B, "mlx5_0"))
    return fabric


def _rail1() -> list[ChannelEdge]:
    return [
        ChannelEdge(T0, JOB, HOST_A, 100, "c1", 1, 0, 1, "send", "NET", 1, ORIGIN),
        ChannelEdge(T0, JOB, HOST_B, 200, "c1", 1, 0, 1, "receive", "NET", 1, ORIGIN),
    ]


def _verdict_with(err: NetError | None):
    """Two flows (rail 0 and rail 1) between the hosts; HOST_A's rail-1 cable and HOST_B's
    rail-0 cable show the same error burst at the fault. Alone they tie; an error naming the
    peer on rail 0 is what can tell them apart."""
    fabric = _fabric()
    corr = Correlator(fabric)
    feed(corr, [*job_facts(), *_rail1()])
    a_rail1 = fabric.link_at[Endpoint(HOST_A, "mlx5_1")]
    b_rail0 = fabric.link_at[Endpoint(HOST_B, "mlx5_0")]
    bursts = [
        LinkEvent(FAULT, fabric.links[lid].b.device, fabric.links[lid].b.interface,
                  LinkEventKind.ERROR_BURST, 1.0)
        for lid in (a_rail1, b_rail0)
    ]  # fmt: skip
    watchdog = CollectiveTimeout(
        FAULT + 600 * S, JOB, HOST_A, 0, 42, "ALLREDUCE", 600_000, 600_000, FAULT, ORIGIN
    )
    feed(corr, [*bursts, *([err] if err else []), watchdog])
    (v,) = corr.verdicts()
    return v, a_rail1, b_rail0


def test_two_equal_bursts_tie_without_an_error() -> None:
    v, a_rail1, b_rail0 = _verdict_with(None)
    assert set(v.tied) == {a_rail1, b_rail0}


def test_a_fabric_side_error_naming_the_peer_tips_the_tie_to_its_link() -> None:
    v, _, b_rail0 = _verdict_with(_error(RETRY_EXCEEDED))
    assert v.cause_kind == CauseKind.LINK and v.cause_link is not None
    assert (v.cause_link.link_id, v.tied) == (b_rail0, ())
    assert any(e.kind == "peer-error" for e in v.candidates[0].evidence)


@pytest.mark.parametrize("where", [LOCAL_PROTECTION, FLUSH_ALONE], ids=["status-4", "flush-5"])
def test_a_host_side_error_or_a_lone_flush_does_not_tip_the_tie(where: tuple[str, int]) -> None:
    """Before sides were read, either error named the peer across HOST_B's rail-0 cable and
    blamed it; a local protection error is the host's own, a flush says only that something
    failed first."""
    v, a_rail1, b_rail0 = _verdict_with(_error(where))
    assert set(v.tied) == {a_rail1, b_rail0}
    assert not any(e.kind == "peer-error" for c in v.candidates for e in c.evidence)
    assert v.stalled_at_ns == FAULT  # it still dates the stall: the job did fail


def test_a_flush_counts_beside_a_fabric_side_error_of_the_same_pair() -> None:
    fabric = _fabric()
    view = JobView(JOB)
    for fact in job_facts():
        view.add(fact)
    flows, paths = view.flows(fabric), PathFinder(fabric)
    flush = _error(FLUSH_AFTER_IT, FAULT + 10 * S)
    retry = _error(RETRY_EXCEEDED, FAULT + 20 * S)
    b_rail0 = fabric.link_at[Endpoint(HOST_B, "mlx5_0")]
    assert corroborated([flush], flows, fabric, paths) == {}
    assert corroborated([flush, retry], flows, fabric, paths)[b_rail0] == flush.ts_ns


def test_roce_gids_name_both_nics_when_the_peer_address_is_the_bootstrap_one() -> None:
    """The line names peer 192.168.3.5, which hosts.csv does not hold (NCCL's bootstrap
    socket); its GIDs are the NICs' RoCE v2 addresses, which it does."""
    fabric = _fabric(
        {"192.168.6.3": Endpoint(HOST_A, "mlx5_1"), "192.168.6.5": Endpoint(HOST_B, "mlx5_1")}
    )
    err = _error(ROCE_WITH_GIDS)
    assert (local_nic(err, fabric), remote_nic(err, fabric)) == (
        Endpoint(HOST_A, "mlx5_1"),
        Endpoint(HOST_B, "mlx5_1"),
    )
    view = JobView(JOB)
    for fact in [*job_facts(), *_rail1()]:
        view.add(fact)
    links = corroborated([err], view.flows(fabric), fabric, PathFinder(fabric))
    assert fabric.link_at[Endpoint(HOST_A, "mlx5_1")] in links
    assert fabric.link_at[Endpoint(HOST_B, "mlx5_1")] in links
    assert fabric.link_at[Endpoint(HOST_A, "mlx5_0")] not in links  # the other rail's flow
    assert "NIC hgx-su01-32:mlx5_1" in net_error(err, fabric).detail


def test_a_gid_nothing_maps_names_no_nic_and_stays_on_the_record() -> None:
    fabric = _fabric({})
    err = _error(ROCE_WITH_GIDS)
    assert (local_nic(err, fabric), remote_nic(err, fabric)) == (None, None)
    assert err.completion is not None and err.completion.local_gid == "::ffff:192.168.6.3"
    assert corroborated([err], set(), fabric, PathFinder(fabric)) == {}
    assert "localGid ::ffff:192.168.6.3 maps to no NIC" in net_error(err, fabric).detail


def test_a_fabric_side_port_error_on_a_named_hca_points_at_its_own_cable() -> None:
    # SYNTHETIC: NCCL 2.20+'s `NET/IB : mlx5_0:1 Got async event : port error`.
    facts, _ = parse_text(
        f"{HOST_A}:100:101 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async "
        "event : port error"
    )
    (err,) = of_type(facts, NetError)
    fabric = _fabric()
    links = corroborated([err], set(), fabric, PathFinder(fabric))
    assert links == {fabric.link_at[Endpoint(HOST_A, "mlx5_0")]: err.ts_ns}
