"""A job's pace from its step reports: whether it slowed down, and whether it stopped.

The logs say a job hung only when PyTorch's watchdog gives up (ten minutes by default) and
never say that it slowed; the step reports say both much earlier. Judged against the job's own
normal pace, never an absolute figure, so one rule fits a 7-second and a 140-second step.
Bounded in size, so a job followed for weeks keeps a fixed-size state in a changelog.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from railtrace.streams.records import Progress


class PaceRules(BaseModel):
    """How step reports are read: the `attribution.pace` section of the settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    warmup_reports: int = Field(
        default=2,
        ge=0,
        description="First reports skipped: compilation, data loader warm-up and the first "
        "checkpoint make them slow on a healthy job...",
    )
    warmup_steps: int = Field(
        default=50,
        ge=0,
        description="...the first always, the later ones only while they are this few steps "
        "after the first: a trainer reporting every 100 steps is past its warm-up by its "
        "second report, and skipping two would leave it unjudged for hours.",
    )
    baseline_reports: int = Field(
        default=12,
        ge=1,
        description="Reports after the warm-up whose median is the job's normal pace and "
        "whose spread is its jitter. Twelve, not eight: the bars below are drawn from that "
        "spread, and eight reports put it under 0.6 of the true one a fifth of the time "
        "(twelve: a seventh)...",
    )
    min_baseline_reports: int = Field(
        default=2,
        ge=1,
        description="...judged against as soon as this many are in; until the baseline is "
        "full a report that is not slow joins it and a slow one counts as slow, so a sparse "
        "reporter (one report in ten minutes) is judged within the hour, not after two. Two, "
        "not three: a report the baseline takes in is never judged, and at Megatron's and "
        "NeMo's default of a report per 100 steps a fault in a job's first hour was learnt "
        "as its normal pace.",
    )
    slow_ratio: float = Field(
        default=1.2,
        gt=1.0,
        description="A report at least this much slower than normal is a slow one, however "
        "much the job's own reports vary...",
    )
    min_slow_ratio: float = Field(
        default=1.05,
        gt=1.0,
        description="...and once the baseline is full, one this much slower already is when "
        "the job's reports vary little: a gray link slows a job by 5-20% (its share of "
        "communication time), which a fixed 1.2 never saw on a steady trainer...",
    )
    noise_multiple: float = Field(
        default=4.0,
        gt=0,
        description="...the bar between the two being normal plus this many times the spread "
        "of the job's baseline reports (1.4826 x their median absolute deviation, robust to "
        "an evaluation pass among them), so a noisy job needs a larger slowdown than a "
        "steady one.",
    )
    slow_reports: int = Field(
        default=3,
        ge=1,
        description="Consecutive slow reports that make a slowdown: one or two are a hiccup "
        "(an evaluation pass, a checkpoint save), three in a row are how a gray link shows...",
    )
    shift_reports: int = Field(
        default=7,
        ge=2,
        description="...or the median of this many latest reports is past its own bar: a link "
        "losing a few frames slows a job by 5-10%, inside its reports' jitter, so no three "
        "reports in a row need clear the bar while every one of them is slower than before...",
    )
    shift_noise_multiple: float = Field(
        default=5.0,
        gt=0,
        description="...that bar being normal plus this many standard errors of a median of "
        "that many reports (1.25 x the spread / sqrt(n)), never under min_slow_ratio nor over "
        "slow_ratio: five, not four, since the median is tried afresh at every report of a "
        "job that runs for weeks (about one false slowdown in a million reports for Gaussian "
        "jitter). The median reads only reports since the last slowdown ended.",
    )
    recent_reports: int = Field(
        default=16,
        ge=4,
        description="Recent report times kept, enough to know the reporting interval and the "
        "last report.",
    )
    overdue_intervals: float = Field(
        default=3.0,
        gt=1.0,
        description="A job is overdue when no report came for this many of its usual intervals...",
    )
    overdue_min_s: float = Field(
        default=30.0,
        ge=0,
        description="...and at least this long, so a job reporting every second is not "
        "overdue after three.",
    )

    @model_validator(mode="after")
    def _bars_in_order(self) -> PaceRules:
        if self.min_slow_ratio > self.slow_ratio:
            raise ValueError(
                f"min_slow_ratio {self.min_slow_ratio} is above slow_ratio {self.slow_ratio}: "
                "the least slowdown ever judged slow cannot exceed the one always judged slow"
            )
        return self


