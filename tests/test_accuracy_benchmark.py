"""The accuracy benchmark's scoring and aggregation, on hand-made truths and verdicts (no
simulation): what counts as top-1, top-3, node-vs-link, a false blame, and how it adds up."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.grading
from benchmarks.grading import tables
from benchmarks.grading.score import score_incident
from railtrace.streams.records import Candidate, CauseKind, JobState, Verdict
from railtrace.topology.ends import Endpoint, LinkRef

S = 1_000_000_000
FAULT_AT = 1_000 * S


def _link(link_id: str) -> LinkRef:
    return LinkRef(link_id, a=Endpoint(f"{link_id}-a", "swp1"), b=Endpoint(f"{link_id}-b", "swp2"))


def _link_json(link_id: str) -> dict[str, Any]:
    return {
        "id": link_id,
        "a": {"device": f"{link_id}-a", "interface": "swp1"},
        "b": {"device": f"{link_id}-b", "interface": "swp2"},
    }


def _truth_job(
    state: str = "stalled",
    cause: str | None = "link",
    link: str | None = "L1",
    node: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    stalled = FAULT_AT - S // 2 if state == "stalled" else None
    return {
        "state": state,
        "cause": cause,
        "link": _link_json(link) if link else None,
        "node": node,
        "stalled_at_ns": stalled,
        "watchdog_at_ns": stalled + 600 * S if stalled is not None else None,
        **extra,
    }


def _truth(fault: str = "link-down", **jobs: dict[str, Any]) -> dict[str, Any]:
    return {"fault": fault, "fault_at_ns": FAULT_AT, "jobs": jobs}


def _link_candidate(link_id: str, score: float = 0.5) -> Candidate:
    return Candidate(CauseKind.LINK, score, link=_link(link_id))


def _node_candidate(node: str, score: float = 0.5) -> Candidate:
    return Candidate(CauseKind.NODE, score, node=node)


def _verdict(
    job_id: str = "j1",
    state: JobState = JobState.STALLED,
    link: str | None = None,
    node: str | None = None,
    confidence: float = 0.9,
    candidates: tuple[Candidate, ...] | None = None,
    decided_at_ns: int | None = FAULT_AT + 20 * S,
) -> Verdict:
    kind = CauseKind.LINK if link else CauseKind.NODE if node else CauseKind.UNKNOWN
    if candidates is None:
        candidates = (
            (_link_candidate(link, 0.9),) if link else (_node_candidate(node, 0.9),) if node else ()
        )
    return Verdict(
        job_id,
        state,
        FAULT_AT - S // 2 if state != JobState.HEALTHY else None,
        decided_at_ns,
        kind,
        _link(link) if link else None,
        node,
        confidence if kind != CauseKind.UNKNOWN else 0.0,
        candidates,
    )


def _one(truth: dict[str, Any], verdict: Verdict) -> Any:
    (score,) = score_incident(truth, [verdict])
    return score


# --- one job ------------------------------------------------------------------------------


def test_the_right_link_blamed_is_top1_with_its_times() -> None:
    s = _one(_truth(j1=_truth_job()), _verdict(link="L1"))
    assert s.group == "fabric"
    assert (s.state_ok, s.top1, s.top3, s.kind_ok, s.false_blame) == (True,) * 4 + (False,)
    assert s.after_fault_s == 20.0
    assert s.lead_s == 600 - 20.5
    assert s.before_watchdog is True


def test_a_wrong_link_is_a_false_blame_yet_top3_when_the_culprit_is_a_candidate() -> None:
    cands = (_link_candidate("L9", 0.8), _link_candidate("L7", 0.5), _link_candidate("L1", 0.4))
    s = _one(_truth(j1=_truth_job()), _verdict(link="L9", candidates=cands))
    assert not s.top1
    assert s.false_blame
    assert s.top3
    assert s.kind_ok  # a link was blamed, and a link was at fault


def test_a_culprit_fourth_among_the_candidates_is_not_top3() -> None:
    cands = tuple(_link_candidate(f"L{i}", 0.9 - i / 10) for i in (9, 8, 7, 1))
    s = _one(_truth(j1=_truth_job()), _verdict(link="L9", candidates=cands))
    assert not s.top3


def test_a_node_fault_is_top1_only_for_that_node() -> None:
    truth = _truth("gpu-xid", j1=_truth_job(cause="node", link=None, node="gpu-07"))
    right = _one(truth, _verdict(node="gpu-07"))
    other = _one(truth, _verdict(node="gpu-08"))
    assert right.top1 and right.kind_ok and not right.false_blame
    assert not other.top1 and other.kind_ok and other.false_blame


def test_a_link_blamed_for_a_node_fault_gets_node_vs_link_wrong() -> None:
    truth = _truth("gpu-xid", j1=_truth_job(cause="node", link=None, node="gpu-07"))
    s = _one(truth, _verdict(link="L1"))
    assert not s.kind_ok
    assert not s.top1
    assert s.false_blame


def test_an_app_hang_with_nothing_blamed_is_top1() -> None:
    truth = _truth("app-hang", j1=_truth_job(cause="unknown", link=None))
    s = _one(truth, _verdict(candidates=(_link_candidate("L5", 0.1),)))
    assert s.group == "non-fabric"
    assert s.top1 and s.top3 and s.kind_ok
    assert not s.false_blame


def test_an_app_hang_blamed_on_a_link_is_a_non_fabric_false_blame() -> None:
    truth = _truth("app-hang", j1=_truth_job(cause="unknown", link=None))
    s = _one(truth, _verdict(link="L5"))
    assert s.group == "non-fabric"
    assert s.false_blame
    assert not s.top1 and not s.top3 and not s.kind_ok


def test_a_healthy_job_blamed_is_a_healthy_false_blame() -> None:
    truth = _truth(j1=_truth_job(state="healthy", cause=None, link=None))
    s = _one(truth, _verdict(state=JobState.HEALTHY, link="L1"))
    assert s.group == "healthy"
    assert s.false_blame


def test_a_healthy_job_seen_stalled_is_a_false_blame_even_with_nothing_named() -> None:
    truth = _truth(j1=_truth_job(state="healthy", cause=None, link=None))
    assert _one(truth, _verdict(state=JobState.STALLED)).false_blame
    assert not _one(truth, _verdict(state=JobState.HEALTHY, decided_at_ns=None)).false_blame


def test_a_slow_job_judged_stalled_is_not_top1_even_on_the_right_link() -> None:
    truth = _truth(j1=_truth_job(state="slow"))
    stalled = _one(truth, _verdict(state=JobState.STALLED, link="L1"))
    slow = _one(truth, _verdict(state=JobState.SLOW, link="L1"))
    assert not stalled.state_ok and not stalled.top1
    assert not stalled.false_blame  # the link is right; only the state is wrong
    assert slow.top1
    # Slow jobs never hit the watchdog: no lead to measure.
    assert slow.lead_s is None and slow.before_watchdog is None


def test_the_fault_time_of_the_job_itself_is_used_when_given() -> None:
    truth = _truth(j1=_truth_job(fault_at_ns=FAULT_AT + 100 * S))
    s = _one(truth, _verdict(link="L1", decided_at_ns=FAULT_AT + 130 * S))
    assert s.after_fault_s == 30.0


def test_a_missing_per_job_fault_time_falls_back_to_the_incident_one() -> None:
    job = _truth_job()
    assert "fault_at_ns" not in job
    s = _one(_truth(j1=job), _verdict(link="L1", decided_at_ns=FAULT_AT + 45 * S))
    assert s.after_fault_s == 45.0
    nulled = _one(
        _truth(j1=_truth_job(fault_at_ns=None)),
        _verdict(link="L1", decided_at_ns=FAULT_AT + 45 * S),
    )
    assert nulled.after_fault_s == 45.0


def test_a_verdict_after_the_watchdog_has_a_negative_lead() -> None:
    s = _one(_truth(j1=_truth_job()), _verdict(link="L1", decided_at_ns=FAULT_AT + 700 * S))
    assert s.lead_s == -100.5
    assert s.before_watchdog is False


def test_an_affected_job_without_a_verdict_scores_as_missed() -> None:
    (s,) = score_incident(_truth(j1=_truth_job()), [])
    assert s.seen_state == "missing"
    assert not (s.top1 or s.top3 or s.state_ok or s.false_blame)


def test_several_affected_jobs_are_scored_each_against_its_own_culprit() -> None:
    truth = _truth(
        "multi",
        j1=_truth_job(link="L1", fault_at_ns=FAULT_AT),
        j2=_truth_job(cause="node", link=None, node="gpu-03", fault_at_ns=FAULT_AT + 60 * S),
        j3=_truth_job(state="healthy", cause=None, link=None),
    )
    verdicts = [
        _verdict("j2", node="gpu-03", decided_at_ns=FAULT_AT + 70 * S),
        _verdict("j1", link="L1"),
        _verdict("j3", state=JobState.HEALTHY, decided_at_ns=None),
        _verdict("not-in-truth", link="L1"),
    ]
    scores = score_incident(truth, verdicts)
    assert [s.job_id for s in scores] == ["j1", "j2", "j3"]
    assert [s.top1 for s in scores] == [True, True, False]
    assert scores[1].after_fault_s == 10.0
    assert not any(s.false_blame for s in scores)


# --- aggregation --------------------------------------------------------------------------


def _scores(truth: dict[str, Any], *verdicts: Verdict) -> list[Any]:
    result: list[Any] = score_incident(truth, list(verdicts))
    return result


def test_tally_counts_each_column_per_case() -> None:
    healthy = _truth_job(state="healthy", cause=None, link=None)
    link_right = _scores(
        _truth(j1=_truth_job(), j2=healthy),
        _verdict("j1", link="L1", confidence=0.9),
        _verdict("j2", state=JobState.HEALTHY, decided_at_ns=None),
    )
    link_wrong = _scores(
        _truth(j1=_truth_job(), j2=healthy),
        _verdict(
            "j1",
            link="L2",
            confidence=0.4,
            decided_at_ns=FAULT_AT + 40 * S,
            candidates=(_link_candidate("L2"), _link_candidate("L1")),
        ),
        _verdict("j2", state=JobState.HEALTHY, link="L3"),  # a healthy job blamed
    )
    hang = _scores(
        _truth("app-hang", j1=_truth_job(cause="unknown", link=None)),
        _verdict("j1", link="L5", confidence=0.3),
    )
    rows = tables.tally([("link-down", link_right), ("link-down", link_wrong), ("app-hang", hang)])
    assert list(rows) == ["link-down", "app-hang"]
    ld = rows["link-down"]
    assert (ld.incidents, ld.affected, ld.top1, ld.top3, ld.kind_ok) == (2, 2, 1, 2, 2)
    assert (ld.healthy, ld.healthy_blamed) == (2, 1)
    assert (ld.fabric, ld.fabric_wrong) == (2, 1)
    assert (ld.non_fabric, ld.non_fabric_blamed) == (0, 0)
    assert ld.conf_right == [0.9] and ld.conf_wrong == [0.4]
    assert ld.after_fault == [20.0, 40.0]
    assert ld.before_watchdog == [True, True]
    ah = rows["app-hang"]
    assert (ah.affected, ah.top1, ah.non_fabric, ah.non_fabric_blamed) == (1, 0, 1, 1)
    assert ah.conf_right == [] and ah.conf_wrong == [0.3]

    both = tables.total(rows.values())
    assert (both.incidents, both.affected, both.top1, both.healthy_blamed) == (3, 3, 1, 1)
    assert both.conf_wrong == [0.4, 0.3]


def test_a_right_answer_that_blames_nothing_adds_no_confidence() -> None:
    hang = _scores(_truth("app-hang", j1=_truth_job(cause="unknown", link=None)), _verdict("j1"))
    row = tables.tally([("app-hang", hang)])["app-hang"]
    assert row.top1 == 1
    assert row.conf_right == [] and row.conf_wrong == []


def test_the_table_has_a_row_per_case_and_a_total() -> None:
    right = _scores(_truth(j1=_truth_job()), _verdict("j1", link="L1", confidence=0.85))
    lines = tables.format_table(tables.tally([("link-down", right), ("flap", right)]))
    assert [line.split()[0] for line in lines] == ["case", "link-down", "flap", "total"]
    total_cells = lines[-1].split()
    assert total_cells[1:3] == ["2", "2"]  # incidents, affected jobs
    assert "100%" in total_cells
    assert "0.85" in total_cells


@pytest.mark.parametrize(
    ("confidence", "bin_index"),
    [(0.0, 0), (0.19, 0), (0.2, 1), (0.5, 2), (0.79, 3), (0.8, 4), (1.0, 4)],
)
def test_calibration_bins_are_closed_below_and_the_last_is_closed_above(
    confidence: float, bin_index: int
) -> None:
    s = _scores(_truth(j1=_truth_job()), _verdict("j1", link="L1", confidence=confidence))
    bins = tables.calibration(s)
    assert [b.blames for b in bins] == [int(i == bin_index) for i in range(5)]


def test_calibration_counts_only_blames_on_affected_jobs_and_their_top1_share() -> None:
    healthy = _truth_job(state="healthy", cause=None, link=None)
    truth = _truth(j1=_truth_job(), j2=healthy)
    scores = [
        *_scores(truth, _verdict("j1", link="L1", confidence=0.9), _verdict("j2", link="L4")),
        *_scores(truth, _verdict("j1", link="L2", confidence=0.85)),
        *_scores(truth, _verdict("j1", link="L1", confidence=0.3)),
        *_scores(truth, _verdict("j1")),  # nothing blamed: not in any bin
    ]
    bins = tables.calibration(scores)
    assert [(b.low, b.high) for b in bins] == [
        (0.0, 0.2),
        (0.2, 0.4),
        (0.4, 0.6),
        (0.6, 0.8),
        (0.8, 1.0),
    ]
    assert [(b.blames, b.right) for b in bins] == [(0, 0), (1, 1), (0, 0), (0, 0), (2, 1)]
    assert bins[4].share == 0.5
    assert bins[0].share is None


def test_the_side_is_right_only_when_the_diagnosis_names_the_truths() -> None:
    truth = _truth("nic-down", j1=_truth_job(diagnosis="host-nic"))
    named = dataclasses.replace(_verdict(link="L1"), diagnosis="host-nic")
    wrong_side = dataclasses.replace(_verdict(link="L1"), diagnosis="switch-port")
    assert _one(truth, named).side_ok
    assert not _one(truth, wrong_side).side_ok
    assert _one(truth, wrong_side).top1  # the right cable, the wrong end of it


# --- jobs whose culprit the evidence cannot tell -------------------------------------------------


def _undecidable_truth() -> dict[str, Any]:
    why = "the trainer prints no step line: a slowdown cannot be seen"
    return _truth(j1=_truth_job(state="slow", undecidable=why))


def test_an_undecidable_job_answered_unknown_is_right() -> None:
    s = _one(_undecidable_truth(), _verdict(state=JobState.HEALTHY))
    assert s.undecidable and s.top1 and s.top3 and not s.false_blame


def test_an_undecidable_job_blamed_outright_is_wrong_even_on_its_culprit() -> None:
    s = _one(_undecidable_truth(), _verdict(state=JobState.SLOW, link="L1"))
    assert s.undecidable and not s.top1 and s.false_blame


def test_an_undecidable_job_with_a_flagged_tie_holding_its_culprit_is_right() -> None:
    cands = (_link_candidate("L1", 0.5), _link_candidate("L2", 0.49))
    tied = dataclasses.replace(
        _verdict(state=JobState.SLOW, link="L2", candidates=cands), tied=("L2", "L1")
    )
    assert _one(_undecidable_truth(), tied).top1
    elsewhere = dataclasses.replace(tied, tied=("L2", "L3"))
    assert not _one(_undecidable_truth(), elsewhere).top1


@pytest.mark.parametrize(
    ("xs", "q", "expected"),
    [([5.0], 0.9, 5.0), ([1.0, 2.0], 0.9, 2.0), ([float(i) for i in range(1, 11)], 0.9, 9.0)],
)
def test_the_p90_is_a_time_some_job_took(xs: list[float], q: float, expected: float) -> None:
    assert tables.nearest_rank(xs, q) == expected


def test_the_table_shows_the_slow_tail_of_fault_to_verdict_beside_its_median() -> None:
    tally = tables.Tally(after_fault=[10.0] * 9 + [600.0])
    head, *_ = tables.format_table({"pfc-storm": tally})
    row = tables.format_row("pfc-storm", tally)
    cells = dict(zip(head.split(), row.split(), strict=False))
    assert (cells["flt>v"], cells["p90"]) == ("10", "10")
    tally.after_fault.append(600.0)
    cells = dict(zip(head.split(), tables.format_row("pfc-storm", tally).split(), strict=False))
    assert (cells["flt>v"], cells["p90"]) == ("10", "600")
