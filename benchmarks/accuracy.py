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
confidence >= 0.6 that were wrong. Run: .venv/bin/python benchmarks/accuracy.py --world
--nodes 64,288,random --incidents 1000 --workers 2
"""

from __future__ import annotations

import argparse
import bisect
import math
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.settings import Settings
from railtrace.simulate import Fault, write_capture
from railtrace.simulate.logs import NCCL_DEBUG_LEVELS
from railtrace.streams.records import CauseKind, JobState, LinkRef, Verdict
from railtrace.world.capture import write_world
from railtrace.world.dimensions import DIMENSION_NAMES

#: The job groups a score falls in.
FABRIC, NON_FABRIC, HEALTHY = "fabric", "non-fabric", "healthy"
#: `--nodes random`: each world draws its own size.
RANDOM = "random"
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
    #: The truth says the evidence cannot tell this job's culprit (see `_undecidable`).
    undecidable: bool = False

    @property
    def affected(self) -> bool:
        return self.group != HEALTHY


def _link_name(a: tuple[str, str], b: tuple[str, str]) -> str:
    """A cable named by its two ends, sorted: the simulator's link ids and the world's cable
    names are compared on what they are, not on how either spells an id."""
    return "--".join(sorted(f"{device}:{interface}" for device, interface in (a, b)))


def _culprit(want: dict[str, Any]) -> str | None:
    if want.get("cause") == "link":
        link = want.get("link") or {}
        if "a" in link and "b" in link:
            ends = link["a"], link["b"]
            return _link_name(*((e["device"], e["interface"]) for e in ends))
        return link.get("id")
    if want.get("cause") == "node":
        node: str | None = want.get("node")
        return node
    return None


def _ref_name(ref: LinkRef) -> str:
    return _link_name((ref.a.device, ref.a.interface), (ref.b.device, ref.b.interface))


def _blamed_name(v: Verdict) -> str | None:
    if v.cause_kind == CauseKind.LINK:
        return _ref_name(v.cause_link) if v.cause_link is not None else None
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
    if want.get("undecidable"):
        return _undecidable(job_id, group, want, v, culprit)
    if v is None:  # never seen: nothing right, nothing blamed
        no = False
        return JobScore(job_id, group, want["state"], seen, no, no, no, no, no, no, no, 0.0)
    if group == FABRIC:
        right = culprit is not None and v.cause_kind == cause and _blamed_name(v) == culprit
        names = [(str(c.kind), _ref_name(c.link) if c.link else c.node) for c in v.candidates[:3]]
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


def _undecidable(
    job_id: str, group: str, want: dict[str, Any], v: Verdict | None, culprit: str | None
) -> JobScore:
    """A job whose culprit the evidence cannot tell (the truth says why): right only when the
    verdict blames nothing, or flags a tie that holds the culprit."""
    seen = str(v.state) if v is not None else "missing"
    blamed = v is not None and v.cause_kind != CauseKind.UNKNOWN
    tied = set()
    if v is not None:
        refs = {c.link.link_id: c.link for c in v.candidates if c.link is not None}
        tied = {_ref_name(refs[t]) if t in refs else t for t in v.tied}
    right = not blamed or (culprit is not None and culprit in tied)
    return JobScore(
        job_id,
        group,
        want["state"],
        seen,
        blamed,
        state_ok=right,
        top1=right,
        top3=right,
        kind_ok=right,
        side_ok=right,
        false_blame=not right,
        confidence=v.confidence if v is not None else 0.0,
        undecidable=True,
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
    confidence: float = 0.0  # the mean confidence of the bin's blames

    @property
    def share(self) -> float | None:
        return self.right / self.blames if self.blames else None


def expected_calibration_error(bins: Sequence[CalibrationBin]) -> float | None:
    """The blames' mean gap between confidence and being right, bin by bin, weighted by the
    bins' sizes: 0 when blames at confidence c are right c of the time."""
    n = sum(b.blames for b in bins)
    if not n:
        return None
    return sum(b.blames / n * abs((b.share or 0.0) - b.confidence) for b in bins if b.blames)


def calibration(scores: Iterable[JobScore]) -> list[CalibrationBin]:
    """Blames on affected jobs binned by confidence, with how many of each bin were top-1."""
    counts: list[list[float]] = [[0, 0, 0.0] for _ in range(len(CALIBRATION_EDGES) + 1)]
    for s in scores:
        if s.affected and s.blamed:
            b = counts[bisect.bisect_right(CALIBRATION_EDGES, s.confidence)]
            b[0] += 1
            b[1] += s.top1
            b[2] += s.confidence
    edges = (0.0, *CALIBRATION_EDGES, 1.0)
    return [
        CalibrationBin(edges[i], edges[i + 1], int(n), int(r), c / n if n else 0.0)
        for i, (n, r, c) in enumerate(counts)
    ]


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
    ("p90", 5),
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


def nearest_rank(xs: Sequence[float], q: float) -> float:
    """The q-quantile by nearest rank: a value that occurred, as with few incidents an
    interpolated one would be a time no job took."""
    ordered = sorted(xs)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _p90(xs: Sequence[float]) -> str:
    return str(round(nearest_rank(xs, 0.9))) if xs else "-"


def format_row(case: str, t: Tally, first_width: int = COLUMNS[0][1]) -> str:
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
        _p90(t.after_fault),
        _median(t.lead),
        f"{sum(t.before_watchdog) / len(t.before_watchdog):.0%}" if t.before_watchdog else "-",
    )
    first, *rest = zip(cells, (w for _, w in COLUMNS), strict=True)
    return " ".join([f"{first[0]:<{first_width}}", *(f"{c:>{w}}" for c, w in rest)])


