"""Job scores summed into table rows and a calibration table, and printed as the benchmark's
tables."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from benchmarks.grading.score import FABRIC, HEALTHY, JobScore

#: Lower edges of the calibration bins after the first: [0, .2), [.2, .4), ..., [.8, 1].
CALIBRATION_EDGES = (0.2, 0.4, 0.6, 0.8)


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
