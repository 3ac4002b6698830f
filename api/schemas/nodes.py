"""GPU nodes: their Xids and quarantine state."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, Field

from railtrace.api.schemas.common import iso_or_none, iso_utc
from railtrace.store import NodeSummary
from railtrace.streams.records import (
    NodeEvent,
)


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
            decided_at=iso_or_none(n.decided_at_ns),
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
