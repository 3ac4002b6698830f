"""Step reports in attribution: a job's pace (slowdowns, silences) and what the correlator
makes of it, on hand-made records and the 64-node reference fabric."""

from __future__ import annotations

import statistics

import orjson
import pytest
from attribution_support import (
    EVERY_S,
    HOST_A,
    HOST_LINK,
    JOB,
    LEAF,
    LEAF_PORT,
    ORIGIN,
    OVERDUE_S,
    T0,
    S,
    fabric,
    feed,
    job_facts,
)

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.jobs import Change, JobView
from railtrace.streams.attribution.pace import Pace, PaceRules
from railtrace.streams.attribution.profile import JudgingRules
from railtrace.streams.attribution.scoring import ScoringRules, TimeWindow
from railtrace.streams.records import (
    CauseKind,
    CollectiveTimeout,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    Progress,
    Verdict,
)
from railtrace.topology.ends import Endpoint

# The defaults the settings give: the rules under test.
RULES = PaceRules()
WARMUP_REPORTS, BASELINE_REPORTS = RULES.warmup_reports, RULES.baseline_reports
MIN_BASELINE = RULES.min_baseline_reports
SLOW_RATIO, SLOW_REPORTS = RULES.slow_ratio, RULES.slow_reports
SHIFT_REPORTS = RULES.shift_reports
MIN_BLAME_SCORE = JudgingRules().min_blame_score
IDLE_FACTOR = ScoringRules().idle_member_factor

# -- builders -----------------------------------------------------------------------------------


def _report(
    at_s: float, step_ms: float | None = 100.0, tps: float | None = None, step: int = 0
) -> Progress:
    return Progress(
        T0 + int(at_s * S), JOB, HOST_A, step, step_ms, tps, LogOrigin("train.log", step + 1)
    )


def _warm_pace(normal_ms: float = 100.0, every_s: int = EVERY_S) -> tuple[Pace, int]:
    """A pace past its warm-up and baseline, all at `normal_ms`; also the next report's time."""
    pace = Pace()
    n = WARMUP_REPORTS + BASELINE_REPORTS
    for i in range(n):
        assert pace.add(_report(i * every_s, normal_ms, step=i)) is False
    assert pace.normal == normal_ms
    return pace, n * every_s


def _steady(count: int, step_ms: float = 100.0, first: int = 1) -> list[Progress]:
    """`count` step reports every EVERY_S seconds, the first at T0 + first * EVERY_S."""
    return [_report(i * EVERY_S, step_ms, step=i) for i in range(first, first + count)]


def _down(at_ns: int, device: str = LEAF, interface: str = LEAF_PORT) -> LinkEvent:
    return LinkEvent(at_ns, device, interface, LinkEventKind.DOWN)


def _silent_job(corr: Correlator, reports: int = 10) -> int:
    """A job that reported every EVERY_S seconds and went quiet; returns its last report time."""
    feed(corr, [*job_facts(), *_steady(reports)])
    return T0 + reports * EVERY_S * S


def _only(verdicts: list[Verdict]) -> Verdict:
    (v,) = [v for v in verdicts if v.job_id == JOB]
    return v


# -- Pace ---------------------------------------------------------------------------------------


def test_warmup_reports_are_left_out_and_the_baseline_is_the_median_of_the_next_ones():
    pace = Pace()
    warmup = [5000.0] * WARMUP_REPORTS  # compilation, first checkpoint: much slower
    # Out of order and spread: the median (not the mean, not the last) is the normal pace.
    baseline = [104.0, 100.0, 112.0, 106.0, 110.0, 102.0, 108.0, 111.0, 101.0, 113.0, 103.0]
    baseline = [*baseline, 109.0, 105.0, 107.0][:BASELINE_REPORTS]
    assert len(baseline) == BASELINE_REPORTS
    for i, ms in enumerate([*warmup, *baseline]):
        if i < WARMUP_REPORTS + MIN_BASELINE:
            assert pace.normal is None
        assert pace.add(_report(i * EVERY_S, ms, step=i)) is False
    assert pace.baseline == baseline
    assert pace.normal == statistics.median(baseline) != statistics.mean(baseline)


def test_judging_starts_once_the_fewest_baseline_reports_are_in_and_a_slow_one_stays_out():
    pace = Pace()
    first = [100.0, 110.0, 120.0][:MIN_BASELINE]
    assert len(first) == MIN_BASELINE
    for i, ms in enumerate([5000.0] * WARMUP_REPORTS + first):
        pace.add(_report(i * EVERY_S, ms, step=i))
    assert pace.normal == statistics.median(first)
    n = WARMUP_REPORTS + MIN_BASELINE
    pace.add(_report(n * EVERY_S, 990.0, step=n))  # a checkpoint save: slow, not normal
    assert pace.baseline == first
    assert pace.last_ratio == pytest.approx(990.0 / statistics.median(first))
    # The baseline goes on filling with normal reports, and its median moves with them.
    pace.add(_report((n + 1) * EVERY_S, 115.0, step=n + 1))
    assert pace.baseline == [*first, 115.0] and pace.normal == statistics.median([*first, 115.0])


