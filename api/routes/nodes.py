"""GPU nodes: their Xid history and whether the quarantine policy has taken them out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from railtrace.api.deps import Limit, Offset, StoreDep
from railtrace.api.schemas import NodeDetailOut, NodeEventOut, NodeListOut, NodeOut

router = APIRouter(prefix="/v1/nodes", tags=["nodes"])

NodeName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="The node's host name, as its kernel log and cables.csv name it.",
    ),
]

QuarantinedFilter = Annotated[
    bool | None, Query(description="Only nodes that are (true) or are not (false) quarantined.")
]


@router.get("")
def list_nodes(
    store: StoreDep, quarantined: QuarantinedFilter = None, limit: Limit = 100, offset: Offset = 0
) -> NodeListOut:
    """Nodes that have reported Xids, by name, each with its quarantine state."""
    nodes = store.list_nodes(quarantined=quarantined, limit=limit, offset=offset)
    return NodeListOut(
        nodes=[NodeOut.from_record(n) for n in nodes],
        quarantined=quarantined,
        limit=limit,
        offset=offset,
    )


@router.get("/{name}", responses={404: {"description": "No node events from this node."}})
def get_node(
    store: StoreDep, name: NodeName, limit: Limit = 100, offset: Offset = 0
) -> NodeDetailOut:
    """One node's quarantine state and its Xid history, newest first."""
    state = store.node_summary(name)
    if state is None:
        raise HTTPException(
            status_code=404,
            detail=f"no node events from '{name}'; GET /v1/nodes lists the nodes that have any",
        )
    events = store.node_events(name, limit=limit, offset=offset)
    return NodeDetailOut(
        state=NodeOut.from_record(state),
        events=[NodeEventOut.from_record(e) for e in events],
        limit=limit,
        offset=offset,
    )
