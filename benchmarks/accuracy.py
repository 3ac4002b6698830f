"""Benchmark: attribution accuracy over many simulated incidents, one table per case.

Run: .venv/bin/python benchmarks/accuracy.py [--nodes 64,288] [--seeds 15 | --incidents 500]
     [--cases link-down,flap,...] [--nccl-debug INFO,WARN,unset] [--workers 2] [--watchdog 600]
For every case (a member of `railtrace.simulate.Fault`; all of them by default), every fabric
size, every NCCL_DEBUG level (INFO by default) and every seed: simulate an incident with the
jobs' logs as that level prints them (and Slurm's `scontrol show job -d` in scheduler/),
replay it with the embedded core, and score each job's final verdict against the ground
truth (`truth.json`). A seed gives the same incident at every level, so the levels' tables
differ only by what the logs say. `--incidents N` spreads N
incidents evenly over cases x sizes (rounded up) instead of giving `--seeds`. Progress goes to
stderr. Prints one table per size and level, an "all sizes" table when more than one size ran, a
calibration table, and the totals: incidents, wall time, seconds per incident (each size's
header gives the mean seconds one incident takes in one worker). An incident that raises is
listed at the end, with where, and makes the exit status 1; the others are still scored.

A job is *affected* when the truth says it stalled or ran slow; the others are healthy. An
affected job is *fabric* when its culprit is a link or a node (GPU), and *non-fabric* when the
hang came from outside the fabric (`app-hang`: the only right answer is to blame nothing). A
*blame* is a verdict whose cause is a link or a node. Columns, one row per case:

- inc: incidents; aff: affected jobs (the denominator of the next four columns).
- state: the job was seen in its true state (stalled as STALLED, slow as SLOW).
- top-1: state right and the cause exactly the culprit (the link, or the node for gpu-xid);
  for a non-fabric job: state right and nothing blamed.
- top-3: the culprit is among the first three candidates (or top-1 holds); for a non-fabric
  job: nothing blamed. The state is not checked.
- n/l: node-vs-link: the verdict's cause kind (link, node, unknown) is the true one.
- side: the verdict's diagnosis names the failed side as the truth does (host NIC, switch
  port, optic, link errors, PFC source, GPU; nothing for a non-fabric job).
- fb-hlth: false blames on healthy jobs (blamed, or seen stalled/slow) / healthy jobs.
- fb-nonf: false blames on non-fabric jobs (anything blamed) / non-fabric jobs.
- wrong: blames on fabric jobs that name something other than the culprit / fabric jobs.
- cf-ok, cf-bad: mean confidence of the blames on affected jobs that were top-1 / were not
  (a verdict that blames nothing has confidence 0 and is left out).
- flt>v: median seconds from the fault that hit the job to its final verdict's decision time.
- p90: the 90th percentile of the same (nearest rank): the slow tail a median hides, such as
  faults decided only at the watchdog.
- lead: median seconds from that decision to the job's PyTorch watchdog firing (positive: the
  answer came first); slow jobs never hit the watchdog and are left out.
- <wd: share of the affected jobs with a watchdog that were decided before it fired.
The timing columns cover every affected job whatever its verdict; times are event time.

The calibration table bins the blames on affected jobs by confidence and gives the share that
were top-1 in each bin and the bin's mean confidence: a calibrated confidence of 0.9 is right
about 90% of the time. The expected calibration error is the bins' gap between the two,
weighted by their blames.

A job whose truth says the evidence cannot tell its culprit (`undecidable`, with the reason:
a slowdown of a job that prints no step line) is right only when its verdict blames nothing
or flags a tie that holds the culprit; the world run prints how many there were.

`--world` grades on randomized worlds (`railtrace.world`: fabric shapes, routing, vendors,
sampling, trainers, cadences, stamps, NCCL_DEBUG levels and faults drawn per seed, its traffic
routed by its own model of the switches, never by railtrace's) instead of the simulator:
`--nodes` takes sizes and `random` (each world draws its own), one table per size by fault
kind, then one per randomized dimension, the calibration table, and the count of blames at
confidence >= 0.6 that were wrong, and fault-to-verdict where the fault told at once (its
cable's state change or NCCL's transport error; the target is p90 <= 30 s at 10 s sampling).
`--results FILE` keeps each graded incident in a JSON-lines file stamped with the code's
version and skips those already there, so a long run can be stopped and resumed (never across
versions); `--calibrate` fits the calibration map (`attribution.judging.calibration`) on odd
seeds, scores it on even ones and back, and prints the knots fitted on every blame;
`--first-seed` grades fresh seeds. Run: .venv/bin/python benchmarks/accuracy.py --world
--nodes 64,288,random --incidents 1000 --workers 2 --results world-1000.jsonl --calibrate
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

# The scoring, the tables and the world run are the package benchmarks/grading/; this file is
# the command line. It is imported from the repository root as `benchmarks.grading`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.grading.runs import Progress, finish, replayed, where
from benchmarks.grading.score import JobScore
from benchmarks.grading.tables import Tally, calibration, format_calibration, format_table, tally
from benchmarks.grading.world import RANDOM
from benchmarks.grading.world_run import world_main
from railtrace.simulate import Fault, write_capture
from railtrace.simulate.logs import NCCL_DEBUG_LEVELS

Task = tuple[int, str, int, int, str]  # nodes, case, seed, watchdog, NCCL_DEBUG


@dataclass(frozen=True, slots=True)
class Incident:
    nodes: int
    case: str
    seed: int
    level: str
    scores: list[JobScore]
    seconds: float  # simulate + replay, in the worker


def run_one(task: Task) -> Incident:
    nodes, case, seed, watchdog, level = task
    started = time.perf_counter()
    _, scores = replayed(
        lambda work: write_capture(
            work, nodes, Fault(case), seed, watchdog_s=watchdog, nccl_debug=level
        )
    )
    return Incident(nodes, case, seed, level, scores, time.perf_counter() - started)


def _sizes(text: str) -> list[int]:
    """Node counts; `random` (0 here) draws each world's size, with --world only."""
    try:
        sizes = [0 if s.strip() == RANDOM else int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma list of node counts (or {RANDOM!r}): {text!r}"
        ) from None
    if not sizes or min(sizes) < 0:
        raise argparse.ArgumentTypeError(f"node counts must be positive: {text!r}")
    return list(dict.fromkeys(sizes))


