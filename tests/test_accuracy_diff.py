"""Two world runs compared job by job: a job that moved is named under worse or better, so a
fix that rights two jobs and breaks a third is not read as one net gain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.*
from benchmarks.accuracy_diff import diff, misses, outcome
from benchmarks.grading.score import FABRIC, HEALTHY, NON_FABRIC, JobScore
from benchmarks.grading.world import Results, WorldIncident


def _score(job_id: str, group: str, *, top1: bool, blamed: bool, false_blame: bool) -> JobScore:
    return JobScore(
        job_id,
        group,
        "healthy" if group == HEALTHY else "stalled",
        "stalled",
        blamed,
        state_ok=top1,
        top1=top1,
        top3=top1,
        kind_ok=top1,
        side_ok=top1,
        false_blame=false_blame,
        confidence=0.7 if blamed else 0.0,
    )


def _run(path: Path, seed_scores: dict[int, list[JobScore]]) -> Path:
    results = Results(path)
    for seed, scores in seed_scores.items():
        incident = WorldIncident(
            "64", 64, seed, 600, "link-down", 10, {"place": "host", "routing": "ecmp"}, scores, 1.0
        )
        results.append(incident, "abc")
    return path


def right(job: str) -> JobScore:
    return _score(job, FABRIC, top1=True, blamed=True, false_blame=False)


def wrong(job: str) -> JobScore:
    return _score(job, FABRIC, top1=False, blamed=True, false_blame=True)


def unblamed(job: str) -> JobScore:
    return _score(job, FABRIC, top1=False, blamed=False, false_blame=False)


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (right("j"), "right"),
        (wrong("j"), "wrong"),
        (unblamed("j"), "missed"),
        (_score("j", FABRIC, top1=False, blamed=True, false_blame=False), "state"),
        (_score("j", HEALTHY, top1=False, blamed=True, false_blame=True), "false blame"),
        (_score("j", HEALTHY, top1=False, blamed=False, false_blame=False), "right"),
        (_score("j", NON_FABRIC, top1=False, blamed=True, false_blame=True), "wrong"),
    ],
)
def test_outcome_counts_as_the_tables_count(score: JobScore, expected: str) -> None:
    assert outcome(score) == expected


def test_a_job_that_got_worse_is_named_even_when_the_totals_improve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _run(
        tmp_path / "old.jsonl", {1: [unblamed("a"), unblamed("b"), right("c")], 2: [right("d")]}
    )
    new = _run(tmp_path / "new.jsonl", {1: [right("a"), right("b"), wrong("c")], 3: [right("e")]})
    diff(old, new)
    out = capsys.readouterr().out
    assert "1 incidents graded by both (3 jobs); 1 only in old.jsonl, 1 only in new.jsonl" in out
    worse = out.split("\nworse: ")[1].split("\nbetter: ")[0]
    better = out.split("\nbetter: ")[1]
    assert (
        worse.startswith("1\n") and "64/1 (64 nodes) job c" in worse and "right -> wrong" in worse
    )
    assert better.startswith("2\n") and "job a" in better and "job b" in better
    assert "job c" not in better


def test_one_run_lists_its_misses_worst_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path / "run.jsonl", {1: [unblamed("a"), wrong("b"), right("c")]})
    misses(run)
    out = capsys.readouterr().out
    assert "not right: 2" in out
    assert out.index("job b") < out.index("job a")
    assert "job c" not in out
