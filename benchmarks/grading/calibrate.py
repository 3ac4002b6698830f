"""A calibration map fitted to graded blames, and how well it holds on blames it was not fitted
on.

The correlator's confidence is a margin rule (the leader's score times its share of the top
two), not a probability. Over graded worlds each blame is a (raw confidence, right) pair; an
isotonic fit of right on raw (pool adjacent violators) is the monotone map that best turns
one into the other, and its blocks become the knots of `attribution.judging.calibration`.
Each block's probability is Laplace-smoothed ((right + 1) / (n + 2)), so that a block where
every blame was right says "very likely", never "certain". Fitted on half the seeds and
scored on the other half, the expected calibration error says what the map will do on worlds
it has not seen; the knots printed for the profile are fitted on every blame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from benchmarks.grading.score import JobScore
from benchmarks.grading.tables import calibration, expected_calibration_error
from railtrace.streams.attribution.scoring import calibrated

Knots = tuple[tuple[float, float], ...]


@dataclass(slots=True)
class _Block:
    raw_sum: float
    n: int
    right: int

    @property
    def rate(self) -> float:
        return self.right / self.n


def fit(pairs: Sequence[tuple[float, bool]]) -> Knots:
    """Knots (raw, probability) of the isotonic fit of `pairs` (raw confidence, right), one
    per block at the block's mean raw confidence; () when there is nothing to fit."""
    # Blames of one raw confidence start as one block: the order they came in says nothing.
    start: dict[float, _Block] = {}
    for raw, right in pairs:
        b = start.setdefault(raw, _Block(0.0, 0, 0))
        b.raw_sum, b.n, b.right = b.raw_sum + raw, b.n + 1, b.right + int(right)
    blocks: list[_Block] = []
    for raw in sorted(start):
        blocks.append(start[raw])
        while len(blocks) > 1 and blocks[-2].rate >= blocks[-1].rate:
            last = blocks.pop()
            prev = blocks[-1]
            blocks[-1] = _Block(
                prev.raw_sum + last.raw_sum, prev.n + last.n, prev.right + last.right
            )
    knots: list[tuple[float, float]] = []
    for b in blocks:
        x = round(b.raw_sum / b.n, 4)
        y = round((b.right + 1) / (b.n + 2), 4)
        if knots and y < knots[-1][1]:
            y = knots[-1][1]  # smoothing may undo the order of two small blocks
        knots.append((x, y))
    return tuple(knots)


def blames(scores: Sequence[JobScore]) -> list[tuple[float, bool]]:
    """(raw confidence, top-1) of each blame on an affected job: what the table bins."""
    return [(s.raw_confidence, s.top1) for s in scores if s.affected and s.blamed]


def recalibrated(scores: Sequence[JobScore], knots: Knots) -> list[JobScore]:
    """The scores with each blame's confidence given by `knots` from its raw confidence."""
    return [
        replace(s, confidence=calibrated(knots, s.raw_confidence)) if s.blamed else s
        for s in scores
    ]


@dataclass(frozen=True, slots=True)
class HeldOut:
    """A map fitted on one half of the seeds, scored on the other."""

    knots: Knots
    fitted_on: int  # blames
    scored_on: int
    ece_before: float | None  # the other half's blames at the confidence replay gave them
    ece_after: float | None  # the same blames through the fitted map


def held_out(fit_on: Sequence[JobScore], score_on: Sequence[JobScore]) -> HeldOut:
    fitted = blames(fit_on)
    knots = fit(fitted)
    return HeldOut(
        knots,
        len(fitted),
        len(blames(score_on)),
        expected_calibration_error(calibration(score_on)),
        expected_calibration_error(calibration(recalibrated(score_on, knots))),
    )


def format_knots(knots: Knots) -> str:
    """The knots as the TOML line of the settings file's `[attribution.judging]` section."""
    pairs = ", ".join(f"[{x:g}, {y:g}]" for x, y in knots)
    return f"calibration = [{pairs}]"
