"""The attribution profile: one typed section, read from the config file and the environment,
that the correlator, the pace reader and the docs all take their figures from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from attribution_support import (
    HOST_A,
    HOST_LINK,
    JOB,
    LEAF,
    LEAF_PORT,
    ORIGIN,
    T0,
    S,
    feed,
    job_facts,
)
from attribution_support import fabric as reference_fabric
from pydantic import ValidationError
from typer.testing import CliRunner

from railtrace.cli import app
from railtrace.render import profile_markdown
from railtrace.settings import load_settings
from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.pace import Pace, PaceRules
from railtrace.streams.attribution.profile import (
    DEFAULT_PROFILE,
    AttributionProfile,
    JudgingRules,
    entries,
)
from railtrace.streams.attribution.scoring import ScoringRules
from railtrace.streams.records import (
    CauseKind,
    CollectiveTimeout,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    Progress,
)

README = Path(__file__).resolve().parents[1] / "README.md"
#: HOST_B's rail-0 cable, seen from its leaf: the other end of the job's one network hop.
OTHER_LEAF, OTHER_PORT = "leaf-su02-r0", "swp1"


def _two_cables_down() -> list:
    """The job's two host cables go down at once and the job hangs: two candidates at full
    score, a coin toss (confidence 0.5)."""
    fault = T0 + 100 * S
    hung = CollectiveTimeout(
        fault + 600 * S, JOB, HOST_A, 0, 42, "ALLREDUCE", 600_000, 600_000, fault, ORIGIN
    )
    return [
        *job_facts(),
        LinkEvent(fault, LEAF, LEAF_PORT, LinkEventKind.DOWN),
        LinkEvent(fault, OTHER_LEAF, OTHER_PORT, LinkEventKind.DOWN),
        hung,
    ]


def _verdict(profile: AttributionProfile):
    corr = Correlator(reference_fabric(), profile)
    feed(corr, _two_cables_down())
    (v,) = corr.verdicts()
    return v


def test_a_coin_toss_below_min_confidence_is_unknown_with_both_candidates_listed() -> None:
    named = _verdict(DEFAULT_PROFILE)
    assert named.cause_kind == CauseKind.LINK and named.confidence == pytest.approx(0.5)
    strict = AttributionProfile(judging=JudgingRules(min_confidence=0.6))
    v = _verdict(strict)
    assert v.state == JobState.STALLED
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None and v.confidence == 0.0
    listed = {c.link.link_id for c in v.candidates if c.link is not None}
    assert HOST_LINK in listed and len(listed) >= 2


def test_two_candidates_within_the_tie_margin_make_a_flagged_tie_listing_both() -> None:
    v = _verdict(DEFAULT_PROFILE)
    other = f"hgx-su02-01:mlx5_0--{OTHER_LEAF}:{OTHER_PORT}"
    assert set(v.tied) == {HOST_LINK, other} and v.tied[0] == v.cause_link.link_id
    # One cable down alone is a clear culprit: no tie.
    corr = Correlator(reference_fabric())
    feed(corr, [r for r in _two_cables_down() if getattr(r, "device", "") != OTHER_LEAF])
    (alone,) = corr.verdicts()
    assert alone.cause_link is not None and alone.cause_link.link_id == HOST_LINK
    assert alone.tied == ()


def test_the_calibration_map_changes_the_confidence_shown_but_not_what_is_blamed() -> None:
    raw = _verdict(DEFAULT_PROFILE)
    mapped = _verdict(
        AttributionProfile(judging=JudgingRules(calibration=((0.4, 0.2), (0.6, 0.3))))
    )
    # The coin toss (raw 0.5) is still named, min_confidence holding the raw figure, but its
    # confidence is what the map says blames at 0.5 are worth.
    assert mapped.cause_link == raw.cause_link and mapped.cause_kind == CauseKind.LINK
    assert mapped.confidence == pytest.approx(0.25)
    assert mapped.candidates == raw.candidates and mapped.tied == raw.tied


@pytest.mark.parametrize(
    ("knots", "why"),
    [
        (((0.5, 0.6), (0.4, 0.7)), "must rise"),
        (((0.4, 0.8), (0.6, 0.7)), "must rise"),
        (((0.4, 0.8), (0.4, 0.9)), "must rise"),
        (((0.4, 1.2),), "outside"),
        (((-0.1, 0.2),), "outside"),
    ],
)
def test_a_calibration_map_that_falls_or_leaves_zero_to_one_is_refused(
    knots: tuple[tuple[float, float], ...], why: str
) -> None:
    with pytest.raises(ValidationError, match=why):
        JudgingRules(calibration=knots)


def test_the_calibration_map_is_read_from_the_config_file_as_a_toml_array(tmp_path: Path) -> None:
    config = tmp_path / "railtrace.toml"
    config.write_text("[attribution.judging]\ncalibration = [[0.4, 0.7], [0.9, 0.95]]\n")
    assert load_settings(config).attribution.judging.calibration == ((0.4, 0.7), (0.9, 0.95))


def test_the_config_file_and_the_environment_set_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "railtrace.toml"
    config.write_text("[attribution.pace]\nslow_ratio = 1.5\n[attribution.judging]\n")
    monkeypatch.setenv("RAILTRACE_ATTRIBUTION__JUDGING__MIN_CONFIDENCE", "0.6")
    monkeypatch.setenv("RAILTRACE_ATTRIBUTION__HEALTH__PFC_PAUSE_PER_S", "1e6")
    profile = load_settings(config).attribution
    assert profile.pace.slow_ratio == 1.5
    assert profile.judging.min_confidence == 0.6
    assert profile.health.pfc_pause_per_s == 1e6
    assert profile.window == DEFAULT_PROFILE.window  # the rest keep their defaults
    assert _verdict(profile).cause_kind == CauseKind.UNKNOWN


def test_a_key_the_profile_does_not_have_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # attribution.lookback_s was the key before the profile had sections.
    monkeypatch.setenv("RAILTRACE_ATTRIBUTION__LOOKBACK_S", "30")
    with pytest.raises(ValidationError, match=r"attribution\.lookback_s"):
        load_settings(None)


def test_a_kind_weight_table_that_leaves_a_kind_out_is_refused() -> None:
    weights = dict(ScoringRules().kind_weight)
    del weights[LinkEventKind.FLAP]
    with pytest.raises(ValidationError, match="no weight for flap"):
        ScoringRules(kind_weight=weights)


def _report(t_s: int, step_ms: float, step: int) -> Progress:
    return Progress(T0 + t_s * S, JOB, HOST_A, step, step_ms, None, LogOrigin("train.log", step))


def test_the_slow_ratio_setting_decides_whether_a_job_slowed() -> None:
    """A job 1.3x slower than its normal pace: slow by the defaults, not by a profile that
    asks for 1.5 at least, in a view restored from a snapshot too (a snapshot keeps no
    rules)."""
    rules = PaceRules()
    normal = rules.warmup_reports + rules.baseline_reports
    reports = [_report(10 * k, 100.0, k) for k in range(normal)]
    reports += [_report(10 * k, 130.0, k) for k in range(normal, normal + rules.slow_reports)]
    strict = PaceRules(slow_ratio=1.5, min_slow_ratio=1.5)
    for pace_rules, slowed in ((rules, True), (strict, False)):
        pace = Pace(rules=pace_rules)
        for r in reports:
            pace.add(r)
        assert (pace.slow_since() is not None) is slowed
        view = JobView(JOB, pace=Pace(rules=pace_rules))
        for r in reports[:-1]:
            view.add(r)
        restored = JobView.restore(view.snapshot(), pace_rules)
        restored.add(reports[-1])
        assert (restored.pace.slow_since() is not None) is slowed


def test_the_readme_lists_every_setting_with_its_default() -> None:
    text = README.read_text()
    found = re.search(r"<!-- profile:begin -->\n(.*?)\n<!-- profile:end -->", text, re.S)
    assert found, "README.md has no profile table between its markers"
    assert found[1] == profile_markdown(entries(DEFAULT_PROFILE)), (
        "README's profile table is stale: paste `railtrace profile --markdown` between the markers"
    )


def test_railtrace_profile_shows_a_changed_setting_beside_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAILTRACE_ATTRIBUTION__JUDGING__MIN_CONFIDENCE", "0.6")
    monkeypatch.setenv("COLUMNS", "200")
    done = CliRunner().invoke(app, ["profile", "--changed"])
    assert done.exit_code == 0, done.output
    rows = [line for line in done.output.splitlines() if "attribution." in line]
    assert len(rows) == 1 and "min_confidence" in rows[0], done.output
    assert "0.6" in rows[0] and "0.35" in rows[0]
