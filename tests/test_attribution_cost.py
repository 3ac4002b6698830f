"""What a stall cost in GPU-hours, and what naming its cause before the watchdog saved: the
GPUs a job holds, when its watchdog fired or would fire, and the sums the page, Slack and
Grafana show."""

from __future__ import annotations

import dataclasses

import pytest
from attribution_support import HOST_A, HOST_B, JOB, LEAF, LEAF_PORT, T0, S, fabric, feed, job_facts

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.cost import (
    CostRules,
    cost_text,
    incident_cost,
    job_gpus,
    watchdog_of,
)
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
    Verdict,
)

STALL = T0 + 100 * S
RULES = CostRules()


def _timeout(started_ns: int, timeout_s: int, line: int = 1) -> CollectiveTimeout:
    return CollectiveTimeout(
        started_ns + timeout_s * S,
        JOB,
        HOST_A,
        0,
        42,
        "ALLREDUCE",
        timeout_s * 1000,
        timeout_s * 1000,
        started_ns,
        LogOrigin("watchdog.log", line),
    )


def _verdict(**changes: object) -> Verdict:
    v = Verdict(
        JOB,
        JobState.STALLED,
        STALL,
        STALL + 20 * S,
        CauseKind.LINK,
        None,
        None,
        0.9,
        gpus=128,
        watchdog_at_ns=STALL + 600 * S,
    )
    return dataclasses.replace(v, **changes)  # type: ignore[arg-type]


def test_an_answer_before_the_watchdog_saves_the_rest_of_the_timeout_on_every_gpu() -> None:
    cost = incident_cost(_verdict())
    assert cost is not None
    assert (cost.gpus, cost.to_verdict_s, cost.to_watchdog_s) == (128, 20.0, 600.0)
    assert cost.lost_gpu_hours == pytest.approx(128 * 20 / 3600)
    assert cost.watchdog_gpu_hours == pytest.approx(128 * 600 / 3600)
    assert cost.saved_gpu_hours == pytest.approx(128 * 580 / 3600)


def test_an_answer_after_the_watchdog_saved_nothing() -> None:
    cost = incident_cost(_verdict(decided_at_ns=STALL + 700 * S))
    assert cost is not None
    assert cost.saved_gpu_hours == 0.0
    assert cost.lost_gpu_hours == pytest.approx(128 * 700 / 3600)


def test_a_stall_with_no_cause_named_waits_for_the_watchdog_and_saves_nothing() -> None:
    cost = incident_cost(_verdict(cause_kind=CauseKind.UNKNOWN, confidence=0.0))
    assert cost is not None
    assert cost.lost_gpu_hours == cost.watchdog_gpu_hours == pytest.approx(128 * 600 / 3600)
    assert cost.saved_gpu_hours == 0.0


@pytest.mark.parametrize(
    "changes",
    [
        {"state": JobState.SLOW},
        {"state": JobState.HEALTHY, "stalled_at_ns": None, "decided_at_ns": None},
        {"gpus": 0},
        {"watchdog_at_ns": None},
    ],
)
def test_only_a_dated_stall_of_a_job_with_gpus_has_a_cost(changes: dict[str, object]) -> None:
    assert incident_cost(_verdict(**changes)) is None


def _view(*facts: object) -> JobView:
    view = JobView(JOB)
    for f in [*job_facts(), *facts]:
        view.add(f)  # type: ignore[arg-type]
    return view


def test_the_watchdog_is_the_first_timeout_line_after_the_stall_when_one_was_printed() -> None:
    early = _timeout(T0, 5, line=1)  # an earlier hang, over before this stall
    late = _timeout(STALL, 300, line=2)
    w = watchdog_of(_view(early, late), STALL, RULES)
    assert (w.at_ns, w.seen) == (STALL + 300 * S, True)


def test_a_timeout_line_not_yet_read_does_not_date_the_watchdog() -> None:
    view = _view(_timeout(STALL, 300))
    w = watchdog_of(view, STALL, RULES, seen_by=STALL + 60 * S)
    assert (w.at_ns, w.seen) == (STALL + 600 * S, False)


def test_without_a_timeout_line_the_watchdog_fires_after_the_configured_timeout() -> None:
    w = watchdog_of(_view(), STALL, CostRules(watchdog_timeout_s=1800))
    assert (w.at_ns, w.seen) == (STALL + 1800 * S, False)


def test_a_job_counts_its_ranks_else_its_placed_gpus_else_its_hosts_times_the_default() -> None:
    assert job_gpus(_view(), RULES) == 2  # job_facts: two ranks
    placed = JobPlacement(
        T0,
        JOB,
        "",
        (PlacedHost(HOST_A, (0, 1, 2, 3)), PlacedHost(HOST_B)),
        "slurm",
        "RUNNING",
        None,
        None,
        LogOrigin("scheduler/1.txt", 1),
    )
    view = JobView(JOB)
    view.add(placed)
    assert job_gpus(view, RULES) == 4 + 8
    assert job_gpus(view, CostRules(gpus_per_host=4)) == 4 + 4


def test_a_correlated_stall_carries_its_gpus_and_the_watchdog_once_it_fires() -> None:
    corr = Correlator(fabric())
    down = LinkEvent(STALL + 5 * S, LEAF, LEAF_PORT, LinkEventKind.DOWN)
    feed(corr, [*job_facts(), down, _timeout(STALL, 600)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED and v.cause_kind == CauseKind.LINK
    assert (v.gpus, v.watchdog_at_ns, v.watchdog_seen) == (2, STALL + 600 * S, True)
    cost = incident_cost(v)
    assert cost is not None and cost.saved_gpu_hours >= 0.0


def test_the_cost_sentence_says_saved_time_or_that_nothing_was_saved() -> None:
    answered = incident_cost(_verdict())
    unanswered = incident_cost(_verdict(cause_kind=CauseKind.UNKNOWN, watchdog_seen=True))
    assert answered is not None and unanswered is not None
    assert cost_text(answered) == (
        "128 GPUs idle 20 s before this answer (0.7 GPU-h); the watchdog fires 10 min after "
        "the stall (expected, 21.3 GPU-h): 20.6 GPU-h saved"
    )
    assert cost_text(unanswered) == (
        "128 GPUs idle until the watchdog fired 10 min after the stall (21.3 GPU-h): no cause "
        "named, nothing saved"
    )
