"""The incident pages: one static shell for the list, each job, link and node, filled in the browser
from the token-protected JSON routes. The shell holds no data, so it is served without a
token; a tight Content-Security-Policy keeps anything but this API's own files out of it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse

from railtrace.api.deps import JobId
from railtrace.api.routes.links import LinkId
from railtrace.api.routes.nodes import NodeName
from railtrace.api.routes.topology import DeviceFilter
from railtrace.api.times import ACCEPTED, Instant

STATIC_DIR = Path(str(resources.files("railtrace.api") / "static"))

router = APIRouter(tags=["incidents"], include_in_schema=False)

PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _page() -> FileResponse:
    return FileResponse(STATIC_DIR / "incident.html", headers=PAGE_HEADERS)


@router.get("/incidents")
def incident_list() -> FileResponse:
    """Stalled and slow jobs, each linking to its incident."""
    return _page()


@router.get("/incidents/{job_id}")
def incident(job_id: JobId) -> FileResponse:
    """One job's verdict: fabric graph with the culprit, evidence timeline, counters."""
    return _page()


@router.get("/links/{link_id:path}")
def link_page(
    link_id: LinkId,
    at: Annotated[Instant | None, Query(description=f"The moment to show: {ACCEPTED}.")] = None,
) -> FileResponse:
    """One link: counters and events around `at` (or the last hour), and its blast radius;
    where a flap-storm alert points."""
    return _page()


@router.get("/cabling")
def cabling_page(device: DeviceFilter = None) -> FileResponse:
    """The ports cabled differently from the plan; where a cabling alert points."""
    return _page()


@router.get("/nodes/{name}")
def node_page(name: NodeName) -> FileResponse:
    """One GPU node: quarantine state and Xid history; where a quarantine alert points."""
    return _page()
