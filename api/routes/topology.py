"""The fabric as built against the fabric as planned: where LLDP disagrees with cables.csv."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from railtrace.api.deps import Limit, Offset, StoreDep
from railtrace.api.schemas import CablingDifferenceOut, CablingOut

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
