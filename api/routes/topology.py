"""The fabric as built against the fabric as planned: where LLDP disagrees with cables.csv."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request

from railtrace.api.deps import Limit, Offset, StoreDep, fabric_of
from railtrace.api.joblinks import JobLinks
from railtrace.api.routes.links import Since, Until, window
from railtrace.api.schemas import (
    CablingDifferenceOut,
    CablingOut,
    DeviceOut,
    EndpointOut,
    TopologyLinkOut,
    TopologyOut,
)
from railtrace.store.rows import STRUCTURE_FACT_KINDS
from railtrace.streams.records import JOB_ID_MAX_LENGTH, JOB_ID_PATTERN
from railtrace.topology.view import topology_view

router = APIRouter(prefix="/v1/topology", tags=["topology"])

DeviceFilter = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$",
        description="Only differences seen from this device (a switch name as in cables.csv).",
    ),
]


@router.get("/cabling")
def cabling_differences(
    store: StoreDep, device: DeviceFilter = None, limit: Limit = 100, offset: Offset = 0
) -> CablingOut:
    """Ports whose LLDP neighbour differs from cables.csv right now (miswired, unexpected,
    missing), by device and interface. A port leaves the list when it is cabled as planned
    again."""
    found = store.cabling_differences(device=device, limit=limit, offset=offset)
    return CablingOut(
        differences=[CablingDifferenceOut.from_record(e) for e in found],
        device=device,
        limit=limit,
        offset=offset,
    )


RailFilter = Annotated[
    int | None, Query(ge=0, le=63, description="Only the cables of this rail (0-based).")
]
JobFilter = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=JOB_ID_MAX_LENGTH,
        pattern=JOB_ID_PATTERN,
        description="Only the cables this job may cross, each with the chance it does.",
    ),
]


@router.get(
    "",
    responses={
        404: {"description": "No such job in this store."},
        503: {"description": "This API was started without a topology."},
    },
)
def get_topology(
    request: Request,
    store: StoreDep,
    rail: RailFilter = None,
    job: JobFilter = None,
    since: Since = None,
    until: Until = None,
) -> TopologyOut:
    """The fabric as a graph: devices with their role and rail, cables with the rail they
    carry; only one rail's, or only the cables a job may cross, if asked; with `since` or
    `until`, each cable's kinds of link events in that window (where PFC pauses spread)."""
    fabric = fabric_of(request)
    weights = None
    if job is not None:
        job_links: JobLinks = request.app.state.job_links
        weights = job_links.of(store, job)
        if not weights and not store.job_facts_of(job, STRUCTURE_FACT_KINDS, limit=1):
            raise HTTPException(status_code=404, detail=f"no facts of job '{job}' in this store")
    view = topology_view(fabric, rail, weights)
    kinds: dict[str, set[str]] | None = None
    if since is not None or until is not None:
        since_ns, until_ns = window(since, until)
        kinds = {link.link_id: set() for link in view.links}
        for event, link_id in store.link_events_between(sorted(kinds), since_ns, until_ns):
            kinds[link_id].add(event.kind.value)
    return TopologyOut(
        devices=[
            DeviceOut(name=d.name, role=d.role.value, tier=d.tier, rail=d.rail)
            for d in view.devices
        ],
        links=[
            TopologyLinkOut(
                id=link.link_id,
                a=EndpointOut.from_record(link.a),
                b=EndpointOut.from_record(link.b),
                rail=link.rail,
                weight=link.weight,
                events=None if kinds is None else sorted(kinds[link.link_id]),
            )
            for link in view.links
        ],
        rail=rail,
        job=job,
    )
