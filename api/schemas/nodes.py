"""GPU nodes: their Xids and quarantine state."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from railtrace.api.schemas.common import iso_or_none, iso_utc, model_from
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
        return model_from(
            cls,
            n,
            decided_at=iso_or_none(n.decided_at_ns),
            last_event_at=iso_utc(n.last_event_ns),
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
        # kind and action are copied as the record has them; the model checks they are
        # among the values it shows, action "" (no change) showing as null.
        return model_from(cls, e, at=iso_utc(e.ts_ns), action=e.action or None)


class NodeDetailOut(BaseModel):
    state: NodeOut
    events: list[NodeEventOut] = Field(description="Newest first, one page of them.")
    limit: int
    offset: int
