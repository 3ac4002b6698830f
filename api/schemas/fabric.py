"""The fabric as the API serves it: topology, cabling differences, link counters and events,
and a link's blast radius."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, Field

from railtrace.api.schemas.common import EndpointOut, iso_utc, model_from
from railtrace.store import SampleSeries
from railtrace.streams.records import (
    CablingEvent,
    JobState,
    LinkEvent,
)

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
        return model_from(
            cls,
            e,
            kind=cast(DifferenceKind, e.kind.value),  # `resolved` rows never reach here
            planned=None if e.planned is None else EndpointOut.from_record(e.planned),
            seen=None if e.seen is None else EndpointOut.from_record(e.seen),
            since=iso_utc(e.ts_ns),
            since_ns=e.ts_ns,
        )


class CablingOut(BaseModel):
    differences: list[CablingDifferenceOut]
    device: str | None
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
        return model_from(cls, s)


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
        return model_from(cls, e, at=iso_utc(e.ts_ns), kind=e.kind.value)


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
