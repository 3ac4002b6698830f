"""The API's response shapes, kept apart from the records and the storage rows.

`VerdictOut.from_record` is the one mapping from a Verdict to its JSON: the API returns it and
the CLI's `railtrace verdict --json` prints it, so both show the same document; `to_record`
turns a document fetched from another process's API back into the Verdict. Times appear
twice: as ISO-8601 UTC strings for people (nanoseconds kept when present) and as the integer
nanoseconds railtrace computes with, for programs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal, cast

from pydantic import BaseModel, Field

from railtrace.api.tokens import TokenInfo
from railtrace.store import JobSummary, NodeSummary, SampleSeries
from railtrace.streams.attribution.cost import cost_text, incident_cost
from railtrace.streams.records import (
    CablingEvent,
    Candidate,
    CauseKind,
    Diagnosis,
    Evidence,
    JobState,
    LinkEvent,
    NodeEvent,
    Verdict,
)
from railtrace.topology.ends import Endpoint, LinkRef

_NS = 1_000_000_000


def iso_utc(ts_ns: int) -> str:
    """`2026-05-05T06:16:47.123456Z`: microseconds, or all nine digits when the nanoseconds
    are not zero, so no precision the input had is dropped."""
    seconds, ns = divmod(ts_ns, _NS)
    whole = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{ns:09d}"
    return f"{whole}.{fraction[:6] if fraction.endswith('000') else fraction}Z"


def _iso_or_none(ts_ns: int | None) -> str | None:
    return None if ts_ns is None else iso_utc(ts_ns)


class EndpointOut(BaseModel):
    device: str
    interface: str

    @classmethod
    def from_record(cls, e: Endpoint) -> EndpointOut:
        return cls(device=e.device, interface=e.interface)

    def to_record(self) -> Endpoint:
        return Endpoint(device=self.device, interface=self.interface)


class LinkOut(BaseModel):
    id: str = Field(description="The cable's stable id in the cabling plan.")
    a: EndpointOut
    b: EndpointOut

    @classmethod
    def from_record(cls, link: LinkRef | None) -> LinkOut | None:
        if link is None:
            return None
        return cls(
            id=link.link_id, a=EndpointOut.from_record(link.a), b=EndpointOut.from_record(link.b)
        )

    def to_record(self) -> LinkRef:
        return LinkRef(link_id=self.id, a=self.a.to_record(), b=self.b.to_record())


class EvidenceOut(BaseModel):
    ts: str
    ts_ns: int
    source: str = Field(description='"gnmi", "nccl", "pytorch", "kernel" or "topology".')
    kind: str
    subject: str = Field(description="The link id, host or rank the observation is about.")
    detail: str

    @classmethod
    def from_record(cls, e: Evidence) -> EvidenceOut:
        return cls(
            ts=iso_utc(e.ts_ns),
            ts_ns=e.ts_ns,
            source=e.source,
            kind=e.kind,
            subject=e.subject,
            detail=e.detail,
        )

    def to_record(self) -> Evidence:
        return Evidence(
            ts_ns=self.ts_ns,
            source=self.source,
            kind=self.kind,
            subject=self.subject,
            detail=self.detail,
        )


class CandidateOut(BaseModel):
    rank: int = Field(description="1 for the most likely cause.")
    kind: CauseKind
    link: LinkOut | None
    node: str | None
    score: float
    evidence: list[EvidenceOut]

    @classmethod
    def from_record(cls, rank: int, c: Candidate) -> CandidateOut:
        return cls(
            rank=rank,
            kind=c.kind,
            link=LinkOut.from_record(c.link),
            node=c.node,
            score=c.score,
            evidence=[EvidenceOut.from_record(e) for e in c.evidence],
        )

    def to_record(self) -> Candidate:
        return Candidate(
            kind=self.kind,
            score=self.score,
            link=self.link.to_record() if self.link else None,
            node=self.node,
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
        return cls(
            gpus=cost.gpus,
            to_verdict_s=cost.to_verdict_s,
            to_watchdog_s=cost.to_watchdog_s,
            watchdog_seen=cost.watchdog_seen,
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
        return cls(
            job_id=v.job_id,
            state=v.state,
            stalled_at=_iso_or_none(v.stalled_at_ns),
            stalled_at_ns=v.stalled_at_ns,
            decided_at=_iso_or_none(v.decided_at_ns),
            decided_at_ns=v.decided_at_ns,
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
            ranks=v.ranks,
            hosts=v.hosts,
            gpus=v.gpus,
            watchdog_at=_iso_or_none(v.watchdog_at_ns),
            watchdog_at_ns=v.watchdog_at_ns,
            watchdog_seen=v.watchdog_seen,
            cost=CostOut.from_record(v),
        )

    def to_record(self) -> Verdict:
        """The Verdict this document shows, candidates in ranked order; times come from the
        `*_ns` fields, so nothing is lost to the ISO strings."""
        return Verdict(
            job_id=self.job_id,
            state=self.state,
            stalled_at_ns=self.stalled_at_ns,
            decided_at_ns=self.decided_at_ns,
            cause_kind=self.cause.kind,
            cause_link=self.cause.link.to_record() if self.cause.link else None,
            cause_node=self.cause.node,
            confidence=self.cause.confidence,
            candidates=tuple(c.to_record() for c in self.candidates),
            evidence=tuple(e.to_record() for e in self.evidence),
            ranks=self.ranks,
            hosts=self.hosts,
            diagnosis=self.cause.diagnosis,
            tied=tuple(self.cause.tied),
            gpus=self.gpus,
            watchdog_at_ns=self.watchdog_at_ns,
            watchdog_seen=self.watchdog_seen,
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
        return cls(
            job_id=j.job_id,
            state=j.state,
            stalled_at=_iso_or_none(j.stalled_at_ns),
            decided_at=_iso_or_none(j.decided_at_ns),
            cause_kind=j.cause_kind,
            link_id=j.link_id,
            node=j.node,
            confidence=j.confidence,
            updated_at=iso_utc(j.updated_at_ns),
            tied=list(j.tied),
        )


class JobListOut(BaseModel):
    jobs: list[JobSummaryOut] = Field(description="Most recently updated first.")
    state: JobState | None
    limit: int
    offset: int


class ErrorOut(BaseModel):
    """Every error but a validation error: what went wrong and, where it helps, what to do."""

    detail: str


class ValidationProblemOut(BaseModel):
    """One refused part of a request: where (`["query", "since"]`), what and why."""

    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(BaseModel):
    """A 422: every part of the request that was refused."""

    detail: list[ValidationProblemOut]


class HealthOut(BaseModel):
    status: Literal["ok", "ready"]


DifferenceKind = Literal["miswired", "unexpected", "missing"]


class CablingDifferenceOut(BaseModel):
    device: str = Field(description="The device whose LLDP table shows the difference.")
    interface: str
    kind: DifferenceKind
    planned: EndpointOut | None = Field(description="The far end cables.csv names, if any.")
    seen: EndpointOut | None = Field(description="The far end LLDP names, if any.")
    detail: str
    since: str = Field(description="When the difference was reported (ISO-8601 UTC).")
    since_ns: int

    @classmethod
    def from_record(cls, e: CablingEvent) -> CablingDifferenceOut:
        return cls(
            device=e.device,
            interface=e.interface,
            kind=cast(DifferenceKind, e.kind.value),  # `resolved` rows never reach here
            planned=None if e.planned is None else EndpointOut.from_record(e.planned),
            seen=None if e.seen is None else EndpointOut.from_record(e.seen),
            detail=e.detail,
            since=iso_utc(e.ts_ns),
            since_ns=e.ts_ns,
        )


class CablingOut(BaseModel):
    differences: list[CablingDifferenceOut]
    device: str | None
    limit: int
    offset: int


class NodeOut(BaseModel):
    node: str
    quarantined: bool
    sdc_suspect: bool = Field(
        description="Quarantined for suspected silent data corruption: only an operator's "
        "release lifts it."
    )
    reason: str | None = Field(description="Why the last decision (quarantine or release).")
    decided_at: str | None
    decided_at_ns: int | None
    xids: int = Field(description="Xid events seen on the node.")
    last_event_at: str
    last_event_ns: int

    @classmethod
    def from_record(cls, n: NodeSummary) -> NodeOut:
        return cls(
            node=n.node,
            quarantined=n.quarantined,
            sdc_suspect=n.sdc_suspect,
            reason=n.reason,
            decided_at=_iso_or_none(n.decided_at_ns),
            decided_at_ns=n.decided_at_ns,
            xids=n.xids,
            last_event_at=iso_utc(n.last_event_ns),
            last_event_ns=n.last_event_ns,
        )


class NodeListOut(BaseModel):
    nodes: list[NodeOut]
    quarantined: bool | None
    limit: int
    offset: int


class NodeEventOut(BaseModel):
    at: str
    ts_ns: int
    kind: Literal["xid", "release"]
    xid: int | None
    pci: str
    detail: str
    quarantined: bool = Field(description="The node's state after this event.")
    action: Literal["quarantine", "release"] | None = Field(
        description="Set when this event changed the node's state."
    )
    reason: str
    line: str = Field(description="The kernel log line as read.")
    source: str

    @classmethod
    def from_record(cls, e: NodeEvent) -> NodeEventOut:
        return cls(
            at=iso_utc(e.ts_ns),
            ts_ns=e.ts_ns,
            kind=cast(Literal["xid", "release"], e.kind),
            xid=e.xid,
            pci=e.pci,
            detail=e.detail,
            quarantined=e.quarantined,
            action=cast(Literal["quarantine", "release"], e.action) if e.action else None,
            reason=e.reason,
            line=e.line,
            source=e.source,
        )


class NodeDetailOut(BaseModel):
    state: NodeOut
    events: list[NodeEventOut] = Field(description="Newest first, one page of them.")
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


class DeviceOut(BaseModel):
    name: str
    role: str = Field(description="host, leaf, spine, super-spine or switch (inferred).")
    tier: int | None
    rail: int | None = Field(description="The rail a leaf serves; null for hosts and spines.")


class TopologyLinkOut(BaseModel):
    id: str
    a: EndpointOut
    b: EndpointOut
    rail: int | None = Field(description="The rail the cable carries; null above the leaves.")
    weight: float | None = Field(
        default=None, description="With ?job=: the chance the job's traffic crosses it."
    )
    events: list[str] | None = Field(
        default=None,
        description="With ?since= or ?until=: the kinds of its link events in that window "
        "(down, pfc-storm, ...), so a drawing can show where trouble spread.",
    )


class TopologyOut(BaseModel):
    devices: list[DeviceOut]
    links: list[TopologyLinkOut]
    rail: int | None
    job: str | None


class TokenOut(BaseModel):
    """A token as an admin sees it: never the secret, nor its digest."""

    id: str = Field(description="The token's public id, the part after `rt_`.")
    name: str
    scopes: list[Literal["read", "admin"]]
    created_at: str
    expires_at: str | None

    @classmethod
    def from_record(cls, t: TokenInfo) -> TokenOut:
        return cls(
            id=t.token_id,
            name=t.name,
            scopes=cast(list[Literal["read", "admin"]], sorted(t.scopes)),
            created_at=t.created_at.isoformat(),
            expires_at=None if t.expires_at is None else t.expires_at.isoformat(),
        )


class TokenListOut(BaseModel):
    tokens: list[TokenOut]


class SeriesOut(BaseModel):
    """One metric of one end of a link, bucketed; `ts_ns` are the buckets' starts."""

    device: str
    interface: str
    metric: str
    qualifier: str = Field(description="Sub-series (a PFC priority, a lane); empty if none.")
    ts_ns: list[int]
    mean: list[float] = Field(description="Mean rate (per second) or reading in each bucket.")
    peak: list[float] = Field(description="Highest rate or reading in each bucket.")

    @classmethod
    def from_record(cls, s: SampleSeries) -> SeriesOut:
        return cls(
            device=s.device,
            interface=s.interface,
            metric=s.metric,
            qualifier=s.qualifier,
            ts_ns=s.ts_ns,
            mean=s.mean,
            peak=s.peak,
        )