def test_a_sparse_reporter_is_past_its_warmup_by_its_second_report_and_judged_within_the_hour():
    """NeMo reporting every 100 steps of 7 s: a report every 700 s. Its second report is 100
    steps after the first, past the warm-up, so a 24% slowdown from the fifth report on is
    confirmed at the seventh, not after two hours of baseline."""
    every_s, steps = 700, 100
    times = [7000.0, 7000.0, 7100.0, 6900.0, 8600.0, 8500.0, 8700.0]
    pace = Pace()
    started = [
        pace.add(_report(i * every_s, ms, step=(i + 1) * steps)) for i, ms in enumerate(times)
    ]
    assert started == [False] * 6 + [True]
    assert pace.slow_since() == T0 + 4 * every_s * S
    # Reports one step apart are still a warm-up: the first two are left out.
    dense = Pace()
    for i, ms in enumerate([5000.0, 5000.0, 100.0, 100.0, 100.0]):
        dense.add(_report(i * EVERY_S, ms, step=i + 1))
    assert dense.baseline == [100.0] * 3


@pytest.mark.parametrize("ratio", [1.5, SLOW_RATIO], ids=["1.5x", "exactly-slow-ratio"])
def test_consecutive_slow_reports_start_a_slowdown_dated_at_the_first_of_them(ratio: float):
    pace, t = _warm_pace(100.0)
    added = [pace.add(_report(t + k * EVERY_S, 100.0 * ratio)) for k in range(SLOW_REPORTS)]
    assert added == [False] * (SLOW_REPORTS - 1) + [True]
    assert pace.slow_since() == T0 + t * S
    assert pace.slow_confirmed_ns == T0 + (t + (SLOW_REPORTS - 1) * EVERY_S) * S
    assert pace.peak_ratio == pytest.approx(ratio)
    # Further slow reports keep the slowdown going without starting it again.
    assert pace.add(_report(t + SLOW_REPORTS * EVERY_S, 100.0 * ratio)) is False
    assert pace.slow_since() == T0 + t * S


def _spread_pace(baseline: list[float]) -> tuple[Pace, int]:
    """A pace past its warm-up whose baseline reports are `baseline`; also the next time."""
    assert len(baseline) == BASELINE_REPORTS
    pace = Pace()
    for i, ms in enumerate([5000.0] * WARMUP_REPORTS + baseline):
        pace.add(_report(i * EVERY_S, ms, step=i))
    assert pace.baseline == baseline
    return pace, len(pace.recent) * EVERY_S


def _slowed(pace: Pace, t: int, ms: float, reports: int = SLOW_REPORTS) -> bool:
    for k in range(reports):
        pace.add(_report(t + k * EVERY_S, ms))
    return pace.slow_since() is not None


@pytest.mark.parametrize(("ms", "slowed"), [(107.0, True), (104.0, False)])
def test_a_steady_job_is_slow_from_the_least_slowdown_judged(ms: float, slowed: bool):
    """A trainer whose reports barely vary (Megatron averages a report over its interval):
    a link taking 7% off its pace is a slowdown, 4% (under min_slow_ratio) is not."""
    pace, t = _warm_pace(100.0)
    assert pace.slow_bar == RULES.min_slow_ratio
    assert _slowed(pace, t, ms) is slowed


@pytest.mark.parametrize(("ms", "slowed"), [(112.0, False), (119.0, True)])
def test_a_noisy_job_is_slow_only_beyond_its_own_spread(ms: float, slowed: bool):
    # A median absolute deviation of 3%: the bar is 1 + 4 x 1.4826 x 0.03, about 1.18.
    pace, t = _spread_pace(
        [97.0, 103.0, 100.0, 96.0, 104.0, 100.0, 97.0, 103.0, 100.0, 97.0, 103.0, 100.0]
    )
    assert pace.slow_bar == pytest.approx(1.0 + RULES.noise_multiple * 1.4826 * 0.03)
    assert _slowed(pace, t, ms) is slowed


def test_however_noisy_a_job_the_slow_ratio_is_always_slow():
    pace, t = _spread_pace(
        [100.0, 115.0, 85.0, 100.0, 82.0, 118.0, 84.0, 116.0, 100.0, 117.0, 83.0, 100.0]
    )
    assert pace.slow_bar == RULES.slow_ratio
    assert not _slowed(pace, t, 100.0 * RULES.slow_ratio - 0.5)
    assert _slowed(pace, t + SLOW_REPORTS * EVERY_S, 100.0 * RULES.slow_ratio)


def test_while_the_baseline_fills_only_the_slow_ratio_is_slow():
    """Three reports say little of how much a job varies: a sparse reporter is held to the
    slow ratio until its baseline is full."""
    pace = Pace()
    for i, ms in enumerate([5000.0] * WARMUP_REPORTS + [100.0] * MIN_BASELINE):
        pace.add(_report(i * EVERY_S, ms, step=i))
    assert pace.normal == 100.0 and pace.slow_bar == RULES.slow_ratio
    t = len(pace.recent) * EVERY_S
    assert not _slowed(pace, t, 115.0)


