"""The incident page: one static shell for the list and for each job, filled in the browser
from the token-protected JSON routes. The shell holds no data, so it is served without a
token; a tight Content-Security-Policy keeps anything but this API's own files out of it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from railtrace.api.deps import JobId

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
