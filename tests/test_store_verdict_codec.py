"""A verdict stored as JSON comes back as an equal Verdict."""

from __future__ import annotations

import dataclasses

import pytest
import store_samples as s

from railtrace.store.verdict_codec import VerdictPayloadError, decode_verdict, encode_verdict
from railtrace.streams.records import CauseKind, Evidence, JobState, Verdict

CASES = {
    "link cause with ranked candidates": s.verdict(),
    "unknown, nothing known yet": Verdict(
        job_id="j",
        state=JobState.UNKNOWN,
        stalled_at_ns=None,
        decided_at_ns=None,
        cause_kind=CauseKind.UNKNOWN,
        cause_link=None,
        cause_node=None,
        confidence=0.0,
    ),
    "node cause": dataclasses.replace(
        s.verdict(), cause_kind=CauseKind.NODE, cause_link=None, cause_node="gpu-node-12"
    ),
    "awkward floats and text": dataclasses.replace(
        s.verdict(),
        confidence=0.1 + 0.2,
        evidence=(Evidence(2**62, "kernel", "xid", "gpu-node-12", 'Xid 79 "fallen" \u00e9\n'),),
    ),
    "pre-epoch time": dataclasses.replace(s.verdict(), stalled_at_ns=-1),
}


@pytest.mark.parametrize("verdict", CASES.values(), ids=CASES.keys())
def test_round_trip_is_lossless(verdict: Verdict) -> None:
    assert decode_verdict(encode_verdict(verdict)) == verdict


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_confidence_is_refused_rather_than_stored_as_null(bad: float) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        encode_verdict(dataclasses.replace(s.verdict(), confidence=bad))


@pytest.mark.parametrize(
    "payload", ["not json", "{}", '{"job_id": "j", "state": "exploded"}', "[1, 2]"]
)
def test_a_payload_that_is_not_a_verdict_fails_loudly(payload: str) -> None:
    with pytest.raises(VerdictPayloadError):
        decode_verdict(payload)
