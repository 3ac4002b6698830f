"""Attribution on hand-made records: what it blames, what it refuses to blame, and when."""

from __future__ import annotations

import dataclasses

import pytest

from railtrace.streams.attribution import Correlator
from railtrace.streams.records import (
    CauseKind,
    ChannelEdge,
    CollectiveTimeout,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    NetDevice,
    NetDevices,
    NetError,
    RankInfo,
    XidEvent,
)
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.ends import Endpoint

S = 1_000_000_000
T0 = 1_780_000_000 * S
ORIGIN = LogOrigin("test.log", 1)
JOB = "job1"
# Two nodes in different scalable units, so their rail-0 hop crosses a spine.
HOST_A, HOST_B = "hgx-su01-32", "hgx-su02-01"


@pytest.fixture(scope="module")
def design():
    return rail_optimized(64)


def _fabric(design):
    fabric = build_fabric(design.plan)
    fabric.address_of.update(
        {"10.0.0.1": Endpoint(HOST_A, "mlx5_0"), "10.0.0.2": Endpoint(HOST_B, "mlx5_0")}
    )
    return fabric


def _job_facts(both_ends: bool = True) -> list:
    devs = tuple(NetDevice(i, f"mlx5_{i}", 1, "RoCE") for i in range(8))
    facts = [
        NetDevices(T0, JOB, HOST_A, 100, devs, ORIGIN),
        NetDevices(T0, JOB, HOST_B, 200, devs, ORIGIN),
        RankInfo(T0, JOB, HOST_A, 100, "c1", 0, 2, 0, None, ORIGIN),
        RankInfo(T0, JOB, HOST_B, 200, "c1", 1, 2, 0, None, ORIGIN),
        ChannelEdge(T0, JOB, HOST_A, 100, "c1", 0, 0, 1, "send", "NET", 0, ORIGIN),
    ]
    if both_ends:
        facts.append(ChannelEdge(T0, JOB, HOST_B, 200, "c1", 0, 0, 1, "receive", "NET", 0, ORIGIN))
    return facts


def _timeout(at_ns: int, ran_for_s: int = 600) -> CollectiveTimeout:
    return CollectiveTimeout(
        at_ns,
        JOB,
        HOST_A,
        0,
        42,
        "ALLREDUCE",
        600_000,
        ran_for_s * 1000,
        at_ns - ran_for_s * S,
        ORIGIN,
    )


def _feed(corr: Correlator, records: list) -> list:
    out = []
    for r in sorted(records, key=lambda r: r.ts_ns):
        out.extend(corr.observe(r))
    return out


def _uplink_of(corr: Correlator) -> str:
    weights = corr.job_links(JOB)
    return sorted(lid for lid in weights if "spine" in lid and lid.startswith("leaf-su01-r0"))[0]


def test_host_cable_down_before_the_stall_is_blamed_with_its_two_ends(design):
    corr = Correlator(_fabric(design))
    fault = T0 + 100 * S
    _feed(
        corr,
        [
            *_job_facts(),
            LinkEvent(fault, "leaf-su01-r0", "swp32", LinkEventKind.DOWN),
            _timeout(fault + 600 * S, ran_for_s=600),
        ],
    )
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED and v.cause_kind == CauseKind.LINK
    assert v.cause_link is not None
    assert {v.cause_link.a, v.cause_link.b} == {
        Endpoint(HOST_A, "mlx5_0"),
        Endpoint("leaf-su01-r0", "swp32"),
    }
    assert v.confidence > 0.5


def test_spine_uplink_down_is_blamed_though_ecmp_made_it_one_of_32(design):
    corr = Correlator(_fabric(design))
    _feed(corr, _job_facts())
    uplink = _uplink_of(corr)
    leaf_end = corr.fabric.links[uplink].a
    fault = T0 + 100 * S
    _feed(
        corr,
        [
            LinkEvent(fault, leaf_end.device, leaf_end.interface, LinkEventKind.DOWN),
            _timeout(fault + 601 * S, ran_for_s=601),
        ],
    )
    (v,) = corr.verdicts()
    assert v.cause_link is not None and v.cause_link.link_id == uplink


