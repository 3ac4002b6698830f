"""The `--world` run: grade the seeds' worlds in a process pool (resuming from a results file
when given one) and print the tables by size, by fault kind and by randomized dimension, the
fault-to-verdict figures where the evidence is prompt, and the calibration."""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from benchmarks.grading.calibrate import blames, fit, format_knots, held_out
from benchmarks.grading.runs import Progress, finish, where
from benchmarks.grading.score import JobScore
from benchmarks.grading.tables import (
    calibration,
    format_calibration,
    format_table,
    nearest_rank,
    tally,
)
from benchmarks.grading.world import (
    RANDOM,
    Results,
    WorldIncident,
    WorldTask,
    code_version,
    run_world,
)
from railtrace.world.dimensions import DIMENSION_NAMES

#: No blame at this confidence or above may be wrong (the target).
CONFIDENT = 0.6
#: Prompt evidence: what the fault-to-verdict target holds for (a cable's state change, NCCL's
#: transport error), at the sampling interval it is stated for.
PROMPT = ("link-state", "nccl")
PROMPT_SAMPLING_S = 10
PROMPT_TARGET_P90_S = 30


def bucket_order(label: str) -> tuple[float, str]:
    """Range labels ("<=1s", "1-5s", ">60s") by their numbers, other labels by name."""
    m = re.match(r"(<=|>)?(\d+(?:\.\d+)?)", label)
    if m is None:
        return (math.inf, label)
    value = float(m.group(2))
    return (
        value - 0.5 if m.group(1) == "<=" else value + 0.5 if m.group(1) == ">" else value,
        label,
    )


def confident_wrong(scores: Iterable[JobScore]) -> tuple[int, int]:
    """(wrong, all) blames at confidence >= CONFIDENT: wrong is a blame on a healthy job or a
    blame that is not top-1."""
    wrong = every = 0
    for s in scores:
        if s.blamed and s.confidence >= CONFIDENT:
            every += 1
            wrong += not s.top1
    return wrong, every


def prompt_lines(done: Sequence[WorldIncident]) -> list[str]:
    """Fault-to-verdict of the affected jobs whose fault left prompt evidence, one row per
    sampling interval, and the target's own row (10 s sampling)."""
    by_interval: dict[int, list[float]] = {}
    for r in done:
        for s in r.scores:
            if s.affected and s.after_fault_s is not None and set(s.evidence) & set(PROMPT):
                by_interval.setdefault(r.sample_s, []).append(s.after_fault_s)
    lines = [f"{'sampling':<10} {'jobs':>5} {'flt>v':>6} {'p90':>6} {'max':>6}"]
    for interval in sorted(by_interval):
        xs = by_interval[interval]
        lines.append(
            f"{f'{interval} s':<10} {len(xs):>5} {round(statistics.median(xs)):>6} "
            f"{round(nearest_rank(xs, 0.9)):>6} {round(max(xs)):>6}"
        )
    target = by_interval.get(PROMPT_SAMPLING_S, [])
    if target:
        p90 = nearest_rank(target, 0.9)
        held = "met" if p90 <= PROMPT_TARGET_P90_S else "NOT met"
        lines.append(
            f"target p90 <= {PROMPT_TARGET_P90_S} s at {PROMPT_SAMPLING_S} s sampling: "
            f"{round(p90)} s over {len(target)} jobs, {held}"
        )
    else:
        lines.append(f"no job with prompt evidence at {PROMPT_SAMPLING_S} s sampling")
    return lines


def calibration_lines(done: Sequence[WorldIncident]) -> list[str]:
    """The map fitted on odd seeds scored on even ones and the other way round, then the knots
    fitted on every blame, for the profile."""
    odd = [s for r in done if r.seed % 2 for s in r.scores]
    even = [s for r in done if not r.seed % 2 for s in r.scores]
    lines = []
    for name, fit_on, score_on in (("odd", odd, even), ("even", even, odd)):
        h = held_out(fit_on, score_on)
        before = f"{h.ece_before:.3f}" if h.ece_before is not None else "-"
        after = f"{h.ece_after:.3f}" if h.ece_after is not None else "-"
        lines.append(
            f"fitted on the {name} seeds ({h.fitted_on} blames), scored on the others "
            f"({h.scored_on}): expected calibration error {before} as replayed, {after} mapped"
        )
    every = [s for r in done for s in r.scores]
    lines.append("fitted on every blame, for [attribution.judging]:")
    lines.append(format_knots(fit(blames(every))))
    return lines


