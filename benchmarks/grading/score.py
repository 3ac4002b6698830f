"""One job's final verdict against the world's or the simulator's truth: what counts as top-1,
top-3, node-vs-link, a false blame; pure, so the tests pin it on hand-made truths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from railtrace.streams.attribution.scoring import confidence as margin_confidence
from railtrace.streams.records import CauseKind, JobState, Verdict
from railtrace.topology.ends import LinkRef

#: The job groups a score falls in.
FABRIC, NON_FABRIC, HEALTHY = "fabric", "non-fabric", "healthy"
NS = 1e9


@dataclass(frozen=True, slots=True)
class JobScore:
    """One job's final verdict against the truth.

    `top1`, `top3` and `kind_ok` only mean something for affected jobs (False for healthy ones);
    the times are None when either end is unknown.
    """

    job_id: str
    group: str  # FABRIC, NON_FABRIC or HEALTHY
    truth_state: str  # "stalled", "slow", "healthy"
    seen_state: str  # the verdict's state, "missing" when the job got no verdict
    blamed: bool
    state_ok: bool
    top1: bool
    top3: bool
    kind_ok: bool
    side_ok: bool
    false_blame: bool
    confidence: float
    after_fault_s: float | None = None
    lead_s: float | None = None
    before_watchdog: bool | None = None
    #: The truth says the evidence cannot tell this job's culprit (see `_undecidable`).
    undecidable: bool = False
    #: What told of the fault at once (the world's truth: "link-state", "nccl", "kernel").
    evidence: tuple[str, ...] = ()
    #: The blame's confidence before the profile's calibration map, from the verdict's top
    #: two candidates: what a calibration map is fitted on.
    raw_confidence: float = 0.0

    @property
    def affected(self) -> bool:
        return self.group != HEALTHY


def _link_name(a: tuple[str, str], b: tuple[str, str]) -> str:
    """A cable named by its two ends, sorted: the simulator's link ids and the world's cable
    names are compared on what they are, not on how either spells an id."""
    return "--".join(sorted(f"{device}:{interface}" for device, interface in (a, b)))


def _culprit(want: dict[str, Any]) -> str | None:
    if want.get("cause") == "link":
        link = want.get("link") or {}
        if "a" in link and "b" in link:
            ends = link["a"], link["b"]
            return _link_name(*((e["device"], e["interface"]) for e in ends))
        return link.get("id")
    if want.get("cause") == "node":
        node: str | None = want.get("node")
        return node
    return None


def _ref_name(ref: LinkRef) -> str:
    return _link_name((ref.a.device, ref.a.interface), (ref.b.device, ref.b.interface))


def _blamed_name(v: Verdict) -> str | None:
    if v.cause_kind == CauseKind.LINK:
        return _ref_name(v.cause_link) if v.cause_link is not None else None
    if v.cause_kind == CauseKind.NODE:
        return v.cause_node
    return None


def score_job(truth: dict[str, Any], job_id: str, v: Verdict | None) -> JobScore:
    """Score one job's verdict (None: the job got none) against `truth["jobs"][job_id]`."""
    want = truth["jobs"][job_id]
    seen = str(v.state) if v is not None else "missing"
    blamed = v is not None and v.cause_kind != CauseKind.UNKNOWN
    confidence = v.confidence if v is not None else 0.0
    raw = _raw_confidence(v) if blamed and v is not None else 0.0
    if want["state"] == "healthy":
        return JobScore(
            job_id,
            HEALTHY,
            "healthy",
            seen,
            blamed,
            state_ok=seen in (JobState.HEALTHY, JobState.UNKNOWN),
            top1=False,
            top3=False,
            kind_ok=False,
            side_ok=False,
            false_blame=blamed or seen in (JobState.STALLED, JobState.SLOW),
            confidence=confidence,
            raw_confidence=raw,
        )
    cause = want.get("cause") or "unknown"
    group = FABRIC if cause in ("link", "node") else NON_FABRIC
    culprit = _culprit(want)
    state_ok = seen == want["state"]
    if want.get("undecidable"):
        return _undecidable(job_id, group, want, v, culprit, raw)
    if v is None:  # never seen: nothing right, nothing blamed
        no = False
        return JobScore(job_id, group, want["state"], seen, no, no, no, no, no, no, no, 0.0)
    if group == FABRIC:
        right = culprit is not None and v.cause_kind == cause and _blamed_name(v) == culprit
        names = [(str(c.kind), _ref_name(c.link) if c.link else c.node) for c in v.candidates[:3]]
        top1 = state_ok and right
        top3 = top1 or (culprit is not None and (cause, culprit) in names)
    else:
        right = not blamed
        top1 = state_ok and right
        top3 = right
    fault_at = want.get("fault_at_ns")
    if fault_at is None:
        fault_at = truth.get("fault_at_ns")
    watchdog_at = want.get("watchdog_at_ns")
    decided = v.decided_at_ns
    return JobScore(
        job_id,
        group,
        want["state"],
        seen,
        blamed,
        state_ok=state_ok,
        top1=top1,
        top3=top3,
        kind_ok=v.cause_kind == cause,
        side_ok=v.diagnosis == (want.get("diagnosis") or ""),
        false_blame=blamed and not right,
        confidence=confidence,
        after_fault_s=(decided - fault_at) / NS
        if decided is not None and fault_at is not None
        else None,
        lead_s=(watchdog_at - decided) / NS
        if decided is not None and watchdog_at is not None
        else None,
        before_watchdog=decided < watchdog_at
        if decided is not None and watchdog_at is not None
        else None,
        evidence=tuple(want.get("evidence") or ()),
        raw_confidence=raw,
    )


def _raw_confidence(v: Verdict) -> float:
    """The confidence the correlator's margin rule gives the verdict's leader over the next
    candidate, before any calibration map."""
    best = v.candidates[0].score if v.candidates else 0.0
    runner_up = v.candidates[1].score if len(v.candidates) > 1 else 0.0
    return margin_confidence(best, runner_up)


def _undecidable(
    job_id: str,
    group: str,
    want: dict[str, Any],
    v: Verdict | None,
    culprit: str | None,
    raw: float,
) -> JobScore:
    """A job whose culprit the evidence cannot tell (the truth says why): right only when the
    verdict blames nothing, or flags a tie that holds the culprit."""
    seen = str(v.state) if v is not None else "missing"
    blamed = v is not None and v.cause_kind != CauseKind.UNKNOWN
    tied = set()
    if v is not None:
        refs = {c.link.link_id: c.link for c in v.candidates if c.link is not None}
        tied = {_ref_name(refs[t]) if t in refs else t for t in v.tied}
    right = not blamed or (culprit is not None and culprit in tied)
    return JobScore(
        job_id,
        group,
        want["state"],
        seen,
        blamed,
        state_ok=right,
        top1=right,
        top3=right,
        kind_ok=right,
        side_ok=right,
        false_blame=not right,
        confidence=v.confidence if v is not None else 0.0,
        undecidable=True,
        raw_confidence=raw,
    )


def score_incident(truth: dict[str, Any], verdicts: Sequence[Verdict]) -> list[JobScore]:
    """Score every job of the truth, in job id order. A job without a verdict scores as unseen;
    a verdict for a job the truth does not know is ignored."""
    by_job = {v.job_id: v for v in verdicts}
    return [score_job(truth, job_id, by_job.get(job_id)) for job_id in sorted(truth["jobs"])]