def test_a_slowdown_just_past_the_bar_does_not_end_with_its_jitter():
    pace, t = _warm_pace(100.0)
    assert _slowed(pace, t, 107.0)
    t += SLOW_REPORTS * EVERY_S
    # Under the bar (1.05) but more than half way to it: still the slowed pace.
    assert pace.add(_report(t, 103.0)) is False
    assert pace.slow_since() is not None
    # Back within half the bar: the slowdown is over.
    assert pace.add(_report(t + EVERY_S, 102.0)) is True
    assert pace.slow_since() is None


def test_a_least_slowdown_above_the_slow_ratio_is_refused():
    with pytest.raises(ValueError, match=r"min_slow_ratio 1\.3 is above slow_ratio 1\.2"):
        PaceRules(min_slow_ratio=1.3)


def test_one_or_two_slow_reports_are_a_hiccup_not_a_slowdown():
    pace, t = _warm_pace(100.0)
    # Slow runs one short of SLOW_REPORTS, each followed by normal reports (an evaluation pass,
    # a checkpoint save): more slow reports in all than SLOW_REPORTS, never that many in a row,
    # and never most of the latest SHIFT_REPORTS.
    pattern = ([150.0] * (SLOW_REPORTS - 1) + [100.0] * SHIFT_REPORTS) * 3
    added = [pace.add(_report(t + k * EVERY_S, ms)) for k, ms in enumerate(pattern)]
    assert not any(added)
    assert pace.slow_since() is None and pace.slow_confirmed_ns is None


def test_a_normal_report_ends_a_slowdown():
    pace, t = _warm_pace(100.0)
    for k in range(SLOW_REPORTS):
        pace.add(_report(t + k * EVERY_S, 150.0))
    assert pace.slow_since() is not None
    t += SLOW_REPORTS * EVERY_S
    assert pace.add(_report(t, 101.0)) is True
    assert pace.slow_since() is None and pace.slow_confirmed_ns is None
    # A new slowdown needs a full run of slow reports again.
    assert pace.add(_report(t + EVERY_S, 150.0)) is False
    assert pace.slow_since() is None


def test_slow_since_is_none_as_of_any_time_before_the_confirming_report():
    pace, t = _warm_pace(100.0)
    for k in range(SLOW_REPORTS):
        pace.add(_report(t + k * EVERY_S, 150.0))
    first = T0 + t * S
    confirmed = T0 + (t + (SLOW_REPORTS - 1) * EVERY_S) * S
    assert pace.slow_since(first) is None
    assert pace.slow_since(confirmed - 1) is None
    assert pace.slow_since(confirmed) == first
    assert pace.slow_since(confirmed + 100 * S) == first


def test_a_report_older_than_the_newest_is_ignored():
    pace, t = _warm_pace(100.0)
    assert pace.add(_report(t, 150.0)) is False
    seen, recent = pace.seen, list(pace.recent)
    # Older and same-time reports change nothing: not the count, not the slow run.
    assert pace.add(_report(t - 5, 150.0)) is False
    assert pace.add(_report(t, 150.0)) is False
    assert (pace.seen, pace.recent) == (seen, recent)
    # Had either counted, this would be the third slow report in a row.
    assert pace.add(_report(t + EVERY_S, 150.0)) is False
    assert pace.add(_report(t + 2 * EVERY_S, 150.0)) is True


def test_interval_is_the_median_gap_between_reports():
    pace = Pace()
    assert pace.add(_report(0)) is False
    pace.add(_report(10))
    assert pace.interval_ns() is None, "two reports are not enough to know a cadence"
    for at in (20, 60, 100, 140):
        pace.add(_report(at))
    # Gaps 10, 10, 40, 40, 40: the median is 40 s (the mean would be 28 s).
    assert pace.interval_ns() == 40 * S
    # As the reports stood at 20 s, the cadence was 10 s.
    assert pace.interval_ns(T0 + 20 * S) == 10 * S


@pytest.mark.parametrize(
    ("every_s", "overdue_after_s"),
    [(20, 60), (5, 30)],
    ids=["three-intervals", "thirty-second-floor"],
)
def test_a_job_is_overdue_three_intervals_or_thirty_seconds_after_its_last_report(
    every_s: int, overdue_after_s: int
):
    pace = Pace()
    for i in range(2):
        pace.add(_report(i * every_s))
    assert pace.overdue_at() is None, "no cadence known yet"
    for i in range(2, 6):
        pace.add(_report(i * every_s))
    last = T0 + 5 * every_s * S
    assert pace.overdue_at() == last + overdue_after_s * S


def test_stopped_names_the_last_report_only_once_it_is_overdue():
    pace = Pace()
    for i in range(6):
        pace.add(_report(i * EVERY_S))
    last = T0 + 5 * EVERY_S * S
    assert pace.stopped(last + 1 * S) is None
    assert pace.stopped(last + OVERDUE_S * S - 1) is None
    assert pace.stopped(last + OVERDUE_S * S) == last
    assert pace.stopped(last + 3600 * S) == last
    # Judged as of a time between reports, the job was not overdue then.
    assert pace.stopped(T0 + 25 * S) is None