def _uplink_down_while_the_job_stops(design, uplink_lost_traffic: bool):
    """The job stops (its host cable's traffic drops, the watchdog fires) as one of the 32
    spine uplinks it might hash onto goes down; the uplink's own traffic drops or not."""
    corr = Correlator(_fabric(design))
    _feed(corr, _job_facts())
    uplink = _uplink_of(corr)
    leaf_end = corr.fabric.links[uplink].a
    stall = T0 + 100 * S
    events = [
        LinkEvent(stall + S, "leaf-su01-r0", "swp32", LinkEventKind.TRAFFIC_DROP, 0.0),
        LinkEvent(stall + S, leaf_end.device, leaf_end.interface, LinkEventKind.DOWN),
        _timeout(stall + 601 * S, ran_for_s=601),
    ]
    if uplink_lost_traffic:
        events.append(
            LinkEvent(stall + S, leaf_end.device, leaf_end.interface, LinkEventKind.TRAFFIC_DROP)
        )
    _feed(corr, events)
    (v,) = corr.verdicts()
    return v, uplink


def test_a_spine_uplink_that_lost_no_traffic_as_the_job_stopped_is_not_blamed(design):
    v, uplink = _uplink_down_while_the_job_stops(design, uplink_lost_traffic=False)
    assert v.state == JobState.STALLED
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None, v
    assert uplink in {c.link.link_id for c in v.candidates if c.link}, "kept as a candidate"


def test_a_spine_uplink_that_lost_its_traffic_with_the_job_is_blamed(design):
    v, uplink = _uplink_down_while_the_job_stops(design, uplink_lost_traffic=True)
    assert v.cause_link is not None and v.cause_link.link_id == uplink
    assert v.confidence > 0.5


def test_anomaly_on_a_link_the_job_does_not_use_is_not_blamed(design):
    corr = Correlator(_fabric(design))
    fault = T0 + 100 * S
    # hgx-su01-05's cable: not on the job's path.
    _feed(
        corr,
        [
            *_job_facts(),
            LinkEvent(fault, "leaf-su01-r0", "swp5", LinkEventKind.DOWN),
            _timeout(fault + 600 * S),
        ],
    )
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None
    assert v.candidates == ()


def test_job_that_did_not_stall_is_healthy_even_if_its_link_flapped(design):
    corr = Correlator(_fabric(design))
    _feed(corr, [*_job_facts(), LinkEvent(T0 + 5 * S, "leaf-su01-r0", "swp32", LinkEventKind.FLAP)])
    (v,) = corr.verdicts()
    assert v.state == JobState.HEALTHY and v.cause_kind == CauseKind.UNKNOWN
    assert v.ranks == 2 and v.hosts == 2


def test_anomaly_long_before_the_stall_is_outside_the_window(design):
    corr = Correlator(_fabric(design))
    _feed(
        corr,
        [
            *_job_facts(),
            LinkEvent(T0 + 1 * S, "leaf-su01-r0", "swp32", LinkEventKind.DOWN),
            _timeout(T0 + 2000 * S, ran_for_s=600),
        ],
    )
    (v,) = corr.verdicts()
    assert v.cause_kind == CauseKind.UNKNOWN


def test_gpu_off_the_bus_blames_the_node_not_its_links(design):
    corr = Correlator(_fabric(design))
    fault = T0 + 100 * S
    _feed(
        corr,
        [
            *_job_facts(),
            XidEvent(fault, JOB, HOST_B, "0000:18:00", 79, "GPU has fallen off the bus.", ORIGIN),
            LinkEvent(fault + 3 * S, "leaf-su02-r0", "swp1", LinkEventKind.TRAFFIC_DROP),
            _timeout(fault + 600 * S),
        ],
    )
    (v,) = corr.verdicts()
    assert v.cause_kind == CauseKind.NODE and v.cause_node == HOST_B
    assert v.confidence > 0.5


def test_verdict_is_decided_at_the_event_that_completed_it_and_never_earlier(design):
    corr = Correlator(_fabric(design))
    fault = T0 + 100 * S
    err_at = fault + 25 * S
    updates = _feed(
        corr,
        [
            *_job_facts(),
            LinkEvent(fault, "leaf-su01-r0", "swp32", LinkEventKind.DOWN),
            NetError(err_at, JOB, HOST_A, 100, "ib-completion", "10.0.0.2", "status=12", ORIGIN),
            _timeout(fault + 600 * S),
        ],
    )
    blamed = [u for u in updates if u.cause_kind == CauseKind.LINK]
    assert blamed, updates
    assert blamed[0].decided_at_ns == err_at
    (final,) = corr.verdicts()
    assert final.decided_at_ns == err_at  # the watchdog refined the stall time, not the answer
    assert final.stalled_at_ns == fault - 0  # the watchdog dates the stall to the collective start