class LinkEventOut(BaseModel):
    at: str
    ts_ns: int
    device: str
    interface: str
    kind: str
    value: float
    detail: str

    @classmethod
    def from_record(cls, e: LinkEvent) -> LinkEventOut:
        return cls(
            at=iso_utc(e.ts_ns),
            ts_ns=e.ts_ns,
            device=e.device,
            interface=e.interface,
            kind=e.kind.value,
            value=e.value,
            detail=e.detail,
        )


class CrossingJobOut(BaseModel):
    job_id: str
    weight: float = Field(description="The chance the job's traffic crosses this link.")
    state: JobState | None = Field(description="Its current verdict's state, if it has one.")
    blamed: bool = Field(description="Whether its current verdict names this link as the cause.")
    first_seen: str
    last_seen: str


class LinkDetailOut(BaseModel):
    id: str
    a: EndpointOut
    b: EndpointOut
    rail: int | None = Field(description="The rail the cable carries; null above the leaves.")
    since: str
    until: str
    step_s: float = Field(description="Bucket width of `series`.")
    hosts: list[str] = Field(
        default_factory=list,
        description="The ends that are hosts (GPU nodes), so a page can lead to their node; "
        "empty for a cable between switches.",
    )
    series: list[SeriesOut]
    events: list[LinkEventOut]
    jobs: list[CrossingJobOut] = Field(
        description="Blast radius: the jobs whose paths may cross this link, most likely first."
    )


class LinkJobsOut(BaseModel):
    """A link's blast radius alone, without its counters: what an alert asks for."""

    id: str
    until: str = Field(description="Jobs that had started by this time are considered.")
    jobs: list[CrossingJobOut] = Field(
        description="The jobs whose paths may cross this link, most likely first."
    )


class WorstLinkOut(BaseModel):
    id: str
    a: EndpointOut | None = Field(description="Null for a link id cables.csv does not know.")
    b: EndpointOut | None
    rail: int | None
    total: float = Field(description="The metric's count over the window (rate x interval).")
    peak_rate: float = Field(description="The highest per-second rate seen in the window.")
    samples: int


class WorstLinksOut(BaseModel):
    metric: str
    since: str
    until: str
    limit: int
    links: list[WorstLinkOut]
