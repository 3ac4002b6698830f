"""Benchmark helper: two world accuracy runs compared job by job, or one run's misses listed.

Run: .venv/bin/python benchmarks/accuracy_diff.py OLD.jsonl NEW.jsonl
     .venv/bin/python benchmarks/accuracy_diff.py RUN.jsonl          (its misses only)

The files are `accuracy.py --world --results` files. The tables of two runs can agree while
different jobs moved: a fix that rights two jobs and breaks one reads as +1. This compares the
incidents both runs graded (same size, nodes and seed), job by job, and lists each job whose
outcome changed, worst first, with its fault, where the fault was and the randomized draws, so
a regression is found by name rather than as a share.

A job's outcome, from best to worst: `right` (top-1 for a fabric job; nothing blamed and the
state right for a non-fabric job; no false blame for a healthy one), `state` (a fabric job
whose culprit was named but whose state was wrong), `missed` (nothing blamed: not right, not
wrong), `wrong` (a fabric job blamed on something else, a non-fabric job blamed at all, an
undecidable job blamed outside a flagged tie) and `false blame` (a healthy job blamed or seen
stalled/slow).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.grading
from benchmarks.grading.score import HEALTHY, JobScore
from benchmarks.grading.world import Results

OUTCOMES = ("right", "state", "missed", "wrong", "false blame")
RANK = {name: i for i, name in enumerate(OUTCOMES)}

IncidentKey = tuple[str, int, int]  # size label, nodes, seed


@dataclass(frozen=True, slots=True)
class Job:
    incident: IncidentKey
    job_id: str
    group: str
    outcome: str
    confidence: float
    fault: str
    place: str
    draws: str

    def label(self) -> str:
        size, nodes, seed = self.incident
        return f"{size}/{seed} ({nodes} nodes) job {self.job_id}"


def outcome(score: JobScore) -> str:
    """One job's outcome from its stored score, counted as the tables count it (a `wrong` is
    the tables' false blame on an affected job)."""
    if score.group == HEALTHY:
        return "false blame" if score.false_blame else "right"
    if score.false_blame:
        return "wrong"
    if score.top1:
        return "right"
    return "state" if score.blamed else "missed"


def read_run(path: Path) -> dict[tuple[IncidentKey, str], Job]:
    """Every job of a results file (read as the accuracy run reads it), by incident and job."""
    results = Results.load(path)
    if results.unreadable:
        print(f"{path}: {results.unreadable} unreadable lines left out", file=sys.stderr)
    jobs: dict[tuple[IncidentKey, str], Job] = {}
    for incident in results.incidents.values():
        key: IncidentKey = (incident.size, incident.nodes, incident.seed)
        draws = ", ".join(f"{k}={v}" for k, v in incident.buckets.items() if k != "place")
        place = incident.buckets.get("place", "?")
        for s in incident.scores:
            jobs[key, s.job_id] = Job(
                key, s.job_id, s.group, outcome(s), s.confidence, incident.fault, place, draws
            )
    return jobs


def _line(job: Job, before: Job | None = None) -> str:
    change = f"{before.outcome} -> {job.outcome}" if before else job.outcome
    conf = (
        f"conf {before.confidence:.2f} -> {job.confidence:.2f}"
        if before
        else (f"conf {job.confidence:.2f}")
    )
    return f"  {job.label()}: {job.group}, {job.fault} on {job.place}: {change}, {conf}\n" + (
        f"      {job.draws}"
    )


def summary(jobs: dict[tuple[IncidentKey, str], Job]) -> Iterator[str]:
    by_group: dict[str, Counter[str]] = {}
    for job in jobs.values():
        by_group.setdefault(job.group, Counter())[job.outcome] += 1
    for group, counts in sorted(by_group.items()):
        parts = ", ".join(f"{name} {counts[name]}" for name in OUTCOMES if counts[name])
        yield f"  {group}: {sum(counts.values())} jobs: {parts}"


def misses(path: Path) -> None:
    jobs = read_run(path)
    incidents = {key for key, _ in jobs}
    print(f"{path}: {len(incidents)} incidents, {len(jobs)} jobs")
    print("\n".join(summary(jobs)))
    bad = sorted((j for j in jobs.values() if j.outcome != "right"), key=_worst_first)
    print(f"\nnot right: {len(bad)}")
    for job in bad:
        print(_line(job))


def _worst_first(job: Job) -> tuple[int, IncidentKey, str]:
    return (-RANK[job.outcome], job.incident, job.job_id)


def diff(old_path: Path, new_path: Path) -> None:
    old, new = read_run(old_path), read_run(new_path)
    both = sorted(old.keys() & new.keys())
    incidents = {key for key, _ in both}
    only_old = {k for k, _ in old} - {k for k, _ in new}
    only_new = {k for k, _ in new} - {k for k, _ in old}
    print(
        f"{len(incidents)} incidents graded by both ({len(both)} jobs); "
        f"{len(only_old)} only in {old_path.name}, {len(only_new)} only in {new_path.name}"
    )
    print(f"\n{old_path.name}, on those incidents:")
    print("\n".join(summary({k: old[k] for k in both})))
    print(f"{new_path.name}, on those incidents:")
    print("\n".join(summary({k: new[k] for k in both})))
    moved = [(old[k], new[k]) for k in both if old[k].outcome != new[k].outcome]
    worse = [(a, b) for a, b in moved if RANK[b.outcome] > RANK[a.outcome]]
    better = [(a, b) for a, b in moved if RANK[b.outcome] < RANK[a.outcome]]
    for title, pairs in (("worse", worse), ("better", better)):
        print(f"\n{title}: {len(pairs)}")
        for a, b in sorted(pairs, key=lambda p: _worst_first(p[1])):
            print(_line(b, a))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("runs", nargs="+", type=Path, metavar="RUN.jsonl", help="one or two files")
    args = ap.parse_args(argv)
    if len(args.runs) > 2:
        ap.error("give one results file (its misses) or two (old, new)")
    for path in args.runs:
        if not path.is_file():
            ap.error(f"no such results file: {path}")
    if len(args.runs) == 1:
        misses(args.runs[0])
    else:
        diff(*args.runs)


if __name__ == "__main__":
    sys.exit(main())
