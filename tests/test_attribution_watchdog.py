"""What the attribution makes of the watchdogs' progress reports, the heartbeat abort, Xids that
follow from earlier ones, and RAS summary rows: which ranks were behind, when the hang began,
and how many faults a node had."""

from __future__ import annotations

from attribution_support import HOST_A, HOST_B, JOB, ORIGIN, T0, S, fabric, feed, job_facts
from logs_support import of_type, parse_real

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution import evidence as as_evidence
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.stall import stall_time
from railtrace.streams.attribution.watchdog import ranks_behind
from railtrace.streams.records import (
    CauseKind,
    CollectiveTimeout,
    JobState,
    LogOrigin,
    RasReport,
    WatchdogState,
    XidEvent,
)

STALL = T0 + 100 * S
SEEN = STALL + 600 * S  # when the watchdogs gave up


def _said(
    rank: int, completed: int, kind: str = "failure", pg: str = "0(default_pg)", line: int = 1
):
    """A rank's watchdog report as the parser makes it of PyTorch 2.7's wording."""
    return WatchdogState(
        SEEN + line,
        JOB,
        None,
        rank,
        pg,
        kind,
        completed + 1 if kind == "failure" else None,
        completed + 1,
        completed,
        None,
        "failure detected by watchdog",
        LogOrigin(f"rank{rank}.log", line),
    )


def _timeout(rank: int = 0) -> CollectiveTimeout:
    return CollectiveTimeout(
        SEEN, JOB, HOST_A, rank, 43, "ALLREDUCE", 600_000, 600_000, STALL, LogOrigin("w.log", 1)
    )


def test_no_rank_is_behind_when_every_rank_completed_the_same_work() -> None:
    """hiyouga/LlamaFactory#6269 (PyTorch 2.4): ranks 0, 2 and 6 all completed work 7752."""
    facts, _ = parse_real("llamafactory_6269_timeout_at_work_teardown.log")
    states = of_type(facts, WatchdogState)
    assert {s.last_completed for s in states if s.kind == "failure"} == {7752}
    assert ranks_behind(states) == []


def test_a_rank_that_completed_less_work_than_the_others_of_its_group_was_behind() -> None:
    """vllm-project/vllm#23448 (PyTorch 2.7): in process group 67, rank 0 completed work 5729
    and hung on 5730, rank 3 completed only 5728 and hung on 5729: rank 3 was behind."""
    facts, _ = parse_real("vllm_23448_two_ranks_pg_guid_first_to_dump.log", year_hint=2025)
    (b,) = ranks_behind(of_type(facts, WatchdogState))
    assert (b.pg, b.ranks, b.last_completed, b.others_completed) == ("67", (3,), 5728, 5729)


def test_the_ranks_with_the_lowest_last_completed_work_are_behind() -> None:
    (b,) = ranks_behind([_said(0, 43, line=1), _said(1, 42, "dump", line=2), _said(2, 43, line=3)])
    assert (b.ranks, b.last_completed, b.others_completed, b.reported) == ((1,), 42, 43, 3)


def test_ranks_of_different_process_groups_are_not_compared() -> None:
    assert ranks_behind([_said(0, 43, pg="0(default_pg)"), _said(1, 7, pg="99(EXPERT)")]) == []


def test_a_ranks_latest_report_counts() -> None:
    """A rank's last completed work only grows: its later word replaces its earlier one."""
    assert ranks_behind([_said(0, 43, line=1), _said(1, 42, line=2), _said(1, 43, line=3)]) == []


def test_the_verdict_names_the_ranks_behind_and_their_hosts() -> None:
    corr = Correlator(fabric())
    feed(corr, [*job_facts(), _timeout(0), _said(0, 43, line=1), _said(1, 42, "dump", line=2)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    (behind,) = [e for e in v.evidence if e.kind == "ranks-behind"]
    assert behind.subject == "rank 1"
    assert f"1 ({HOST_B})" in behind.detail and "42" in behind.detail and "43" in behind.detail


def test_a_heartbeat_abort_dates_the_hang_to_when_the_watchdog_got_stuck() -> None:
    """ProcessGroupNCCL's watchdog got stuck for 600 seconds: the hang began 600 s before."""
    view = JobView(JOB)
    facts, _ = parse_real("ms_swift_7992_heartbeat_pg_guid_name.log", year_hint=2026)
    (abort,) = of_type(facts, WatchdogState)
    view.add(abort)
    assert stall_time(view) == abort.ts_ns - 480 * S


def _xid(code: int, line: int, caused_by: int | None = None) -> XidEvent:
    return XidEvent(
        STALL + line * S,
        JOB,
        HOST_B,
        f"0000:{line:02x}:00",
        code,
        "",
        LogOrigin("b.dmesg", line),
        caused_by=caused_by,
    )


def _node_score(xids: list[XidEvent]) -> float:
    corr = Correlator(fabric())
    feed(corr, [*job_facts(), *xids, _timeout(0)])
    (v,) = corr.verdicts()
    return next(c.score for c in v.candidates if c.kind == CauseKind.NODE)


def test_xids_caused_by_a_previous_one_are_not_a_second_fault_of_the_node() -> None:
    """An NVLink failure (Xid 149) and the Xid 45 it caused on three GPUs: one fault."""
    alone = _node_score([_xid(149, 1)])
    with_consequences = _node_score(
        [_xid(149, 1), *(_xid(45, n, caused_by=149) for n in (2, 3, 4))]
    )
    assert with_consequences == alone


def test_a_consequential_xid_whose_cause_was_not_logged_stands_for_its_cause() -> None:
    """An Xid 45 `caused by previous Xid 79`, the Xid 79 line lost: the GPU is still lost."""
    lost = _node_score([_xid(79, 1)])
    assert _node_score([_xid(45, 1, caused_by=79)]) == lost
    view = JobView(JOB)
    view.add(_xid(45, 1, caused_by=79))
    assert stall_time(view) == STALL + S


def test_a_healthy_ras_summary_row_dates_no_stall_and_an_incomplete_one_does() -> None:
    facts, _ = parse_real("nccl_1762_ras_incomplete.log", year_hint=2025)
    rows = [r for r in of_type(facts, RasReport) if r.section == "summary"]
    healthy = [
        r for r in parse_real("nccl_1730_ras_ok_then_watchdog.log")[0] if isinstance(r, RasReport)
    ]
    ok, incomplete = JobView(JOB), JobView(JOB)
    for r in healthy:
        ok.add(r)
    incomplete.add(rows[0])
    assert stall_time(ok) is None
    assert stall_time(incomplete) == rows[0].ts_ns


def test_evidence_says_where_a_borrowed_time_came_from() -> None:
    t = _timeout(0)
    borrowed = CollectiveTimeout(
        t.ts_ns,
        JOB,
        HOST_A,
        0,
        43,
        "ALLREDUCE",
        600_000,
        600_000,
        STALL,
        LogOrigin("w.log", 2, "line 1"),
    )
    assert "dated by" not in as_evidence.timeout(t).detail
    assert as_evidence.timeout(borrowed).detail.endswith("[no time on its line: dated by line 1]")
    assert ORIGIN.dated_by == ""