def test_pace_snapshot_survives_json_and_the_restored_pace_goes_on_the_same():
    pace, t = _warm_pace(100.0)
    for k in range(SLOW_REPORTS - 1):  # one slow report short of a slowdown
        pace.add(_report(t + k * EVERY_S, 150.0))
    restored = Pace.restore(orjson.loads(orjson.dumps(pace.snapshot())))
    assert restored == pace
    nxt = _report(t + (SLOW_REPORTS - 1) * EVERY_S, 160.0)
    assert restored.add(nxt) is True
    assert pace.add(nxt) is True
    assert restored == pace
    assert restored.slow_since() == T0 + t * S
    # And once more, with the slowdown confirmed and a stop pending.
    again = Pace.restore(orjson.loads(orjson.dumps(restored.snapshot())))
    assert again == restored
    assert again.stopped(restored.recent[-1] + 60 * S) == restored.recent[-1]


def test_a_drop_in_tokens_per_second_is_a_slowdown_and_a_rise_is_not():
    def throughput(later_tps: float) -> list[bool]:
        pace = Pace()
        n = WARMUP_REPORTS + BASELINE_REPORTS
        for i in range(n):
            pace.add(_report(i * EVERY_S, step_ms=None, tps=10_000.0))
        return [
            pace.add(_report((n + k) * EVERY_S, step_ms=None, tps=later_tps))
            for k in range(SLOW_REPORTS)
        ]

    assert throughput(7_000.0) == [False] * (SLOW_REPORTS - 1) + [True]
    assert not any(throughput(13_000.0))


def test_a_job_whose_lines_mix_step_times_and_throughputs_is_judged_on_its_first_measure():
    # A trainer's step times and a progress bar's tokens per second in one job's logs: the
    # inverse of 10,000 tokens/s is 100,000 ns per token, a thousand times a 100 ms step.
    pace, t = _warm_pace(100.0)
    taken = list(pace.recent)
    for k in range(SLOW_REPORTS + 2):
        assert pace.add(_report(t + k * EVERY_S + 1, step_ms=None, tps=10_000.0, step=5)) is False
    assert pace.recent == taken and pace.slow_since() is None
    # A report that gives both is read in the job's measure.
    assert pace.add(_report(t + 10 * EVERY_S, step_ms=100.0, tps=1.0, step=20)) is False
    assert pace.slow_since() is None and pace.last_ratio == 1.0


def test_a_job_measured_by_throughput_keeps_to_it_when_a_line_also_gives_a_step_time():
    pace = Pace()
    n = WARMUP_REPORTS + BASELINE_REPORTS
    for i in range(n):
        pace.add(_report(i * EVERY_S, step_ms=None, tps=10_000.0, step=i))
    # The step times these lines also give are not its measure: the slowdown is read from
    # the tokens per second (old code read 5 ms against 1e5 ns and saw none).
    slowed = [
        pace.add(_report((n + k) * EVERY_S, step_ms=5.0, tps=7_000.0, step=n + k))
        for k in range(SLOW_REPORTS)
    ]
    assert slowed == [False] * (SLOW_REPORTS - 1) + [True]
    restored = Pace.restore(orjson.loads(orjson.dumps(pace.snapshot())))
    assert restored == pace and restored.measure == "tokens_per_s"


def test_job_view_flags_a_step_report_as_evidence_only_when_a_slowdown_starts_or_ends():
    view = JobView(JOB)
    n = WARMUP_REPORTS + BASELINE_REPORTS
    changes = [view.add(_report(i * EVERY_S, 100.0)) for i in range(n)]
    changes += [view.add(_report((n + k) * EVERY_S, 150.0)) for k in range(SLOW_REPORTS + 1)]
    changes.append(view.add(_report((n + SLOW_REPORTS + 1) * EVERY_S, 100.0)))
    assert changes[0] == Change.HOSTS  # the first line names the job's host
    flagged = [i for i, c in enumerate(changes) if c & ~Change.HOSTS]
    assert flagged == [n + SLOW_REPORTS - 1, len(changes) - 1]
    assert all(changes[i] == Change.EVIDENCE for i in flagged)


def _view_with_reports() -> JobView:
    view = JobView(JOB)
    for f in [*job_facts(), *_steady(12)]:
        view.add(f)
    return view


def test_job_view_snapshot_keeps_its_pace_through_json():
    view = _view_with_reports()
    restored = JobView.restore(orjson.loads(orjson.dumps(view.snapshot())))
    assert restored.pace == view.pace
    assert restored.pace.normal == 100.0


def test_job_view_saved_before_pace_existed_restores_with_an_empty_pace():
    view = _view_with_reports()
    snap = orjson.loads(orjson.dumps(view.snapshot()))
    del snap["pace"]
    restored = JobView.restore(snap)
    assert restored.pace == Pace()
    assert restored.hosts == view.hosts
    assert restored.flows(fabric()) == view.flows(fabric())
    assert (restored.first_ts_ns, restored.last_ts_ns) == (view.first_ts_ns, view.last_ts_ns)


# -- Correlator: silences -----------------------------------------------------------------------


