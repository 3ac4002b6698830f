"""A job's verdict as the API returns it, and the job lists, next steps and timeline
around it.

`VerdictOut.from_record` is the one mapping from a Verdict to its JSON: the API returns it and
the CLI's `railtrace verdict --json` prints it, so both show the same document; `to_record`
turns a document fetched from another process's API back into the Verdict.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from railtrace.api.schemas.common import LinkOut, iso_or_none, iso_utc, model_from, record_from
from railtrace.store import JobSummary
from railtrace.streams.attribution.cost import cost_text, incident_cost
from railtrace.streams.records import (
    Candidate,
    CauseKind,
    Diagnosis,
    Evidence,
    JobState,
    Verdict,
)


class EvidenceOut(BaseModel):
    ts: str
    ts_ns: int
    source: str = Field(description='"gnmi", "nccl", "pytorch", "kernel" or "topology".')
    kind: str
    subject: str = Field(description="The link id, host or rank the observation is about.")
    detail: str

    @classmethod
    def from_record(cls, e: Evidence) -> EvidenceOut:
        return model_from(cls, e, ts=iso_utc(e.ts_ns))

    def to_record(self) -> Evidence:
        return record_from(Evidence, self)


class CandidateOut(BaseModel):
    rank: int = Field(description="1 for the most likely cause.")
    kind: CauseKind
    link: LinkOut | None
    node: str | None
    score: float
    evidence: list[EvidenceOut]

    @classmethod
    def from_record(cls, rank: int, c: Candidate) -> CandidateOut:
        return model_from(
            cls,
            c,
            rank=rank,
            link=LinkOut.from_record(c.link),
            evidence=[EvidenceOut.from_record(e) for e in c.evidence],
        )

    def to_record(self) -> Candidate:
        return record_from(
            Candidate,
            self,
            link=self.link.to_record() if self.link else None,
            evidence=tuple(e.to_record() for e in self.evidence),
        )


class CauseOut(BaseModel):
    kind: CauseKind
    link: LinkOut | None
    node: str | None
    confidence: float
    diagnosis: str = Field(
        "",
        description=(
            "Which side failed, as far as the evidence tells: one of "
            f"{', '.join(Diagnosis)}; empty when unknown."
        ),
    )
    tied: list[str] = Field(
        default_factory=list,
        description="When not empty, the evidence cannot tell the cause from these candidates "
        "(link ids or node names, the cause first): they score within the attribution's tie "
        "margin of it. Show them as a tie, not the first as the culprit.",
    )


class CostOut(BaseModel):
    """What a stalled job's stall cost in GPU time, and what naming its cause before the
    watchdog saved (railtrace.streams.attribution.cost)."""

    gpus: int = Field(description="GPUs the job holds.")
    to_verdict_s: float = Field(
        description="Seconds from the stall to railtrace's answer (to the watchdog when no "
        "cause was named)."
    )
    to_watchdog_s: float = Field(
        description="Seconds from the stall to the watchdog: when it fired, or would fire."
    )
    watchdog_seen: bool = Field(
        description="Whether a watchdog line of the job dates it (else its timeout does)."
    )
    lost_gpu_hours: float = Field(description="GPUs x the seconds to the answer, in hours.")
    watchdog_gpu_hours: float = Field(description="GPUs x the seconds to the watchdog, in hours.")
    saved_gpu_hours: float = Field(
        description="What answering before the watchdog spared; 0 when it came after."
    )
    text: str = Field(description="All of it in one sentence, as the terminal and Slack say it.")

    @classmethod
    def from_record(cls, v: Verdict) -> CostOut | None:
        cost = incident_cost(v)
        if cost is None:
            return None
        return model_from(
            cls,
            cost,
            lost_gpu_hours=round(cost.lost_gpu_hours, 3),
            watchdog_gpu_hours=round(cost.watchdog_gpu_hours, 3),
            saved_gpu_hours=round(cost.saved_gpu_hours, 3),
            text=cost_text(cost),
        )


class NextStepOut(BaseModel):
    action: str = Field(description="drain, exclude, cordon, ticket, check-jobs or shut-port.")
    what: str = Field(description="What the step does and why, in a sentence.")
    command: str = Field(description="The command to copy; empty for a check. Never run.")


class NextStepsOut(BaseModel):
    """What to do next about a job's verdict: shown to copy, never executed by railtrace."""

    job_id: str
    steps: list[NextStepOut] = Field(
        description="In order; empty for a tie, an unknown cause or a healthy job."
    )
    topology: bool = Field(
        description="Whether the fabric was known: without it a link's ends cannot be told "
        "apart, and a link verdict has no steps."
    )


