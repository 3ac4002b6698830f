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
- lead: median seconds from that decision to the job's PyTorch watchdog firing (positive: the
  answer came first); slow jobs never hit the watchdog and are left out.
- <wd: share of the affected jobs with a watchdog that were decided before it fired.
The timing columns cover every affected job whatever its verdict; times are event time.

The calibration table bins the blames on affected jobs by confidence and gives the share that
were top-1 in each bin: a calibrated confidence of 0.9 is right about 90% of the time.
"""

from __future__ import annotations

import argparse
import bisect
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.settings import Settings
from railtrace.simulate import Fault, write_capture
from railtrace.simulate.logs import NCCL_DEBUG_LEVELS
from railtrace.streams.records import CauseKind, JobState, Verdict

#: The job groups a score falls in.
FABRIC, NON_FABRIC, HEALTHY = "fabric", "non-fabric", "healthy"
#: Lower edges of the calibration bins after the first: [0, .2), [.2, .4), ..., [.8, 1].
CALIBRATION_EDGES = (0.2, 0.4, 0.6, 0.8)
NS = 1e9


@dataclass(frozen=True, slots=True)
class JobScore:
    """One job's final verdict against the truth.

    `top1`, `top3` and `kind_ok` only mean something for affected jobs (False for healthy ones);
    the times are None when either end is unknown.
    """

    job_id: str
    group: str  # FABRIC, NON_FABRIC or HEALTHY
    truth_state: str  # "stalled", "slow", "healthy"
    seen_state: str  # the verdict's state, "missing" when the job got no verdict
    blamed: bool
    state_ok: bool
    top1: bool
    top3: bool
    kind_ok: bool
    side_ok: bool
    false_blame: bool
    confidence: float
    after_fault_s: float | None = None
    lead_s: float | None = None
    before_watchdog: bool | None = None

    @property
    def affected(self) -> bool:
        return self.group != HEALTHY


def _culprit(want: dict[str, Any]) -> str | None:
    if want.get("cause") == "link":
        return (want.get("link") or {}).get("id")
    if want.get("cause") == "node":
        node: str | None = want.get("node")
        return node
    return None


def _blamed_name(v: Verdict) -> str | None:
    if v.cause_kind == CauseKind.LINK:
        return v.cause_link.link_id if v.cause_link is not None else None
    if v.cause_kind == CauseKind.NODE:
        return v.cause_node
    return None


def score_job(truth: dict[str, Any], job_id: str, v: Verdict | None) -> JobScore:
    """Score one job's verdict (None: the job got none) against `truth["jobs"][job_id]`."""
    want = truth["jobs"][job_id]
    seen = str(v.state) if v is not None else "missing"
    blamed = v is not None and v.cause_kind != CauseKind.UNKNOWN
    confidence = v.confidence if v is not None else 0.0
    if want["state"] == "healthy":
        return JobScore(
            job_id,
            HEALTHY,
            "healthy",
            seen,
            blamed,
            state_ok=seen in (JobState.HEALTHY, JobState.UNKNOWN),
            top1=False,
            top3=False,
            kind_ok=False,
            side_ok=False,
            false_blame=blamed or seen in (JobState.STALLED, JobState.SLOW),
            confidence=confidence,
        )
    cause = want.get("cause") or "unknown"
    group = FABRIC if cause in ("link", "node") else NON_FABRIC
    culprit = _culprit(want)
    state_ok = seen == want["state"]
    if v is None:  # never seen: nothing right, nothing blamed
        no = False
        return JobScore(job_id, group, want["state"], seen, no, no, no, no, no, no, no, 0.0)
    if group == FABRIC:
        right = culprit is not None and v.cause_kind == cause and _blamed_name(v) == culprit
        names = [(str(c.kind), c.link.link_id if c.link else c.node) for c in v.candidates[:3]]
        top1 = state_ok and right
        top3 = top1 or (culprit is not None and (cause, culprit) in names)
    else:
        right = not blamed
        top1 = state_ok and right
        top3 = right
    fault_at = want.get("fault_at_ns")
    if fault_at is None:
        fault_at = truth.get("fault_at_ns")
    watchdog_at = want.get("watchdog_at_ns")
    decided = v.decided_at_ns
    return JobScore(
        job_id,
        group,
        want["state"],
        seen,
        blamed,
        state_ok=state_ok,
        top1=top1,
        top3=top3,
        kind_ok=v.cause_kind == cause,
        side_ok=v.diagnosis == (want.get("diagnosis") or ""),
        false_blame=blamed and not right,
        confidence=confidence,
        after_fault_s=(decided - fault_at) / NS
        if decided is not None and fault_at is not None
        else None,
        lead_s=(watchdog_at - decided) / NS
        if decided is not None and watchdog_at is not None
        else None,
        before_watchdog=decided < watchdog_at
        if decided is not None and watchdog_at is not None
        else None,
    )


