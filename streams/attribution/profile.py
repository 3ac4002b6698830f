"""The attribution profile: every threshold, weight, window and cadence that link health and
attribution judge by, in one typed section (`[attribution]` in the settings).

Replay, the streaming workers and the API are each handed the same profile by their
composition root, so a setting changed once changes what all of them say. Each field's
description is the reason for its default; the README's attribution page lists them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from railtrace.streams.attribution.cost import CostRules
from railtrace.streams.attribution.pace import PaceRules
from railtrace.streams.attribution.scoring import ScoringRules, TimeWindow
from railtrace.streams.telemetry.thresholds import Thresholds


class JudgingRules(BaseModel):
    """When a candidate becomes a culprit, and how much of the rest a verdict shows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_blame_score: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="Below this score nothing is blamed: the verdict says `unknown` rather "
        "than guess.",
    )
    min_confidence: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="A leading candidate whose confidence (its score times its margin over "
        "the next) is below this is not named: the verdict says `unknown` and lists the "
        "candidates, since a confident wrong answer costs more than none.",
    )
    tie_margin: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="A candidate scoring within this fraction of the best is tied with it: "
        "the verdict names the best but flags the tie and lists the tied candidates, and no "
        "page or alert draws one culprit.",
    )
    calibration: tuple[tuple[float, float], ...] = Field(
        default=(),
        description="The map from the margin rule's confidence to the share of blames that "
        "are right: (raw, probability) knots, raw increasing, probability not decreasing, "
        "straight lines between them. Fitted by `benchmarks/accuracy.py --world --calibrate` "
        "over graded worlds; empty, the verdict shows the raw confidence. `min_confidence` "
        "is held against the raw confidence, so a new map never changes what is blamed.",
    )
    max_candidates: int = Field(
        default=5, ge=1, le=50, description="Candidates a verdict lists, best first."
    )
    max_evidence: int = Field(
        default=12, ge=1, le=100, description="Evidence lines a verdict carries."
    )
    drop_slack_s: float = Field(
        default=15.0,
        ge=0,
        description="A traffic drop this long before the estimated stall still counts as the "
        "job's traffic stopping with it: the estimate can be late by a sampling interval.",
    )
    survival_slack_s: float = Field(
        default=2.0,
        ge=0,
        description="Room for the hosts' and switches' clocks to disagree, and for a log "
        "shipper's stamp to be late, when a step report is held against a link's state "
        "change.",
    )

    @model_validator(mode="after")
    def _monotone_calibration(self) -> JudgingRules:
        knots = self.calibration
        for x, y in knots:
            if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
                raise ValueError(f"calibration knot ({x}, {y}) is outside [0, 1]")
        for (x0, y0), (x1, y1) in itertools.pairwise(knots):
            if x1 <= x0 or y1 < y0:
                raise ValueError(
                    f"calibration knots must rise: ({x0}, {y0}) then ({x1}, {y1}); raw strictly, "
                    "probability never falling"
                )
        return self


class AttributionProfile(BaseModel):
    """Link health (`health`), the time window around a stall (`window`), how step reports
    are read (`pace`), the weights (`scoring`), when to blame (`judging`) and how a stall's
    GPU time is counted (`cost`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    health: Thresholds = Field(default_factory=Thresholds)
    window: TimeWindow = Field(default_factory=TimeWindow)
    pace: PaceRules = Field(default_factory=PaceRules)
    scoring: ScoringRules = Field(default_factory=ScoringRules)
    judging: JudgingRules = Field(default_factory=JudgingRules)
    cost: CostRules = Field(default_factory=CostRules)


DEFAULT_PROFILE = AttributionProfile()


@dataclass(frozen=True, slots=True)
class Entry:
    """One tunable of a profile: its dotted settings key, value, default and reason."""

    key: str
    value: Any
    default: Any
    reason: str


def entries(profile: AttributionProfile) -> list[Entry]:
    """Every tunable of `profile`, section by section in declaration order: what
    `railtrace profile` prints and the README's attribution page lists."""
    out = []
    for section, info in AttributionProfile.model_fields.items():
        model: BaseModel = getattr(profile, section)
        default: BaseModel = getattr(DEFAULT_PROFILE, section)
        for name, field in type(model).model_fields.items():
            out.append(
                Entry(
                    f"attribution.{section}.{name}",
                    getattr(model, name),
                    getattr(default, name),
                    field.description or info.description or "",
                )
            )
    return out


def shown(value: Any) -> str:
    """A setting's value as a TOML-minded reader types it; a weight table by key."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {shown(v)}" for k, v in value.items())
    if isinstance(value, tuple | list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{value:.1f}"
    return str(value)