def test_net_error_naming_the_peer_breaks_a_tie_between_two_down_links(design):
    corr = Correlator(_fabric(design))
    fault = T0 + 100 * S
    _feed(corr, _job_facts())
    uplink = _uplink_of(corr)
    leaf_end = corr.fabric.links[uplink].a
    _feed(
        corr,
        [
            LinkEvent(fault, leaf_end.device, leaf_end.interface, LinkEventKind.DOWN),
            LinkEvent(fault, "leaf-su02-r0", "swp1", LinkEventKind.DOWN),
            NetError(
                fault + 20 * S, JOB, HOST_A, 100, "ib-completion", "10.0.0.2", "status=12", ORIGIN
            ),
        ],
    )
    (v,) = corr.verdicts()
    assert v.cause_link is not None
    assert Endpoint(HOST_B, "mlx5_0") in (v.cause_link.a, v.cause_link.b)


def test_of_two_links_at_full_score_the_one_an_nccl_error_points_at_comes_first(design):
    """Both cables carry the job and went down together: both score 1, so the confidence
    says it is a coin toss, but NCCL's error names the peer across only one of them."""
    corr = Correlator(_fabric(design))
    fault = T0 + 100 * S
    rail1 = [
        ChannelEdge(T0, JOB, HOST_A, 100, "c1", 1, 0, 1, "send", "NET", 1, ORIGIN),
        ChannelEdge(T0, JOB, HOST_B, 200, "c1", 1, 0, 1, "receive", "NET", 1, ORIGIN),
    ]
    _feed(corr, [*_job_facts(), *rail1])
    a_rail1 = corr.fabric.link_at[Endpoint(HOST_A, "mlx5_1")]
    b_rail0 = corr.fabric.link_at[Endpoint(HOST_B, "mlx5_0")]
    assert a_rail1 < b_rail0  # by name alone the uncorroborated one would come first
    ends = {lid: corr.fabric.links[lid].b for lid in (a_rail1, b_rail0)}
    _feed(
        corr,
        [
            *(LinkEvent(fault, e.device, e.interface, LinkEventKind.DOWN) for e in ends.values()),
            NetError(
                fault + 20 * S, JOB, HOST_A, 100, "ib-completion", "10.0.0.2", "status=12", ORIGIN
            ),
            _timeout(fault + 600 * S),  # the hung collective started as the links went down
        ],
    )
    (v,) = corr.verdicts()
    top = [(c.link.link_id, c.score) for c in v.candidates[:2] if c.link is not None]
    assert top == [(b_rail0, 1.0), (a_rail1, 1.0)]
    assert v.confidence == 0.5


def test_peer_nic_is_inferred_on_the_same_rail_when_only_one_end_logged(design):
    corr = Correlator(_fabric(design))
    _feed(corr, _job_facts(both_ends=False))
    weights = corr.job_links(JOB)
    assert weights["hgx-su02-01:mlx5_0--leaf-su02-r0:swp1"] == 1.0


def test_unknown_interfaces_are_counted_not_fatal(design):
    corr = Correlator(_fabric(design))
    assert corr.observe(LinkEvent(T0, "leaf-su01-r0", "swp999", LinkEventKind.DOWN)) == []
    assert corr.stats.unknown_interfaces == 1


def test_hang_evidence_arriving_out_of_order_gives_the_verdict_time_order_gives(design):
    """Every rank's watchdog gives up at the same second; the verdict shows the first few by
    file. A streaming worker reads the ranks' files from different partitions, so they come in
    any order: a line that sorts among the shown ones must re-judge the job when it arrives,
    not only when a timer happens to (the streamed nic-down verdict once kept other lines)."""
    fault = T0 + 100 * S
    down = LinkEvent(fault, "leaf-su01-r0", "swp32", LinkEventKind.DOWN)
    timeouts = [
        CollectiveTimeout(
            fault + 600 * S,
            JOB,
            HOST_A if rank % 2 == 0 else HOST_B,
            rank,
            42,
            "ALLREDUCE",
            600_000,
            600_000,
            fault,
            LogOrigin(f"rank{rank}.log", 7),
        )
        for rank in range(6)
    ]
    in_order, streamed = Correlator(_fabric(design)), Correlator(_fabric(design))
    _feed(in_order, [*_job_facts(), down, *timeouts])
    _feed(streamed, [*_job_facts(), down])
    for t in reversed(timeouts):  # rank5.log first: no sorting, no timer
        streamed.observe(t)
    (want,), (got,) = in_order.verdicts(), streamed.verdicts()
    assert [e.subject for e in got.evidence] == [e.subject for e in want.evidence]
    assert got == want


