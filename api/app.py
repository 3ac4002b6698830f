"""The app factory: every app gets its store handed in, so tests and the CLI wire their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import Depends, FastAPI, Request, Response, Security
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from railtrace import __version__
from railtrace.api.auth import require
from railtrace.api.deps import STRICT, reject_unknown_query
from railtrace.api.joblinks import JobLinks
from railtrace.api.metrics import ApiMetrics, SinkFigures
from railtrace.api.routes import health, incidents, jobs, links, nodes, session, topology
from railtrace.api.routes import tokens as token_routes
from railtrace.api.schemas import ErrorOut
from railtrace.api.tokens import Scope, TokenBook
from railtrace.store import Store, StoreError
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import PathFinder


async def _store_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """A store that stops answering is a 503 the caller may retry, not a server bug."""
    return JSONResponse(status_code=503, content={"detail": f"store unavailable: {exc}"})


#: Where the API reference pages' scripts, styles and icon are served.
DOCS_ASSETS = "/docs-assets"

#: What any route behind a token may answer besides its own results.
SECURED: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No token, or one unknown, revoked or expired."},
    403: {"model": ErrorOut, "description": "The token lacks the scope this route needs."},
    503: {"model": ErrorOut, "description": "The store or the tokens file is unavailable."},
}


def create_app(
    store: Store,
    tokens: TokenBook,
    *,
    sink: SinkFigures | None = None,
    fabric: Fabric | None = None,
    cors_origins: Sequence[str] = (),
    profile: AttributionProfile = DEFAULT_PROFILE,
) -> FastAPI:
    """An API over `store`; the caller keeps ownership and closes the store after serving.
    Every route but /healthz and /readyz needs a bearer token from `tokens`. `sink`,
    from a process that also runs the sink, adds its write counters and lag to /metrics; `fabric`
    (the cabling plan) serves /v1/topology. `cors_origins` are the browser origins allowed to
    call it from their pages (none by default). `profile` is the attribution's settings: the
    timeline shows the link events of the window its verdicts weighed."""
    # /docs and /redoc load their scripts from this API (fastapi-offline's copies), not a CDN.
    app = FastAPIOffline(
        title="railtrace",
        version=__version__,
        summary="Which fabric link stalled an NCCL job, with the evidence.",
        static_url=DOCS_ASSETS,
    )
    app.state.store = store
    app.state.tokens = tokens
    app.state.fabric = fabric
    app.state.profile = profile
    app.state.job_links = None if fabric is None else JobLinks(fabric, PathFinder(fabric))
    app.add_exception_handler(StoreError, _store_unavailable)
    strict = Depends(reject_unknown_query)
    reader = [strict, Security(require(Scope.READ))]
    app.include_router(health.router, dependencies=[strict], responses=STRICT)
    app.include_router(incidents.router, dependencies=[strict], responses=STRICT)
    app.mount("/static", StaticFiles(directory=incidents.STATIC_DIR), name="static")
    # Starting a session needs a bearer token (its own route's check); ending one needs none.
    app.include_router(session.router, dependencies=[strict], responses=STRICT)
    for router in (jobs.router, topology.router, nodes.router, links.router):
        app.include_router(router, dependencies=reader, responses={**SECURED, **STRICT})
    app.include_router(
        token_routes.router,
        dependencies=[strict, Security(require(Scope.ADMIN))],
        responses={**SECURED, **STRICT},
    )
    metrics = ApiMetrics(store, sink)
    app.middleware("http")(metrics.middleware)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET"],
            allow_headers=["Authorization"],
            max_age=600,
        )

    @app.get(
        "/metrics",
        tags=["health"],
        response_class=Response,
        dependencies=reader,
        responses={**SECURED, **STRICT},
    )
    def prometheus_metrics() -> Response:
        """railtrace's own health for Prometheus (with a read token): request latency per
        route, rows stored per table, seconds from stall to verdict, and (with the sink) rows
        written."""
        return metrics.exposition()

    return app
