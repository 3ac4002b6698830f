"""Verdict <-> JSON, losslessly.

The `verdicts` table keeps the whole verdict as JSON in `payload` (its other columns are only a
projection for filtering), so reading a verdict back must give an equal `Verdict`. orjson writes
the dataclasses directly (enums as their values, tuples as arrays, floats in shortest
round-tripping form); decoding rebuilds the records field by field, so a payload that no longer
matches the record shape fails loudly instead of yielding a half-filled verdict.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from railtrace.streams.records import (
    Candidate,
    CauseKind,
    Endpoint,
    Evidence,
    JobState,
    LinkRef,
    Verdict,
)


class VerdictPayloadError(ValueError):
    """A stored payload that does not decode to a Verdict."""


def encode_verdict(verdict: Verdict) -> str:
    """The verdict as a JSON string; non-finite scores are refused because JSON has no NaN."""
    scores = [verdict.confidence, *(c.score for c in verdict.candidates)]
    if not all(math.isfinite(s) for s in scores):
        raise ValueError(f"verdict for job {verdict.job_id!r} has a non-finite score")
    return orjson.dumps(verdict).decode()


def decode_verdict(payload: str | bytes) -> Verdict:
    """Parse a payload written by `encode_verdict` back into the equal Verdict."""
    try:
        d = orjson.loads(payload)
        return Verdict(
            job_id=d["job_id"],
            state=JobState(d["state"]),
            stalled_at_ns=d["stalled_at_ns"],
            decided_at_ns=d["decided_at_ns"],
            cause_kind=CauseKind(d["cause_kind"]),
            cause_link=_link(d["cause_link"]),
            cause_node=d["cause_node"],
            confidence=float(d["confidence"]),
            candidates=tuple(_candidate(c) for c in d["candidates"]),
            evidence=tuple(_evidence(e) for e in d["evidence"]),
            ranks=d["ranks"],
            hosts=d["hosts"],
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise VerdictPayloadError(f"stored verdict payload is not a verdict: {exc}") from exc


def _link(d: dict[str, Any] | None) -> LinkRef | None:
    if d is None:
        return None
    return LinkRef(link_id=d["link_id"], a=Endpoint(**d["a"]), b=Endpoint(**d["b"]))


def _evidence(d: dict[str, Any]) -> Evidence:
    return Evidence(
        ts_ns=d["ts_ns"],
        source=d["source"],
        kind=d["kind"],
        subject=d["subject"],
        detail=d["detail"],
    )


def _candidate(d: dict[str, Any]) -> Candidate:
    return Candidate(
        kind=CauseKind(d["kind"]),
        score=float(d["score"]),
        link=_link(d["link"]),
        node=d["node"],
        evidence=tuple(_evidence(e) for e in d["evidence"]),
    )