def _one_or_more(text: str, known: Sequence[str], what: str, of: str) -> list[str]:
    """The comma list `text`, each a member of `known`, in order and without repeats."""
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; {of}: {', '.join(known)}"
        )
    return list(dict.fromkeys(chosen))


def _levels(text: str) -> list[str]:
    return _one_or_more(text, NCCL_DEBUG_LEVELS, "NCCL_DEBUG level(s)", "one or more of")


def _cases(text: str) -> list[str]:
    known = [str(f) for f in Fault]
    return _one_or_more(text, known, "case(s)", "the installed simulator knows")


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--nodes", type=_sizes, default=[64], help="comma list of fabric sizes")
    runs = ap.add_mutually_exclusive_group()
    runs.add_argument("--seeds", type=int, help="seeds per case per size (default 15)")
    runs.add_argument("--incidents", type=int, help="spread N incidents over cases x sizes")
    ap.add_argument(
        "--cases", type=_cases, default=[str(f) for f in Fault], help="comma list of cases"
    )
    ap.add_argument(
        "--nccl-debug",
        type=_levels,
        default=["INFO"],
        help="comma list of the jobs' NCCL_DEBUG levels: INFO, WARN, unset",
    )
    ap.add_argument(
        "--world",
        action="store_true",
        help="randomized worlds (railtrace.world) instead of the simulator: --nodes may say "
        "'random', --cases and --nccl-debug are drawn per world, tables are cut per dimension",
    )
    ap.add_argument(
        "--first-seed",
        type=int,
        default=1,
        help="--world: the first seed (fresh seeds grade a calibration map out of sample)",
    )
    ap.add_argument(
        "--results",
        type=Path,
        help="--world: a JSON-lines file of graded incidents; those it holds are not graded "
        "again and each new one is appended as it finishes, so a long run can stop and go on",
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="--world: fit a calibration map (held out by seed parity) and print it for the "
        "profile",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--watchdog", type=int, default=600, help="PyTorch watchdog timeout, s")
    args = ap.parse_args()
    if not args.world and (args.results or args.calibrate or args.first_seed != 1):
        ap.error("--results, --calibrate and --first-seed are for --world runs")
    if 0 in args.nodes and not args.world:
        ap.error(f"--nodes {RANDOM} needs --world: the simulator's fabrics have a fixed size")
    if args.incidents is not None:
        kinds = 1 if args.world else len(args.cases)
        args.seeds = math.ceil(args.incidents / (kinds * len(args.nodes)))
    elif args.seeds is None:
        args.seeds = 15
    if args.seeds < 1:
        ap.error("--seeds and --incidents must be at least 1")
    return args


def run_all(tasks: list[Task], workers: int) -> tuple[list[Incident], list[str]]:
    """Run the tasks in a process pool; the incidents in task order, and the failures."""
    progress = Progress(len(tasks))
    done: list[Incident] = []
    failed: list[str] = []
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(run_one, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                done.append(fut.result())
            except Exception as exc:  # keep the run going; report what failed at the end
                n, c, s, _, level = futures[fut]
                failed.append(f"{n} nodes {c} seed {s} NCCL_DEBUG={level}: {exc!r}{where(exc)}")
                progress.step(failed=True)
            else:
                progress.step()
    order = {(t[0], t[1], t[2], t[4]): i for i, t in enumerate(tasks)}
    done.sort(key=lambda r: order[(r.nodes, r.case, r.seed, r.level)])
    return done, failed


def main() -> None:
    args = _parse_args()
    if args.world:
        world_main(args)
        return
    sizes: list[int] = args.nodes
    cases: list[str] = args.cases
    levels: list[str] = args.nccl_debug
    # Seed-major order, so that the progress estimate sees every case, size and level early.
    tasks = [
        (n, c, s, args.watchdog, level)
        for s in range(1, args.seeds + 1)
        for n in sizes
        for c in cases
        for level in levels
    ]
    started = time.perf_counter()
    done, failed = run_all(tasks, args.workers)
    wall = time.perf_counter() - started

    def case_rows(incidents: Iterable[Incident]) -> dict[str, Tally]:
        rows = tally((r.case, r.scores) for r in incidents)
        return {c: rows[c] for c in cases if c in rows}

    print(
        f"watchdog {args.watchdog} s, {args.seeds} seeds per case per size, {args.workers} workers"
    )
    for level in levels:
        at_level = [r for r in done if r.level == level]
        for n in sizes:
            mine = [r for r in at_level if r.nodes == n]
            per = statistics.mean(r.seconds for r in mine) if mine else 0.0
            print(
                f"\n{n} nodes, NCCL_DEBUG={level}: {len(mine)} incidents, {per:.1f} s per "
                "incident in one worker"
            )
            print("\n".join(format_table(case_rows(mine))))
        if len(sizes) > 1:
            print(
                f"\nall sizes ({', '.join(map(str, sizes))} nodes), NCCL_DEBUG={level}: "
                f"{len(at_level)} incidents"
            )
            print("\n".join(format_table(case_rows(at_level))))
    for level in levels:
        print(f"\ncalibration: blames on affected jobs by confidence, NCCL_DEBUG={level}")
        scores = (s for r in done if r.level == level for s in r.scores)
        print("\n".join(format_calibration(calibration(scores))))
    finish(len(done), sum(len(r.scores) for r in done), wall, args.workers, failed)


if __name__ == "__main__":
    main()