def test_a_batch_of_a_stalled_jobs_lines_is_judged_once_with_the_verdict_of_one_by_one(design):
    """A streaming worker folds a batch's facts and judges each job once after it. Its batches
    come file by file: the ranks whose files come after the first watchdog line bring their
    channel lines to a job already stalled, each a change of paths, and judging after each
    held the worker's event loop past its consumer session (the streamed pfc-storm test, 38 s
    in one batch). Judged once, the verdict is the one record-by-record observation reaches."""
    fault = T0 + 100 * S
    down = LinkEvent(fault, "leaf-su01-r0", "swp32", LinkEventKind.DOWN)
    late = fault + 600 * S
    later_ranks = [
        ChannelEdge(late, JOB, host, pid, "c1", channel, rank, 1 - rank, way, "NET", 0, ORIGIN)
        for channel in range(1, 32)
        for host, pid, rank, way in ((HOST_A, 100, 0, "send"), (HOST_B, 200, 1, "receive"))
    ]
    stalled = [*_job_facts(), down, _timeout(late, ran_for_s=600)]
    one_by_one, batched = Correlator(_fabric(design)), Correlator(_fabric(design))
    _feed(one_by_one, stalled)
    _feed(batched, stalled)
    for fact in later_ranks:
        one_by_one.observe(fact)
    before = batched.stats.evaluations
    for fact in later_ranks:
        batched.fold(fact)
    assert batched.stats.evaluations == before, "folding judged"
    batched.judge_pending()
    assert batched.stats.evaluations == before + 1
    assert batched.judge_pending() == []
    assert one_by_one.stats.evaluations > before + len(later_ranks) // 2
    (got,), (want,) = batched.verdicts(), one_by_one.verdicts()
    assert got == want
    assert got.state == JobState.STALLED and got.cause_kind == CauseKind.LINK


