"""The world run's grading beyond one verdict: the calibration fit and how it is held out, the
results file a long run resumes from, and the fault-to-verdict figure for prompt evidence."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.grading
from benchmarks.grading.calibrate import fit, format_knots, held_out, recalibrated
from benchmarks.grading.score import FABRIC, HEALTHY, JobScore
from benchmarks.grading.world import RANDOM, Results, WorldIncident
from benchmarks.grading.world_run import prompt_lines, world_main
from railtrace.streams.attribution.scoring import calibrated


def _blame(raw: float, right: bool, **extra: object) -> JobScore:
    fields: dict[str, object] = {
        "job_id": "j",
        "group": FABRIC,
        "truth_state": "stalled",
        "seen_state": "stalled",
        "blamed": True,
        "state_ok": right,
        "top1": right,
        "top3": right,
        "kind_ok": True,
        "side_ok": right,
        "false_blame": not right,
        "confidence": raw,
        "raw_confidence": raw,
    }
    return JobScore(**(fields | extra))


# --- the calibration fit ---------------------------------------------------------------------


def test_the_fit_is_monotone_and_pools_a_violating_pair() -> None:
    # Raw 0.5 right less often than raw 0.4: the two are pooled into one block.
    pairs = [(0.4, True), (0.4, True), (0.5, False), (0.5, True), (0.9, True), (0.9, True)]
    knots = fit(pairs)
    ys = [y for _, y in knots]
    assert ys == sorted(ys)
    assert [x for x, _ in knots] == sorted({x for x, _ in knots})
    # The pooled block: 3 right of 4 at mean raw 0.45, Laplace-smoothed to 4/6.
    assert knots[0] == (0.45, pytest.approx(4 / 6, abs=1e-4))
    assert knots[-1] == (0.9, 0.75)  # 2 of 2 right is "very likely", not certain


def test_every_blame_right_is_never_mapped_to_certainty() -> None:
    knots = fit([(0.5, True)] * 98)
    assert knots == ((0.5, 0.99),)
    assert calibrated(knots, 0.9) == 0.99


def test_nothing_to_fit_gives_no_map_and_the_raw_confidence_stays() -> None:
    assert fit([]) == ()
    assert calibrated((), 0.42) == 0.42


def test_a_map_fitted_on_one_half_is_scored_on_the_other() -> None:
    # Raw 0.4 blames are always right, raw 0.9 half the time: the raw figure is badly off.
    fit_on = [_blame(0.4, True)] * 20 + [_blame(0.9, i % 2 == 0) for i in range(20)]
    score_on = [_blame(0.4, True)] * 10 + [_blame(0.9, i % 2 == 0) for i in range(10)]
    h = held_out(fit_on, score_on)
    assert h.fitted_on == 40 and h.scored_on == 20
    assert h.ece_before is not None and h.ece_after is not None
    assert h.ece_after < h.ece_before
    # The fit pools the two (right at 0.4, coin toss at 0.9 violate the order): one block.
    assert len(h.knots) == 1


def test_recalibrating_leaves_jobs_that_blame_nothing_alone() -> None:
    quiet = _blame(0.0, True, blamed=False, confidence=0.0, raw_confidence=0.0)
    (out,) = recalibrated([quiet], ((0.3, 0.9),))
    assert out.confidence == 0.0


def test_the_knots_print_as_the_settings_file_reads_them() -> None:
    assert (
        format_knots(((0.45, 0.6667), (0.9, 0.75))) == "calibration = [[0.45, 0.6667], [0.9, 0.75]]"
    )


# --- the results file -------------------------------------------------------------------------


def _incident(seed: int, sample_s: int = 10, scores: list[JobScore] | None = None) -> WorldIncident:
    return WorldIncident(
        RANDOM,
        32,
        seed,
        600,
        "link-down",
        sample_s,
        {"routing": "ecmp"},
        scores if scores is not None else [_blame(0.8, True, evidence=("link-state",))],
        12.5,
    )


def test_a_results_file_gives_back_what_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    results = Results.load(path)
    results.append(_incident(1), "abc123")
    results.append(_incident(2), "abc123")
    again = Results.load(path)
    assert again.incidents == {i.task: i for i in (_incident(1), _incident(2))}
    assert again.version_set([(0, 1, 600), (0, 2, 600)]) == {"abc123"}
    assert again.of([(0, 2, 600), (0, 3, 600)]) == [_incident(2)]


def test_a_line_cut_short_by_a_kill_is_counted_and_its_incident_graded_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.jsonl"
    Results.load(path).append(_incident(1), "abc123")
    with path.open("ab") as f:
        f.write(b'{"version": "abc123", "incident": {"size": "ran')
    again = Results.load(path)
    assert again.unreadable == 1
    assert set(again.incidents) == {(0, 1, 600)}


@pytest.mark.integration  # asks git for the checkout's version
def test_a_run_that_would_mix_two_versions_of_the_code_in_one_table_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.jsonl"
    Results.load(path).append(_incident(1), "0123456789ab")  # graded by some other commit
    args = argparse.Namespace(
        nodes=[0], seeds=2, first_seed=1, watchdog=600, workers=1, results=path, calibrate=False
    )
    with pytest.raises(SystemExit, match="would mix two versions in one table"):
        world_main(args)
    assert len(path.read_bytes().splitlines()) == 1  # nothing graded, nothing appended


# --- prompt evidence --------------------------------------------------------------------------


def test_the_prompt_figure_takes_only_jobs_whose_fault_told_at_once() -> None:
    told = [_blame(0.9, True, evidence=("nccl",), after_fault_s=float(t)) for t in (5, 10, 20)]
    quiet = _blame(0.9, True, evidence=(), after_fault_s=600.0)  # counters only: not counted
    healthy = _blame(0.0, True, group=HEALTHY, evidence=("link-state",), after_fault_s=900.0)
    lines = prompt_lines([_incident(1, scores=[*told, quiet, healthy])])
    assert lines[1].split() == ["10", "s", "3", "10", "20", "20"]
    assert lines[-1].endswith("20 s over 3 jobs, met")


def test_the_prompt_target_says_so_when_it_is_missed() -> None:
    slow = [_blame(0.9, True, evidence=("link-state",), after_fault_s=float(t)) for t in (5, 60)]
    assert prompt_lines([_incident(1, scores=slow)])[-1].endswith("60 s over 2 jobs, NOT met")


def test_the_prompt_target_is_stated_at_ten_second_sampling_only() -> None:
    fast = [_blame(0.9, True, evidence=("nccl",), after_fault_s=3.0)]
    lines = prompt_lines([_incident(1, sample_s=1, scores=fast)])
    assert lines[1].startswith("1 s") and "no job with prompt evidence at 10 s" in lines[-1]