def _run(
    tasks: list[WorldTask], workers: int, results: Results | None, version: str
) -> tuple[list[WorldIncident], list[str]]:
    progress = Progress(len(tasks))
    done: list[WorldIncident] = []
    failed: list[str] = []
    if not tasks:
        return done, failed
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(run_world, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                incident = fut.result()
            except Exception as exc:
                n, seed, _ = futures[fut]
                failed.append(f"{n or RANDOM} nodes seed {seed}: {exc!r}{where(exc)}")
                progress.step(failed=True)
                continue
            done.append(incident)
            if results is not None:
                results.append(incident, version)
            progress.step()
    return done, failed


def world_main(args: argparse.Namespace) -> None:
    sizes: list[int] = args.nodes
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks: list[WorldTask] = [(n, seed, args.watchdog) for seed in seeds for n in sizes]
    version = code_version(Path(__file__).resolve().parents[2])
    results = Results.load(args.results) if args.results else None
    held: list[WorldIncident] = []
    if results is not None:
        held = results.of(tasks)
        todo = [t for t in tasks if t not in results.incidents]
        others = results.version_set(tasks) - {version}
        if todo and others:
            sys.exit(
                f"{args.results} holds {len(held)} of these incidents graded by "
                f"{', '.join(sorted(others))}, not by this code ({version}): grading the other "
                f"{len(todo)} here would mix two versions in one table; give a new results file"
            )
        if results.unreadable:
            print(
                f"{args.results}: {results.unreadable} unreadable line(s) (a run killed while "
                "writing); their incidents are graded again",
                file=sys.stderr,
            )
        print(
            f"{args.results}: {len(held)} of {len(tasks)} incidents already graded, "
            f"{len(todo)} to grade",
            file=sys.stderr,
        )
    else:
        todo = tasks
    started = time.perf_counter()
    new, failed = _run(todo, args.workers, results, version)
    wall = time.perf_counter() - started
    done = sorted(
        [*held, *new], key=lambda r: (sizes.index(0 if r.size == RANDOM else int(r.size)), r.seed)
    )
    graded_by = sorted(results.version_set(tasks)) if results is not None else [version]
    print(
        f"randomized worlds: watchdog {args.watchdog} s, seeds {seeds.start}-{seeds.stop - 1} "
        f"per size, graded by {', '.join(graded_by)}"
    )
    _print_tables(done, sizes)
    if args.calibrate:
        print("\ncalibration map (isotonic, Laplace-smoothed), held out by seed parity")
        print("\n".join(calibration_lines(done)))
    every = [s for r in done for s in r.scores]
    finish(len(done), len(every), wall, args.workers, failed, graded=len(new))


def _print_tables(done: Sequence[WorldIncident], sizes: Sequence[int]) -> None:
    for n in sizes:
        label = str(n) if n else RANDOM
        mine = [r for r in done if r.size == label]
        if not mine:
            continue
        per = statistics.mean(r.seconds for r in mine)
        spread = (
            f", {min(r.nodes for r in mine)}-{max(r.nodes for r in mine)} nodes" if not n else ""
        )
        print(f"\n{label} nodes{spread}: {len(mine)} incidents, {per:.1f} s per incident")
        print("\n".join(format_table(tally((r.fault, r.scores) for r in mine))))
    if len(sizes) > 1:
        print(f"\nall sizes: {len(done)} incidents")
        print("\n".join(format_table(tally((r.fault, r.scores) for r in done))))
    for dim in DIMENSION_NAMES:
        ordered = sorted(done, key=lambda r: bucket_order(r.buckets[dim]))
        rows = tally((r.buckets[dim], r.scores) for r in ordered)
        print(f"\nby {dim}")
        print("\n".join(format_table(rows)))
    print(f"\nfault to verdict where the evidence is prompt ({' or '.join(PROMPT)}), event time")
    print("\n".join(prompt_lines(done)))
    every = [s for r in done for s in r.scores]
    print("\ncalibration: blames on affected jobs by confidence")
    print("\n".join(format_calibration(calibration(every))))
    wrong, confident = confident_wrong(every)
    print(f"blames at confidence >= {CONFIDENT}: {confident}, wrong: {wrong}")
    undecidable = [s for s in every if s.undecidable]
    affected = [s for s in every if s.affected]
    print(
        f"undecidable (the evidence cannot tell; right only as unknown or a flagged tie): "
        f"{len(undecidable)} of {len(affected)} affected jobs, {sum(s.top1 for s in undecidable)} "
        "answered so"
    )