DEFAULT_RULES = PaceRules()
NS = 1_000_000_000


#: What a job's pace is measured in: the time per step, or the inverse of its throughput.
STEP_TIME, THROUGHPUT = "step_ms", "tokens_per_s"


def measure_of(p: Progress) -> str | None:
    """The measure a report gives, the step time first when it gives both."""
    if p.step_ms is not None:
        return STEP_TIME
    if p.tokens_per_s:
        return THROUGHPUT
    return None


def pace_of(p: Progress, measure: str) -> float | None:
    """Time per unit of work in `measure`, larger when slower; None when the report lacks it."""
    if measure == STEP_TIME:
        return p.step_ms
    return 1e9 / p.tokens_per_s if p.tokens_per_s else None


@dataclass(slots=True)
class Pace:
    """Step reports of one job, taken in time order (a report older than the newest is ignored:
    trainers print from one rank, so they arrive in order)."""

    seen: int = 0
    first_step: int | None = None  # the step of the first report: the warm-up counts from it
    baseline: list[float] = field(default_factory=list)
    recent: list[int] = field(default_factory=list)  # report times, oldest first
    #: The paces of the latest of `recent` (since the last slowdown ended), oldest first.
    values: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)  # the step each of `recent` reported
    run_start_ns: int | None = None  # first report of the current run of slow ones
    run_len: int = 0
    slow_since_ns: int | None = None  # start of a slowdown, once enough slow reports confirmed it
    slow_confirmed_ns: int | None = None  # the report that confirmed it
    last_ratio: float = 0.0
    peak_ratio: float = 0.0
    finished: bool = False  # the last report was the run's last step: silence is expected
    # The last report before the current run of slow ones, and the interval then: the recent
    # reports of a long slowdown no longer reach back to its onset.
    onset_prev_ns: int | None = None
    onset_interval_ns: int | None = None
    #: Set by the job's first report: a job whose lines give step times in some and tokens
    #: per second in others (two reporters, a trainer and a progress bar) is judged on the
    #: first, since a step time over the inverse of a throughput is no ratio of paces.
    measure: str | None = None
    rules: PaceRules = DEFAULT_RULES  # not saved: the settings give it on restore

    def add(self, p: Progress) -> bool:
        """Take one report; True when it started or ended a slowdown. A report that does not
        give the job's measure is left out, step number and time alike: it comes from another
        reporter, whose steps are not the first one's."""
        if self.measure is None:
            self.measure = measure_of(p)
        value = None if self.measure is None else pace_of(p, self.measure)
        if value is None or (self.recent and p.ts_ns <= self.recent[-1]):
            return False
        self.recent.append(p.ts_ns)
        self.steps.append(p.step)
        self.values.append(value)
        del self.recent[: -self.rules.recent_reports]
        del self.steps[: -self.rules.recent_reports]
        del self.values[: -self.rules.recent_reports]
        self.finished = p.total_steps is not None and p.step >= p.total_steps
        self.seen += 1
        rules = self.rules
        if self.first_step is None:
            self.first_step = p.step
        if self.seen <= rules.warmup_reports and (
            self.seen == 1 or p.step - self.first_step < rules.warmup_steps
        ):
            return False
        normal = self.normal
        if normal is None:
            self.baseline.append(value)
            return False
        ratio = value / normal if normal else 0.0
        bar = self.slow_bar
        if ratio < bar and len(self.baseline) < rules.baseline_reports:
            self.baseline.append(value)
        self.last_ratio = ratio
        was_slow = self.slow_since_ns is not None
        shift_bar = self.shift_bar
        # A slowdown ends at a report back within half the bar: a job slowed just past it
        # would otherwise end and start again with its reports' own jitter. Nor does a report
        # that low start one, whatever the median of those before it.
        holding = ratio >= 1.0 + (shift_bar - 1.0) / 2
        shift = self.shift_ratio() if holding and not was_slow else None
        shifted = shift is not None and shift >= shift_bar
        if ratio >= bar or (was_slow and holding) or shifted:
            # The median dates a slowdown it shows from the first slow report among those it
            # read, which may come before a run of slow reports under way.
            first = self._shift_onset(shift_bar) if shifted else len(self.recent) - 1
            if self.run_start_ns is None or self.recent[first] < self.run_start_ns:
                self.run_start_ns = self.recent[first]
                self.run_len = len(self.recent) - 1 - first
                self.onset_prev_ns = self.recent[first - 1] if first > 0 else None
                self.onset_interval_ns = self.interval_ns(self.onset_prev_ns)
            self.run_len += 1
            if not was_slow and (self.run_len >= self.rules.slow_reports or shifted):
                self.slow_since_ns, self.slow_confirmed_ns = self.run_start_ns, p.ts_ns
                self.peak_ratio = max(ratio, shift or 0.0)
                return True
            if was_slow:
                self.peak_ratio = max(self.peak_ratio, ratio)
            return False
        self.run_start_ns, self.run_len = None, 0
        if was_slow:
            self.slow_since_ns = self.slow_confirmed_ns = None
            self.peak_ratio = 0.0
            # The slowed reports would carry the median straight into a new slowdown.
            del self.values[:-1]
            return True
        return False

    @property
    def normal(self) -> float | None:
        """The job's normal pace, once enough baseline reports are in."""
        if len(self.baseline) < min(self.rules.min_baseline_reports, self.rules.baseline_reports):
            return None
        return statistics.median(self.baseline)

    @property
    def slow_bar(self) -> float:
        """The ratio to normal at which a report is slow: `slow_ratio` while the baseline
        fills (a few reports say little of how much the job varies), then the job's own
        spread above normal, kept within [min_slow_ratio, slow_ratio]."""
        rules = self.rules
        normal = self.normal
        if not normal or len(self.baseline) < rules.baseline_reports:
            return rules.slow_ratio
        bar = 1.0 + rules.noise_multiple * 1.4826 * self._mad(normal) / normal
        return min(rules.slow_ratio, max(rules.min_slow_ratio, bar))

    def _mad(self, normal: float) -> float:
        """The median absolute deviation of the baseline reports from `normal`: the job's
        jitter, which both bars are drawn from."""
        return statistics.median(abs(v - normal) for v in self.baseline)

    @property
    def shift_bar(self) -> float:
        """The ratio to normal at which the median of the latest `shift_reports` reports is
        slow (see `shift_noise_multiple`); the slow bar itself while the baseline fills."""
        rules = self.rules
        normal = self.normal
        if not normal or len(self.baseline) < rules.baseline_reports:
            return self.slow_bar
        sigma = 1.4826 * self._mad(normal) / normal
        # The median of the latest reports is held against the median of the baseline's:
        # both are estimates, and the bar allows for the error of each.
        error = 1.2533 * sigma * math.sqrt(1 / rules.shift_reports + 1 / len(self.baseline))
        bar = 1.0 + rules.shift_noise_multiple * error
        return min(rules.slow_ratio, max(rules.min_slow_ratio, bar))

    def shift_ratio(self) -> float | None:
        """The median of the latest `shift_reports` paces over normal; None until the baseline
        is full (a median of reports against a baseline still being learnt says little) and
        that many are in."""
        rules = self.rules
        normal = self.normal
        n = rules.shift_reports
        if not normal or len(self.baseline) < rules.baseline_reports or len(self.values) < n:
            return None
        return statistics.median(self.values[-n:]) / normal

    def _shift_onset(self, shift_bar: float) -> int:
        """Index in `recent` of the first of the latest `shift_reports` reports that is slow
        against the median's bar: where a slowdown the median showed began."""
        normal = self.normal or 1.0
        offset = len(self.recent) - len(self.values)  # `values` are the latest of `recent`
        window = range(max(0, len(self.values) - self.rules.shift_reports), len(self.values))
        first = next((i for i in window if self.values[i] / normal >= shift_bar), window[-1])
        return offset + first

    def slow_since(self, upto_ns: int | None = None) -> int | None:
        """Start of the current slowdown, if it was confirmed by `upto_ns` (None: by now)."""
        if self.slow_since_ns is None or self.slow_confirmed_ns is None:
            return None
        if upto_ns is not None and self.slow_confirmed_ns > upto_ns:
            return None
        return self.slow_since_ns

    def interval_ns(self, upto_ns: int | None = None) -> int | None:
        """The usual time between reports (median), from those seen by `upto_ns`."""
        times = [t for t in self.recent if upto_ns is None or t <= upto_ns]
        if len(times) < 3:
            return None
        return int(statistics.median(b - a for a, b in itertools.pairwise(times)))

    def step_ns(self, upto_ns: int | None = None) -> int | None:
        """The usual time one step takes (median), from reports seen by `upto_ns`; None while
        fewer than two intervals are known or the step numbers do not say.

        Trainers report every N steps, so a report vouches for the whole last step before it,
        collectives included, which is much shorter than the time between reports.
        """
        # Paired from the newest: a state saved before steps were kept has more times.
        n = min(len(self.recent), len(self.steps))
        times, steps = self.recent[len(self.recent) - n :], self.steps[len(self.steps) - n :]
        reports = list(zip(times, steps, strict=True))
        per_step = [
            (tb - ta) // (sb - sa)
            for (ta, sa), (tb, sb) in itertools.pairwise(reports)
            if sb > sa and (upto_ns is None or tb <= upto_ns)
        ]
        if len(per_step) < 2:
            return None
        return int(statistics.median(per_step))

    def overdue_at(self, upto_ns: int | None = None) -> int | None:
        """When the job, as its reports stood at `upto_ns`, would be overdue; None if unknown."""
        times = [t for t in self.recent if upto_ns is None or t <= upto_ns]
        interval = self.interval_ns(upto_ns)
        if not times or interval is None:
            return None
        rules = self.rules
        return times[-1] + max(
            int(rules.overdue_intervals * interval), int(rules.overdue_min_s * NS)
        )

    def stopped(self, now_ns: int) -> int | None:
        """Time of the last report if the job has been silent too long at `now_ns`, else None
        (also None once the job reported its last step: a finished job is silent)."""
        if self.finished:
            return None
        due = self.overdue_at(now_ns)
        if due is None or now_ns < due:
            return None
        return max(t for t in self.recent if t <= now_ns)

    def snapshot(self) -> dict[str, Any]:
        return {
            "seen": self.seen,
            "first_step": self.first_step,
            "baseline": self.baseline,
            "recent": self.recent,
            "steps": self.steps,
            "values": self.values,
            "run": [self.run_start_ns, self.run_len],
            "slow": [self.slow_since_ns, self.slow_confirmed_ns],
            "ratios": [self.last_ratio, self.peak_ratio],
            "finished": self.finished,
            "onset": [self.onset_prev_ns, self.onset_interval_ns],
            "measure": self.measure,
        }

    @classmethod
    def restore(cls, snap: dict[str, Any], rules: PaceRules = DEFAULT_RULES) -> Pace:
        return cls(
            rules=rules,
            seen=int(snap["seen"]),
            first_step=snap.get("first_step"),
            baseline=[float(v) for v in snap["baseline"]],
            recent=[int(t) for t in snap["recent"]],
            steps=[int(n) for n in snap.get("steps", [])],
            # Saved before paces were kept: the median waits for that many new reports.
            values=[float(v) for v in snap.get("values", [])],
            run_start_ns=snap["run"][0],
            run_len=int(snap["run"][1]),
            slow_since_ns=snap["slow"][0],
            slow_confirmed_ns=snap["slow"][1],
            last_ratio=float(snap["ratios"][0]),
            peak_ratio=float(snap["ratios"][1]),
            finished=bool(snap.get("finished", False)),
            onset_prev_ns=snap.get("onset", [None, None])[0],
            onset_interval_ns=snap.get("onset", [None, None])[1],
            # Saved before the measure was kept: its next report sets it, as reports were read.
            measure=snap.get("measure"),
        )