def test_silent_job_with_a_down_link_is_stalled_as_soon_as_its_reports_are_overdue():
    corr = Correlator(fabric())
    last = _silent_job(corr)
    assert all(v.state != JobState.STALLED for v in feed(corr, [_down(last + 2 * S)]))
    assert all(v.state != JobState.STALLED for v in corr.advance(last + (OVERDUE_S - 1) * S))
    v = _only(corr.advance(last + (OVERDUE_S + 1) * S))
    assert v.state == JobState.STALLED and v.cause_kind == CauseKind.LINK
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK
    # Dated at the last report, or at the report that never came after it.
    assert last <= v.stalled_at_ns <= last + EVERY_S * S
    # Decided when the silence became overdue: nine and a half minutes before a default
    # ten-minute watchdog would have fired for a collective started at the last report.
    assert v.decided_at_ns == last + OVERDUE_S * S
    kinds = {e.kind for e in v.evidence}
    assert {"progress-stopped", str(LinkEventKind.DOWN)} <= kinds
    assert corr.verdicts() == [v]


def test_a_later_record_of_anything_moves_event_time_past_the_overdue_moment():
    corr = Correlator(fabric())
    last = _silent_job(corr)
    feed(corr, [_down(last + 2 * S)])
    # A link event on a cable the job does not use: all it brings is the time.
    unrelated = LinkEvent(last + 45 * S, "leaf-su02-r3", "swp7", LinkEventKind.FLAP)
    v = _only(corr.observe(unrelated))
    assert v.state == JobState.STALLED
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK
    assert v.decided_at_ns == last + OVERDUE_S * S


def test_a_fault_reported_after_the_overdue_moment_still_explains_the_silence():
    """Telemetry lags: the DOWN of the job's cable may arrive after the job is overdue."""
    corr = Correlator(fabric())
    last = _silent_job(corr)
    assert all(v.state != JobState.STALLED for v in corr.advance(last + (OVERDUE_S + 1) * S))
    v = _only(feed(corr, [_down(last + 40 * S)]))
    assert v.state == JobState.STALLED
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK
    assert v.decided_at_ns == last + 40 * S


def test_silence_without_a_fault_on_the_jobs_links_is_not_a_stall():
    """A job also goes quiet to write a checkpoint: silence alone blames nothing."""
    corr = Correlator(fabric())
    last = _silent_job(corr)
    feed(
        corr,
        [
            # HOST_A's rail-1 cable (the job's channel uses rail 0) and another node's cable.
            _down(last + 2 * S, "leaf-su01-r1", "swp32"),
            _down(last + 3 * S, LEAF, "swp5"),
        ],
    )
    emitted = corr.advance(last + (OVERDUE_S + 1) * S)
    emitted += corr.advance(last + 600 * S)
    emitted += corr.reevaluate()
    assert all(v.state == JobState.HEALTHY for v in emitted)
    (v,) = corr.verdicts()
    assert v.state == JobState.HEALTHY and v.cause_link is None


# -- Correlator: slowdowns ----------------------------------------------------------------------


def _slowing_job(extra: list) -> tuple[Correlator, int]:
    """Normal reports (100 ms) through the warm-up and baseline, then 1.5x slower ones."""
    corr = Correlator(fabric())
    n = WARMUP_REPORTS + BASELINE_REPORTS
    slow = _steady(SLOW_REPORTS + 1, step_ms=150.0, first=n + 1)
    feed(corr, [*job_facts(), *_steady(n), *slow, *extra])
    return corr, slow[0].ts_ns


def test_slowdown_with_error_bursts_on_a_job_link_is_slow_and_blames_that_link():
    n = WARMUP_REPORTS + BASELINE_REPORTS
    near = T0 + (n + 1) * EVERY_S * S  # the first slow report
    bursts = [
        LinkEvent(near - 5 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 3.0),
        LinkEvent(near + 5 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 3.0),
    ]
    corr, since = _slowing_job(bursts)
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW and v.cause_kind == CauseKind.LINK
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK
    assert v.stalled_at_ns == since
    assert v.decided_at_ns == since + (SLOW_REPORTS - 1) * EVERY_S * S
    assert {"slowdown", str(LinkEventKind.ERROR_BURST)} <= {e.kind for e in v.evidence}


def test_errors_the_job_kept_its_pace_through_do_not_explain_a_later_slowdown():
    """Errors that began two reports before the slowdown, while the job still reported its
    normal pace, did not slow it; the same errors just before its onset do."""
    n = WARMUP_REPORTS + BASELINE_REPORTS
    onset = T0 + (n + 1) * EVERY_S * S  # the first slow report
    early = LinkEvent(onset - 25 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 3.0)
    corr, _ = _slowing_job([early])
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW and v.cause_kind == CauseKind.UNKNOWN
    late = LinkEvent(onset - 5 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 3.0)
    corr, _ = _slowing_job([late])
    (v,) = corr.verdicts()
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK


LOOKAHEAD_S = TimeWindow().slow_lookahead_s


