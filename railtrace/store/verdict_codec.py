"""Verdict <-> JSON, losslessly.

The `verdicts` table keeps the whole verdict as JSON in `payload` (its other columns are only a
projection for filtering), so reading a verdict back must give an equal `Verdict`. The records'
one codec (`railtrace.streams.codec`, also used on Kafka) does the shape; a payload that no
longer matches the record fails loudly instead of yielding a half-filled verdict.
"""

from __future__ import annotations

import math

import orjson

from railtrace.streams import codec
from railtrace.streams.records import Verdict


class VerdictPayloadError(ValueError):
    """A stored payload that does not decode to a Verdict."""


def encode_verdict(verdict: Verdict) -> str:
    """The verdict as a JSON string; non-finite scores are refused because JSON has no NaN."""
    scores = [verdict.confidence, *(c.score for c in verdict.candidates)]
    if not all(math.isfinite(s) for s in scores):
        raise ValueError(f"verdict for job {verdict.job_id!r} has a non-finite score")
    return orjson.dumps(codec.encode(verdict)).decode()


def decode_verdict(payload: str | bytes) -> Verdict:
    """Parse a payload written by `encode_verdict` back into the equal Verdict."""
    try:
        return codec.decode(orjson.loads(payload), Verdict)
    except (orjson.JSONDecodeError, codec.CodecError) as exc:
        raise VerdictPayloadError(f"stored verdict payload is not a verdict: {exc}") from exc
