"""Slowdowns inside a job's jitter: the median of its latest step reports, held against a bar
drawn from how steady a median of that many is, finds a 5-10% slowdown that no three reports
in a row show; and jitter alone does not make one."""

from __future__ import annotations

import random

import pytest
from attribution_support import EVERY_S, HOST_A, JOB, T0, S

from railtrace.streams.attribution.pace import Pace, PaceRules
from railtrace.streams.records import LogOrigin, Progress

RULES = PaceRules()
WARMUP = [5000.0] * RULES.warmup_reports
# Twelve reports around 100 ms, within 2.5%: median 100, median absolute deviation 1.25.
BASELINE = [100.0, 102.0, 98.0, 101.0, 99.0, 102.5, 97.5, 100.5, 99.5, 101.5, 98.5, 100.0]
# 7% slower, jittering by 1-2% either way: every other report is under the single report bar.
SLOWED = [107.0 * f for f in (1.015, 0.98, 1.02, 0.985, 1.01, 0.99, 1.005, 0.995)]


def _report(i: int, ms: float) -> Progress:
    return Progress(T0 + i * EVERY_S * S, JOB, HOST_A, i, ms, None, LogOrigin("train.log", i + 1))


def _fed(pace: Pace, values: list[float], first: int = 0) -> list[bool]:
    return [pace.add(_report(first + k, ms)) for k, ms in enumerate(values)]


def _baselined(rules: PaceRules = RULES) -> Pace:
    assert len(BASELINE) == rules.baseline_reports
    pace = Pace(rules=rules)
    assert not any(_fed(pace, [*WARMUP, *BASELINE]))
    assert pace.normal == 100.0
    return pace


def test_a_slowdown_inside_the_jitter_is_found_by_the_median_of_the_latest_reports() -> None:
    pace = _baselined()
    assert pace.shift_bar < pace.slow_bar
    # No three reports in a row clear the single report bar...
    over = [ms / 100.0 >= pace.slow_bar for ms in SLOWED]
    assert not any(all(over[k : k + RULES.slow_reports]) for k in range(len(over)))
    onset = len(WARMUP) + len(BASELINE)
    added = _fed(pace, SLOWED, first=onset)
    # ...but most of the latest reports are past the median's bar: a slowdown, confirmed before
    # as many slowed reports as the median reads, and dated at the first slowed report.
    assert added.count(True) == 1 and added.index(True) < RULES.shift_reports
    assert pace.slow_since() == _report(onset, 0.0).ts_ns
    assert pace.onset_prev_ns == _report(onset - 1, 0.0).ts_ns
    assert pace.peak_ratio >= pace.shift_bar


def test_without_the_median_bar_the_same_slowdown_goes_unseen() -> None:
    # A median bar as high as the slow ratio: only runs of single slow reports are left.
    pace = _baselined(PaceRules(shift_noise_multiple=1000.0))
    assert pace.shift_bar == RULES.slow_ratio
    _fed(pace, SLOWED, first=len(WARMUP) + len(BASELINE))
    assert pace.slow_since() is None


def test_the_median_dates_a_slowdown_before_a_run_of_slow_reports_under_way() -> None:
    """Torchtitan's reports in a world incident: the first slowed report cleared the single
    bar, the second fell just under it, and the third began a run. The slowdown began at the
    first, and the anomaly that caused it lies before that, not before the run."""
    pace = _baselined()
    onset = len(WARMUP) + len(BASELINE)
    bar = pace.slow_bar
    # Past the bar, just under it, then past it until the median confirms.
    slowed = [100.0 * (bar + 0.02), 100.0 * (bar - 0.01)] + [100.0 * (bar + 0.02)] * 4
    added = _fed(pace, slowed, first=onset)
    assert True in added
    assert pace.slow_since() == _report(onset, 0.0).ts_ns


def test_a_normal_report_ends_a_slowdown_and_the_median_starts_again_after_it() -> None:
    pace = _baselined()
    onset = len(WARMUP) + len(BASELINE)
    _fed(pace, [150.0] * RULES.slow_reports, first=onset)
    assert pace.slow_since() is not None
    after = onset + RULES.slow_reports
    assert pace.add(_report(after, 100.0)) is True and pace.slow_since() is None
    # The slowed reports are still most of the latest ones, but no longer read by the median:
    # a new slowdown needs its own reports.
    assert _fed(pace, [106.0] * (RULES.shift_reports - 2), first=after + 1) == [False] * (
        RULES.shift_reports - 2
    )


@pytest.mark.parametrize("seed", range(8))
def test_steady_jitter_alone_makes_no_slowdown_over_thousands_of_reports(seed: int) -> None:
    """Gaussian jitter of 1.5% with an evaluation pass (1.5x) every 1-2% of reports, for 3,000
    reports: a day of a trainer reporting every 30 s."""
    rng = random.Random(seed)
    pace = Pace()
    for i in range(3000):
        ms = 100.0 * (1.0 + rng.gauss(0.0, 0.015))
        if rng.random() < 0.015:
            ms *= 1.5
        pace.add(_report(i, ms))
        assert pace.slow_since() is None, f"report {i}: {pace.last_ratio:.3f} of normal"


def test_the_latest_paces_survive_a_snapshot_and_one_saved_before_them_waits_for_new_ones() -> None:
    pace = _baselined()
    onset = len(WARMUP) + len(BASELINE)
    _fed(pace, SLOWED[:3], first=onset)
    snap = pace.snapshot()
    assert Pace.restore(snap) == pace
    old = {k: v for k, v in snap.items() if k != "values"}
    restored = Pace.restore(old)
    assert restored.values == [] and restored.shift_ratio() is None
    _fed(restored, SLOWED[3:], first=onset + 3)
    assert restored.slow_since() is None  # five new paces: fewer than the median reads