@pytest.mark.parametrize(
    ("kind", "after_onset_s", "span_s", "candidate"),
    [
        (LinkEventKind.FLAP, LOOKAHEAD_S - 1, 0.0, True),
        (LinkEventKind.FLAP, LOOKAHEAD_S + 5, 0.0, False),
        # A rate stamped later, whose sample reaches back to the onset, may have begun there.
        (LinkEventKind.ERROR_BURST, LOOKAHEAD_S + 5, 10.0, True),
        (LinkEventKind.ERROR_BURST, LOOKAHEAD_S + 15, 10.0, False),
    ],
    ids=["flap-at-onset", "flap-after-it", "rate-reaching-back", "rate-after-it"],
)
def test_an_anomaly_that_began_after_the_first_slow_report_does_not_explain_the_slowdown(
    kind: LinkEventKind, after_onset_s: float, span_s: float, candidate: bool
) -> None:
    """That report already gave the slowed pace: a link flapping twenty seconds later is
    another fault (world 64/225: it tied with the uplink that renegotiated its speed)."""
    n = WARMUP_REPORTS + BASELINE_REPORTS
    onset = T0 + (n + 1) * EVERY_S * S  # the first slow report
    at = onset + int(after_onset_s * S)
    event = LinkEvent(at, LEAF, LEAF_PORT, kind, 3.0, series="", span_s=span_s)
    corr, since = _slowing_job([event])
    assert since == onset
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW
    linked = {c.link.link_id for c in v.candidates if c.link is not None}
    assert (HOST_LINK in linked) is candidate


def test_a_long_slowdown_still_remembers_the_pace_it_had_before_its_onset():
    """Twenty slow reports push the last normal ones out of the recent window; the errors
    that began before the job last kept its pace are still ruled out, and the onset's errors
    still blamed."""
    n = WARMUP_REPORTS + BASELINE_REPORTS
    onset = T0 + (n + 1) * EVERY_S * S
    early = LinkEvent(onset - 25 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 3.0)
    corr = Correlator(fabric())
    feed(corr, [*job_facts(), *_steady(n), *_steady(20, step_ms=150.0, first=n + 1), early])
    (v,) = corr.verdicts()
    assert len(corr.job_view(JOB).pace.recent) < 20 + n  # the onset is out of the window
    assert v.state == JobState.SLOW and v.cause_kind == CauseKind.UNKNOWN


def test_a_slowed_jobs_uplink_losing_frames_is_blamed_over_uplinks_whose_fec_corrected_more():
    """Three spine uplinks the job may hash onto degrade at its onset; only one loses frames.
    What the FEC corrects costs a running job nothing, so the other two's rises (as large,
    against their own levels) are weak evidence of its slowdown, not a tie."""
    probe = Correlator(fabric())
    feed(probe, job_facts())
    lossy, *straining = _uplinks(probe)
    n = WARMUP_REPORTS + BASELINE_REPORTS
    onset = T0 + (n + 1) * EVERY_S * S

    def on(lid: str, kind: LinkEventKind, value: float) -> LinkEvent:
        ref = probe.fabric.links[lid]
        return LinkEvent(onset - 5 * S, ref.a.device, ref.a.interface, kind, value)

    events = [
        on(lossy, LinkEventKind.PRE_FEC_ERRORS, 6e6),
        on(lossy, LinkEventKind.FEC_UNCORRECTABLE, 40.0),
        *(on(lid, LinkEventKind.PRE_FEC_ERRORS, 6e6) for lid in straining),
    ]
    corr, _ = _slowing_job(events)
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW
    assert v.cause_link is not None and v.cause_link.link_id == lossy
    assert v.tied == () and v.diagnosis == "link-errors"
    scores = {c.link.link_id: c.score for c in v.candidates if c.link is not None}
    assert all(scores[lid] < scores[lossy] / 2 for lid in straining)


def test_a_stalled_jobs_link_whose_fec_corrected_more_is_blamed_as_before():
    """A job that stopped sends no frames, so its corrupting link shows no frame errors; the
    rise in what the FEC corrects is what is left, and keeps its full weight for a stall."""
    corr = Correlator(fabric())
    feed(corr, job_facts())
    stall = T0 + 100 * S
    timeout = CollectiveTimeout(
        stall + 600 * S, JOB, HOST_A, 0, 42, "ALLREDUCE", 600_000, 600_000, stall, ORIGIN
    )
    rise = LinkEvent(stall + 3 * S, LEAF, LEAF_PORT, LinkEventKind.PRE_FEC_ERRORS, 6e6)
    feed(corr, [rise, timeout])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK
    assert v.diagnosis == "link-errors"


def test_slowdown_with_nothing_on_the_jobs_links_is_slow_with_an_unknown_cause():
    # An error burst on a cable the job does not use does not change that.
    n = WARMUP_REPORTS + BASELINE_REPORTS
    elsewhere = LinkEvent(T0 + (n + 1) * EVERY_S * S, LEAF, "swp5", LinkEventKind.ERROR_BURST, 3.0)
    corr, since = _slowing_job([elsewhere])
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None
    assert v.stalled_at_ns == since
    assert "slowdown" in {e.kind for e in v.evidence}


# -- Correlator: spreading PFC pauses -----------------------------------------------------------


def _uplinks(corr: Correlator, count: int = 3) -> list[str]:
    """Some of LEAF's spine uplinks the job may hash onto."""
    links = sorted(lid for lid in corr.job_links(JOB) if lid.startswith(f"{LEAF}:"))
    links = [lid for lid in links if "spine" in lid]
    assert len(links) >= count
    return links[:count]