def score_incident(truth: dict[str, Any], verdicts: Sequence[Verdict]) -> list[JobScore]:
    """Score every job of the truth, in job id order. A job without a verdict scores as unseen;
    a verdict for a job the truth does not know is ignored."""
    by_job = {v.job_id: v for v in verdicts}
    return [score_job(truth, job_id, by_job.get(job_id)) for job_id in sorted(truth["jobs"])]


@dataclass(slots=True)
class Tally:
    """The sums behind one table row (one case, or the total)."""

    incidents: int = 0
    affected: int = 0
    state_ok: int = 0
    top1: int = 0
    top3: int = 0
    kind_ok: int = 0
    side_ok: int = 0
    healthy: int = 0
    healthy_blamed: int = 0
    non_fabric: int = 0
    non_fabric_blamed: int = 0
    fabric: int = 0
    fabric_wrong: int = 0
    conf_right: list[float] = field(default_factory=list)
    conf_wrong: list[float] = field(default_factory=list)
    after_fault: list[float] = field(default_factory=list)
    lead: list[float] = field(default_factory=list)
    before_watchdog: list[bool] = field(default_factory=list)

    def add(self, scores: Iterable[JobScore]) -> None:
        """Add one incident's job scores."""
        self.incidents += 1
        for s in scores:
            if s.group == HEALTHY:
                self.healthy += 1
                self.healthy_blamed += s.false_blame
                continue
            self.affected += 1
            self.state_ok += s.state_ok
            self.top1 += s.top1
            self.top3 += s.top3
            self.kind_ok += s.kind_ok
            self.side_ok += s.side_ok
            if s.group == FABRIC:
                self.fabric += 1
                self.fabric_wrong += s.false_blame
            else:
                self.non_fabric += 1
                self.non_fabric_blamed += s.false_blame
            if s.blamed:
                (self.conf_right if s.top1 else self.conf_wrong).append(s.confidence)
            if s.after_fault_s is not None:
                self.after_fault.append(s.after_fault_s)
            if s.lead_s is not None:
                self.lead.append(s.lead_s)
            if s.before_watchdog is not None:
                self.before_watchdog.append(s.before_watchdog)


def tally(incidents: Iterable[tuple[str, Sequence[JobScore]]]) -> dict[str, Tally]:
    """Per-case tallies of (case, job scores) pairs, in first-seen case order."""
    rows: dict[str, Tally] = {}
    for case, scores in incidents:
        rows.setdefault(case, Tally()).add(scores)
    return rows


def total(rows: Iterable[Tally]) -> Tally:
    out = Tally()
    for r in rows:
        for name in Tally.__slots__:
            setattr(out, name, getattr(out, name) + getattr(r, name))
    return out


@dataclass(frozen=True, slots=True)
class CalibrationBin:
    low: float
    high: float
    blames: int
    right: int

    @property
    def share(self) -> float | None:
        return self.right / self.blames if self.blames else None


def calibration(scores: Iterable[JobScore]) -> list[CalibrationBin]:
    """Blames on affected jobs binned by confidence, with how many of each bin were top-1."""
    counts = [[0, 0] for _ in range(len(CALIBRATION_EDGES) + 1)]
    for s in scores:
        if s.affected and s.blamed:
            b = counts[bisect.bisect_right(CALIBRATION_EDGES, s.confidence)]
            b[0] += 1
            b[1] += s.top1
    edges = (0.0, *CALIBRATION_EDGES, 1.0)
    return [CalibrationBin(edges[i], edges[i + 1], n, r) for i, (n, r) in enumerate(counts)]


# --- formatting ---------------------------------------------------------------------------

COLUMNS = (
    ("case", 10),
    ("inc", 4),
    ("aff", 4),
    ("state", 8),
    ("top-1", 8),
    ("top-3", 8),
    ("n/l", 8),
    ("side", 8),
    ("fb-hlth", 7),
    ("fb-nonf", 7),
    ("wrong", 7),
    ("cf-ok", 5),
    ("cf-bad", 6),
    ("flt>v", 5),
    ("lead", 5),
    ("<wd", 4),
)


def _count(n: int, of: int) -> str:
    return f"{n} {n / of:.0%}" if of else "-"


def _frac(n: int, of: int) -> str:
    return f"{n}/{of}" if of else "-"


def _mean(xs: Sequence[float]) -> str:
    return f"{statistics.mean(xs):.2f}" if xs else "-"


def _median(xs: Sequence[float]) -> str:
    return str(round(statistics.median(xs))) if xs else "-"  # round: no "-0"