class VerdictOut(BaseModel):
    """Which link (or node) stalled the job, how sure railtrace is, and why."""

    job_id: str
    state: JobState
    stalled_at: str | None
    stalled_at_ns: int | None
    decided_at: str | None = Field(
        description="Event time of the evidence at which the current cause was first reached."
    )
    decided_at_ns: int | None
    cause: CauseOut
    candidates: list[CandidateOut] = Field(description="Ranked, most likely first.")
    evidence: list[EvidenceOut]
    ranks: int
    hosts: int
    gpus: int = Field(0, description="GPUs the job holds, for a stalled job; else 0.")
    watchdog_at: str | None = Field(
        None, description="When the job's watchdog fired, or would fire, for a stalled job."
    )
    watchdog_at_ns: int | None = None
    watchdog_seen: bool = False
    cost: CostOut | None = Field(
        None, description="A stalled job's GPU time lost and saved; null otherwise."
    )

    @classmethod
    def from_record(cls, v: Verdict) -> VerdictOut:
        ranked = sorted(v.candidates, key=lambda c: -c.score)  # stable: ties keep their order
        return model_from(
            cls,
            v,
            stalled_at=iso_or_none(v.stalled_at_ns),
            decided_at=iso_or_none(v.decided_at_ns),
            cause=CauseOut(
                kind=v.cause_kind,
                link=LinkOut.from_record(v.cause_link),
                node=v.cause_node,
                confidence=v.confidence,
                diagnosis=v.diagnosis,
                tied=list(v.tied),
            ),
            candidates=[CandidateOut.from_record(i, c) for i, c in enumerate(ranked, 1)],
            evidence=[EvidenceOut.from_record(e) for e in v.evidence],
            watchdog_at=iso_or_none(v.watchdog_at_ns),
            cost=CostOut.from_record(v),
        )

    def to_record(self) -> Verdict:
        """The Verdict this document shows, candidates in ranked order; times come from the
        `*_ns` fields, so nothing is lost to the ISO strings."""
        return record_from(
            Verdict,
            self,
            cause_kind=self.cause.kind,
            cause_link=self.cause.link.to_record() if self.cause.link else None,
            cause_node=self.cause.node,
            confidence=self.cause.confidence,
            candidates=tuple(c.to_record() for c in self.candidates),
            evidence=tuple(e.to_record() for e in self.evidence),
            diagnosis=self.cause.diagnosis,
            tied=tuple(self.cause.tied),
        )


class JobSummaryOut(BaseModel):
    job_id: str
    state: JobState
    stalled_at: str | None
    decided_at: str | None
    cause_kind: CauseKind
    link_id: str | None
    node: str | None
    confidence: float
    updated_at: str
    tied: list[str] = Field(
        default_factory=list,
        description="Link ids (or node names) the evidence cannot tell apart, the named one "
        "first; empty unless the verdict is a tie.",
    )

    @classmethod
    def from_record(cls, j: JobSummary) -> JobSummaryOut:
        return model_from(
            cls,
            j,
            stalled_at=iso_or_none(j.stalled_at_ns),
            decided_at=iso_or_none(j.decided_at_ns),
            updated_at=iso_utc(j.updated_at_ns),
            tied=list(j.tied),
        )


class JobListOut(BaseModel):
    jobs: list[JobSummaryOut] = Field(description="Most recently updated first.")
    state: JobState | None
    limit: int
    offset: int


class TimelineOut(BaseModel):
    job_id: str
    state: JobState | None = Field(description="The current verdict's state; null if none yet.")
    events: list[EvidenceOut] = Field(
        description="What happened, oldest first: the job's transport errors, watchdog "
        "timeouts, Xids and RAS reports, and the events of every link its verdict weighed."
    )
    total: int
    limit: int
    offset: int