def _pfc_spread(corr: Correlator, at_ns: int, *, host_port_paused: bool = True) -> list:
    """HOST_A's NIC stops draining and pauses its leaf port; the leaf, filling up, pauses the
    spines on its uplinks (which they see as a storm received)."""
    events = []
    if host_port_paused:
        events.append(LinkEvent(at_ns, LEAF, LEAF_PORT, LinkEventKind.PFC_STORM, 50_000.0))
    for lid in _uplinks(corr):
        ref = corr.fabric.links[lid]
        leaf_end, spine_end = (ref.a, ref.b) if ref.a.device == LEAF else (ref.b, ref.a)
        at = at_ns + 2 * S
        storm, pausing = LinkEventKind.PFC_STORM, LinkEventKind.PFC_PAUSING
        events.append(LinkEvent(at, spine_end.device, spine_end.interface, storm, 50_000.0))
        events.append(LinkEvent(at, leaf_end.device, leaf_end.interface, pausing, 50_000.0))
    return events


@pytest.mark.parametrize("hang", ["watchdog", "silence"])
def test_pfc_spread_blames_the_port_where_it_starts_not_the_spine_victims(hang: str):
    corr = Correlator(fabric())
    if hang == "watchdog":
        feed(corr, job_facts())
        stall = T0 + 100 * S
        timeout = CollectiveTimeout(
            stall + 600 * S, JOB, HOST_A, 0, 42, "ALLREDUCE", 600_000, 600_000, stall, ORIGIN
        )
        feed(corr, [*_pfc_spread(corr, stall - 20 * S), timeout])
    else:
        feed(corr, job_facts())
        stall = T0 + 100 * S
        feed(corr, [*_steady(10), *_pfc_spread(corr, stall - 8 * S)])
        corr.advance(stall + (OVERDUE_S + 1) * S)
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.cause_link is not None and v.cause_link.link_id == HOST_LINK
    by_link = {c.link.link_id: c for c in v.candidates if c.link is not None}
    source = by_link[HOST_LINK]
    assert "pfc-source" in {e.kind for e in source.evidence}
    victims = [by_link[lid] for lid in _uplinks(corr)]
    for c in victims:
        assert "pfc-victim" in {e.kind for e in c.evidence}
        assert "pfc-source" not in {e.kind for e in c.evidence}
        assert c.score < MIN_BLAME_SCORE
        assert c.score < source.score / 3


def test_spine_pfc_storms_without_a_paused_leaf_are_not_victims():
    """Pauses the leaf sends are passed on only if the leaf is itself paused elsewhere."""
    corr = Correlator(fabric())
    feed(corr, job_facts())
    stall = T0 + 100 * S
    timeout = CollectiveTimeout(
        stall + 600 * S, JOB, HOST_A, 0, 42, "ALLREDUCE", 600_000, 600_000, stall, ORIGIN
    )
    feed(corr, [*_pfc_spread(corr, stall - 20 * S, host_port_paused=False), timeout])
    (v,) = corr.verdicts()
    kinds = {e.kind for c in v.candidates for e in c.evidence}
    assert "pfc-victim" not in kinds and "pfc-source" not in kinds
    assert HOST_LINK not in {c.link.link_id for c in v.candidates if c.link is not None}


# -- Correlator: a job that resumes -------------------------------------------------------------


def test_a_resumed_job_is_healthy_again_as_soon_as_its_next_step_report_arrives():
    """The embedded replay and the streaming worker both re-judge a job judged stalled from
    its silence on its next report: it went quiet for a checkpoint, or NCCL got through."""
    corr = Correlator(fabric())
    last = _silent_job(corr)
    feed(corr, [_down(last + 2 * S)])
    assert _only(corr.advance(last + (OVERDUE_S + 1) * S)).state == JobState.STALLED
    resumed = last + 50 * S
    assert _only(corr.observe(_report((resumed - T0) / S, 100.0, step=11))).state == (
        JobState.HEALTHY
    )
    (v,) = corr.verdicts()
    assert v.state == JobState.HEALTHY
    assert corr.reevaluate() == []


def test_hosts_of_the_job_are_known_from_its_step_reports_alone():
    """Without any NCCL lines the job's candidate links are its hosts' NIC cables."""
    corr = Correlator(fabric())
    feed(corr, _steady(10))
    links = corr.job_links(JOB)
    assert set(links) == {
        corr.fabric.link_at[Endpoint(HOST_A, nic)] for nic in corr.fabric.host_nics[HOST_A]
    }


def test_a_slowed_jobs_ecmp_member_whose_traffic_dipped_at_the_onset_carried_it() -> None:
    """A spine uplink renegotiated at half speed: its traffic dropped while it went down and
    up, which marks it as the member carrying the job (a drop scores nothing for a slowdown,
    but still says which member the job was on), so it is blamed at full path weight."""
    corr = Correlator(fabric())
    feed(corr, job_facts())
    n = WARMUP_REPORTS + BASELINE_REPORTS
    onset = T0 + (n + 1) * EVERY_S * S
    uplink = _uplinks(corr, 1)[0]
    port = (
        corr.fabric.links[uplink].a
        if corr.fabric.links[uplink].a.device == LEAF
        else (corr.fabric.links[uplink].b)
    )
    renegotiated = [
        LinkEvent(onset - 3 * S, port.device, port.interface, LinkEventKind.DOWN),
        LinkEvent(onset - 2 * S, port.device, port.interface, LinkEventKind.TRAFFIC_DROP, 0.0),
        LinkEvent(onset - 1 * S, port.device, port.interface, LinkEventKind.SPEED_DOWN, 400.0),
    ]
    feed(corr, [*_steady(n), *_steady(SLOW_REPORTS + 1, step_ms=150.0, first=n + 1), *renegotiated])
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW and v.cause_link is not None
    assert v.cause_link.link_id == uplink and v.diagnosis == "link-speed"
    assert v.candidates[0].score > 0.9