def format_row(case: str, t: Tally) -> str:
    cells = (
        case,
        str(t.incidents),
        str(t.affected),
        _count(t.state_ok, t.affected),
        _count(t.top1, t.affected),
        _count(t.top3, t.affected),
        _count(t.kind_ok, t.affected),
        _count(t.side_ok, t.affected),
        _frac(t.healthy_blamed, t.healthy),
        _frac(t.non_fabric_blamed, t.non_fabric),
        _frac(t.fabric_wrong, t.fabric),
        _mean(t.conf_right),
        _mean(t.conf_wrong),
        _median(t.after_fault),
        _median(t.lead),
        f"{sum(t.before_watchdog) / len(t.before_watchdog):.0%}" if t.before_watchdog else "-",
    )
    first, *rest = zip(cells, (w for _, w in COLUMNS), strict=True)
    return " ".join([f"{first[0]:<{first[1]}}", *(f"{c:>{w}}" for c, w in rest)])


def format_table(rows: dict[str, Tally]) -> list[str]:
    (name, width), *rest = COLUMNS
    head = " ".join([f"{name:<{width}}", *(f"{n:>{w}}" for n, w in rest)])
    lines = [head, *(format_row(case, t) for case, t in rows.items())]
    lines.append(format_row("total", total(rows.values())))
    return lines


def format_calibration(bins: Sequence[CalibrationBin]) -> list[str]:
    lines = [f"{'confidence':<12} {'blames':>7} {'top-1':>6} {'share':>6}"]
    for b in bins:
        share = f"{b.share:.0%}" if b.share is not None else "-"
        close = "]" if b.high >= 1.0 else ")"
        label = f"[{b.low:.1f}, {b.high:.1f}{close}"
        lines.append(f"{label:<12} {b.blames:>7} {b.right:>6} {share:>6}")
    return lines


# --- running ------------------------------------------------------------------------------


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
    work = Path(tempfile.mkdtemp(prefix="railtrace-acc-"))
    try:
        truth = write_capture(work, nodes, Fault(case), seed, watchdog_s=watchdog, nccl_debug=level)
        # The attribution profile as a deployment reads it (RAILTRACE_ATTRIBUTION__... or the
        # config file), so a changed setting is measured by the same run.
        settings = Settings()
        report = replay(
            open_capture(work),
            DiscardSink(),
            profile=settings.attribution,
            local=settings.site.zone,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    scores = score_incident(truth, report.verdicts)
    return Incident(nodes, case, seed, level, scores, time.perf_counter() - started)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of node counts: {text!r}") from None
    if not sizes or min(sizes) < 1:
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


class _Progress:
    """A count line on stderr: rewritten in place on a terminal, one line per step otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.started = time.perf_counter()
        self.tty = sys.stderr.isatty()

    def step(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        spent = time.perf_counter() - self.started
        left = spent / self.done * (self.total - self.done)
        fails = f", {self.failed} failed" if self.failed else ""
        line = f"{self.done}/{self.total} incidents{fails}, {spent:.0f} s, ~{left:.0f} s left"
        end = "\n" if not self.tty or self.done == self.total else ""
        print(("\r" if self.tty else "") + line, end=end, file=sys.stderr, flush=True)


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
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--watchdog", type=int, default=600, help="PyTorch watchdog timeout, s")
    args = ap.parse_args()
    if args.incidents is not None:
        args.seeds = math.ceil(args.incidents / (len(args.cases) * len(args.nodes)))
    elif args.seeds is None:
        args.seeds = 15
    if args.seeds < 1:
        ap.error("--seeds and --incidents must be at least 1")
    return args


def _where(exc: BaseException) -> str:
    """Where a worker's exception was raised: the last frame of the remote traceback."""
    frames = [ln.strip() for ln in str(exc.__cause__ or "").splitlines() if "File " in ln]
    return f" at {frames[-1]}" if frames else ""


def run_all(tasks: list[Task], workers: int) -> tuple[list[Incident], list[str]]:
    """Run the tasks in a process pool; the incidents in task order, and the failures."""
    progress = _Progress(len(tasks))
    done: list[Incident] = []
    failed: list[str] = []
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(run_one, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                done.append(fut.result())
            except Exception as exc:  # keep the run going; report what failed at the end
                n, c, s, _, level = futures[fut]
                failed.append(f"{n} nodes {c} seed {s} NCCL_DEBUG={level}: {exc!r}{_where(exc)}")
                progress.step(failed=True)
            else:
                progress.step()
    order = {(t[0], t[1], t[2], t[4]): i for i, t in enumerate(tasks)}
    done.sort(key=lambda r: order[(r.nodes, r.case, r.seed, r.level)])
    return done, failed


def main() -> None:
    args = _parse_args()
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
    jobs = sum(len(r.scores) for r in done)
    per_incident = wall / len(done) if done else float("nan")
    print(
        f"\n{len(done)} incidents ({jobs} job verdicts), {wall:.0f} s wall, "
        f"{per_incident:.1f} s per incident with {args.workers} workers"
    )
    if failed:
        print(f"{len(failed)} incidents failed:", *failed, sep="\n  ", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