def test_counter_resets_however_many_are_no_evidence(design):
    """A switch whose counters run backwards reports resets on every port the job uses: a
    reset says nothing about a link, and hundreds of them must not name one."""
    corr = Correlator(_fabric(design))
    stall = T0 + 400 * S
    uplink = None
    records = [*_job_facts()]
    _feed(corr, records)
    uplink = _uplink_of(corr)
    leaf, port = uplink.split("--")[0].split(":")
    resets = [
        LinkEvent(T0 + t * S, leaf, port, LinkEventKind.COUNTER_RESET, 0.0, "reset", f"c{n}")
        for t in range(100, 460, 10)
        for n in range(6)
    ]
    _feed(corr, [*resets, _timeout(stall + 600 * S, ran_for_s=600)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.cause_kind == CauseKind.UNKNOWN and v.candidates == ()


def test_many_faint_repeats_of_one_anomaly_do_not_add_up_to_a_blame(design):
    """Error bursts long before the stall each score little after the time fade; combined as
    independent evidence, forty of them made a blame out of what one of them could not."""
    corr = Correlator(_fabric(design))
    _feed(corr, _job_facts())
    uplink = _uplink_of(corr)
    leaf, port = uplink.split("--")[0].split(":")
    stall = T0 + 1000 * S
    bursts = [
        LinkEvent(
            stall - (290 - i) * S,
            leaf,
            port,
            LinkEventKind.ERROR_BURST,
            1.0,
            "in_errors at 1/s",
            f"in_errors[{i}]",
        )
        for i in range(40)
    ]
    _feed(corr, [*bursts, _timeout(stall + 600 * S, ran_for_s=600)])
    (v,) = corr.verdicts()
    one = Correlator(_fabric(design))
    _feed(one, [*_job_facts(), bursts[-1], _timeout(stall + 600 * S, ran_for_s=600)])
    (alone,) = one.verdicts()
    assert v.cause_kind == alone.cause_kind == CauseKind.UNKNOWN
    assert [c.score for c in v.candidates] == [c.score for c in alone.candidates]


@pytest.mark.parametrize(("span_s", "blamed"), [(60.0, True), (0.0, False)])
def test_a_burst_stamped_after_the_stall_counts_from_the_start_of_its_sample(
    design, span_s, blamed
):
    # A 60 s sample stamped 48 s after the stall covers the 12 s before it: the errors that
    # stopped the job may be in it. Read as an instant 48 s late, it is mostly a consequence.
    corr = Correlator(_fabric(design))
    stall = T0 + 100 * S
    burst = LinkEvent(
        stall + 48 * S,
        "leaf-su01-r0",
        "swp32",
        LinkEventKind.ERROR_BURST,
        500.0,
        "in_errors at 500/s",
        "in_errors",
        span_s,
    )
    _feed(corr, [*_job_facts(), burst, _timeout(stall + 600 * S, ran_for_s=600)])
    (v,) = corr.verdicts()
    assert (v.cause_kind == CauseKind.LINK) is blamed
    if blamed:
        assert v.cause_link is not None
        assert Endpoint("leaf-su01-r0", "swp32") in {v.cause_link.a, v.cause_link.b}


def _warn_level_uplink_down(design, uplink_leaf: str, host_drop: bool = True) -> tuple:
    """A job logged at NCCL_DEBUG=WARN (no channels) stops as a spine uplink of
    `uplink_leaf` goes down. The uplink is shared with other jobs, so it shows no traffic drop
    of its own; the host cable of the job's rank does. Then NCCL on host A names host B's
    rail-0 address in a transport error."""
    corr = Correlator(_fabric(design))
    devs = tuple(NetDevice(i, f"mlx5_{i}", 1, "RoCE") for i in range(8))
    _feed(
        corr,
        [
            NetDevices(T0, JOB, HOST_A, 100, devs, ORIGIN),
            NetDevices(T0, JOB, HOST_B, 200, devs, ORIGIN),
            RankInfo(T0, JOB, HOST_A, 100, "c1", 0, 2, 0, None, ORIGIN),
            RankInfo(T0, JOB, HOST_B, 200, "c1", 1, 2, 0, None, ORIGIN),
        ],
    )
    uplink = sorted(
        lid for lid in corr.job_links(JOB) if lid.startswith(f"{uplink_leaf}:") and "spine" in lid
    )[0]
    leaf_end = corr.fabric.links[uplink].a
    stall = T0 + 100 * S
    events = [
        LinkEvent(stall, leaf_end.device, leaf_end.interface, LinkEventKind.DOWN),
        NetError(
            stall + 20 * S, JOB, HOST_A, 100, "ib-completion", "10.0.0.2", "status=12", ORIGIN
        ),
        _timeout(stall + 601 * S, ran_for_s=601),
    ]
    if host_drop:
        events.append(
            LinkEvent(stall + S, "leaf-su01-r0", "swp32", LinkEventKind.TRAFFIC_DROP, 0.0)
        )
    _feed(corr, events)
    (v,) = corr.verdicts()
    return v, uplink


def test_an_uplink_on_the_path_an_nccl_error_names_is_blamed_without_channels(design):
    v, uplink = _warn_level_uplink_down(design, "leaf-su01-r0")
    assert v.cause_link is not None and v.cause_link.link_id == uplink, v


def test_an_uplink_off_the_named_pairs_rail_that_lost_no_traffic_keeps_the_idle_factor(design):
    def score(host_drop: bool) -> float:
        v, uplink = _warn_level_uplink_down(design, "leaf-su01-r1", host_drop)
        return next(c.score for c in v.candidates if c.link and c.link.link_id == uplink)

    idle = Correlator(_fabric(design)).profile.scoring.idle_member_factor
    assert score(host_drop=True) == pytest.approx(score(host_drop=False) * idle, abs=1e-3)


def test_a_job_without_channels_takes_in_each_host_its_hang_lines_name(design):
    """At NCCL_DEBUG=WARN with no scheduler record, a job's hosts are only those its lines
    name: the links it may cross grow with each one, even when the line is a timeout."""
    corr = Correlator(_fabric(design))
    _feed(corr, [_timeout(T0 + 700 * S)])
    first = set(corr.job_links(JOB))
    assert corr.fabric.link_at[Endpoint(HOST_A, "mlx5_0")] in first
    _feed(corr, [dataclasses.replace(_timeout(T0 + 701 * S), host=HOST_B)])
    grown = set(corr.job_links(JOB))
    assert corr.fabric.link_at[Endpoint(HOST_B, "mlx5_0")] in grown
    # the two hosts sit in different scalable units: a spine uplink joins them on rail 0
    assert any(lid.startswith("leaf-su01-r0:") and "spine" in lid for lid in grown - first)