@pytest.mark.parametrize("capacity_lost", [False, True], ids=["kept-capacity", "went-down"])
def test_a_slowed_job_takes_a_traffic_drop_as_its_own_only_where_the_link_lost_capacity(
    capacity_lost: bool,
) -> None:
    """Two of the job's ECMP members show the same errors as it slows; one also lost its
    traffic. A slowed job's traffic never stops: on a link that kept its capacity the drop is
    another job's traffic stopping, so it says nothing of which member this job was on. Where
    the link went down the drop shows it carried the job; the other member is not idle for
    that (the job's traffic goes on, rehashed or not), and keeps its member's weight."""
    corr = Correlator(fabric())
    feed(corr, job_facts())
    n = WARMUP_REPORTS + BASELINE_REPORTS
    onset = T0 + (n + 1) * EVERY_S * S
    dropped, other = _uplinks(corr, 2)

    def leaf_port(lid: str) -> Endpoint:
        ref = corr.fabric.links[lid]
        return ref.a if ref.a.device == LEAF else ref.b

    events = []
    for lid in (dropped, other):
        port = leaf_port(lid)
        events.append(
            LinkEvent(onset - 4 * S, port.device, port.interface, LinkEventKind.ERROR_BURST, 5.0)
        )
    port = leaf_port(dropped)
    if capacity_lost:
        events.append(LinkEvent(onset - 3 * S, port.device, port.interface, LinkEventKind.FLAP))
    events.append(
        LinkEvent(onset - 2 * S, port.device, port.interface, LinkEventKind.TRAFFIC_DROP, 0.0)
    )
    feed(corr, [*_steady(n), *_steady(SLOW_REPORTS + 1, step_ms=150.0, first=n + 1), *events])
    (v,) = corr.verdicts()
    assert v.state == JobState.SLOW
    scores = {c.link.link_id: c.score for c in v.candidates if c.link is not None}
    if capacity_lost:
        assert v.cause_link is not None and v.cause_link.link_id == dropped
        # Not scaled down as an idle member: about half the carrier's, for its path weight.
        assert IDLE_FACTOR * scores[dropped] < scores[other] < scores[dropped]
    else:
        assert scores[dropped] == scores[other]  # nothing tells them apart
        assert v.confidence <= scores[dropped] / 2


def test_the_time_of_one_step_comes_from_the_step_numbers_between_reports():
    pace = Pace()
    pace.add(_report(0, step=100))
    pace.add(_report(EVERY_S, step=110))
    assert pace.step_ns() is None  # one interval is not yet a usual one
    pace.add(_report(2 * EVERY_S, step=120))
    pace.add(_report(3 * EVERY_S + 5, step=130))  # one slower interval does not move the median
    assert pace.step_ns() == EVERY_S * S // 10
    assert pace.step_ns(T0 + EVERY_S * S) is None  # as the reports stood then


def test_reports_without_rising_step_numbers_give_no_step_time():
    pace = Pace()
    for i in range(6):
        pace.add(_report(i * EVERY_S, step=7))
    assert pace.interval_ns() == EVERY_S * S
    assert pace.step_ns() is None


def test_a_fault_anywhere_in_a_long_report_interval_before_a_slowdown_is_at_its_onset():
    """Reports every 100 s (Megatron's default log interval at 1 s a step): a port down to
    half speed 90 s before the first slow report began the slowdown as surely as one 1 s
    before it; measured from that report, it weighed exp(-90/90) and the job's culprit went
    unnamed (the world's speed-down incidents at long cadences)."""
    every = 100
    n = WARMUP_REPORTS + BASELINE_REPORTS
    normal = [_report(i * every, 100.0, step=i) for i in range(1, n + 1)]
    slow = [_report(i * every, 150.0, step=i) for i in range(n + 1, n + 2 + SLOW_REPORTS)]
    first_slow = slow[0].ts_ns
    port = Endpoint(LEAF, LEAF_PORT)

    def verdict(before_s: int) -> Verdict:
        at = first_slow - before_s * S
        event = LinkEvent(at, port.device, port.interface, LinkEventKind.SPEED_DOWN, 400.0)
        corr = Correlator(fabric())
        feed(corr, [*job_facts(), *normal, *slow, event])
        return _only(corr.verdicts())

    early, late = verdict(90), verdict(1)
    assert late.state == JobState.SLOW and late.cause_link is not None
    assert early.state == JobState.SLOW and early.cause_link == late.cause_link
    assert early.confidence == pytest.approx(late.confidence)
    # The report before the first slow one may have averaged in some slow steps; before the
    # interval it covered, the job kept its normal pace through the fault: no cause.
    assert verdict(every + every // 2).cause_link == late.cause_link
    assert verdict(2 * every + 5).cause_kind == CauseKind.UNKNOWN