def format_table(rows: dict[str, Tally]) -> list[str]:
    (name, width), *rest = COLUMNS
    width = max([width, *(len(case) for case in rows)])
    head = " ".join([f"{name:<{width}}", *(f"{n:>{w}}" for n, w in rest)])
    lines = [head, *(format_row(case, t, width) for case, t in rows.items())]
    lines.append(format_row("total", total(rows.values()), width))
    return lines


def format_calibration(bins: Sequence[CalibrationBin]) -> list[str]:
    lines = [f"{'confidence':<12} {'blames':>7} {'top-1':>6} {'share':>6} {'mean cf':>7}"]
    for b in bins:
        share = f"{b.share:.0%}" if b.share is not None else "-"
        mean = f"{b.confidence:.2f}" if b.blames else "-"
        close = "]" if b.high >= 1.0 else ")"
        label = f"[{b.low:.1f}, {b.high:.1f}{close}"
        lines.append(f"{label:<12} {b.blames:>7} {b.right:>6} {share:>6} {mean:>7}")
    ece = expected_calibration_error(bins)
    lines.append(f"expected calibration error: {ece:.3f}" if ece is not None else "no blames")
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


def _replayed(write: Callable[[Path], dict[str, Any]]) -> tuple[dict[str, Any], list[JobScore]]:
    """Write one capture with `write` (which returns its truth) into a scratch folder, replay
    it and score it. The attribution profile is read as a deployment reads it
    (RAILTRACE_ATTRIBUTION__... or the config file), so a changed setting is measured by the
    same run; the site's zone is the capture's own when its truth names one (a world's)."""
    work = Path(tempfile.mkdtemp(prefix="railtrace-acc-"))
    try:
        truth = write(work)
        settings = Settings()
        zone = truth.get("site_zone")
        report = replay(
            open_capture(work),
            DiscardSink(),
            profile=settings.attribution,
            local=ZoneInfo(zone) if zone else settings.site.zone,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return truth, score_incident(truth, report.verdicts)


def run_one(task: Task) -> Incident:
    nodes, case, seed, watchdog, level = task
    started = time.perf_counter()
    _, scores = _replayed(
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
    ap.add_argument(
        "--world",
        action="store_true",
        help="randomized worlds (railtrace.world) instead of the simulator: --nodes may say "
        "'random', --cases and --nccl-debug are drawn per world, tables are cut per dimension",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--watchdog", type=int, default=600, help="PyTorch watchdog timeout, s")
    args = ap.parse_args()
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


def _finish(incidents: int, jobs: int, wall: float, workers: int, failed: list[str]) -> None:
    """The totals line, then the incidents that raised (and exit status 1 if any did)."""
    per_incident = wall / incidents if incidents else float("nan")
    print(
        f"\n{incidents} incidents ({jobs} job verdicts), {wall:.0f} s wall, "
        f"{per_incident:.1f} s per incident with {workers} workers"
    )
    if failed:
        print(f"{len(failed)} incidents failed:", *failed, sep="\n  ", file=sys.stderr)
        sys.exit(1)


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
    _finish(len(done), sum(len(r.scores) for r in done), wall, args.workers, failed)


# --- randomized worlds ------------------------------------------------------------------

WorldTask = tuple[int, int, int]  # nodes (0: drawn), seed, watchdog
#: No blame at this confidence or above may be wrong (the target).
CONFIDENT = 0.6


@dataclass(frozen=True, slots=True)
class WorldIncident:
    size: str  # the --nodes entry it ran under ("64", "random")
    nodes: int
    seed: int
    fault: str
    buckets: dict[str, str]
    scores: list[JobScore]
    seconds: float


def run_world(task: WorldTask) -> WorldIncident:
    nodes, seed, watchdog = task
    started = time.perf_counter()
    truth, scores = _replayed(
        lambda work: write_world(work, seed, nodes or None, watchdog_s=watchdog)
    )
    dims = truth["dimensions"]
    return WorldIncident(
        str(nodes) if nodes else RANDOM,
        dims["nodes"],
        seed,
        dims["fault"],
        truth["buckets"],
        scores,
        time.perf_counter() - started,
    )


def _bucket_order(label: str) -> tuple[float, str]:
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


def world_main(args: argparse.Namespace) -> None:
    sizes: list[int] = args.nodes
    tasks: list[WorldTask] = [
        (n, seed, args.watchdog) for seed in range(1, args.seeds + 1) for n in sizes
    ]
    progress = _Progress(len(tasks))
    done: list[WorldIncident] = []
    failed: list[str] = []
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {pool.submit(run_world, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                done.append(fut.result())
            except Exception as exc:
                n, seed, _ = futures[fut]
                failed.append(f"{n or RANDOM} nodes seed {seed}: {exc!r}{_where(exc)}")
                progress.step(failed=True)
            else:
                progress.step()
    wall = time.perf_counter() - started
    done.sort(key=lambda r: (sizes.index(int(r.size) if r.size != RANDOM else 0), r.seed))
    print(f"randomized worlds: watchdog {args.watchdog} s, {args.seeds} seeds per size")
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
        ordered = sorted(done, key=lambda r: _bucket_order(r.buckets[dim]))
        rows = tally((r.buckets[dim], r.scores) for r in ordered)
        print(f"\nby {dim}")
        print("\n".join(format_table(rows)))
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
    _finish(len(done), len(every), wall, args.workers, failed)


if __name__ == "__main__":
    main()
