"""The app factory: every app gets its store handed in, so tests and the CLI wire their own."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from railtrace import __version__
from railtrace.api.metrics import ApiMetrics
from railtrace.api.routes import health, jobs, nodes, topology
from railtrace.store import Store, StoreError
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import PathFinder


async def _store_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """A store that stops answering is a 503 the caller may retry, not a server bug."""
    return JSONResponse(status_code=503, content={"detail": f"store unavailable: {exc}"})


def create_app(
    store: Store,
    sink_written: Callable[[], Mapping[str, int]] | None = None,
    fabric: Fabric | None = None,
) -> FastAPI:
    """An API over `store`; the caller keeps ownership and closes the store after serving.
    `sink_written`, from a process that also runs the sink, adds its write counters to
    /metrics; `fabric` (the cabling plan) serves /v1/topology."""
    app = FastAPI(
        title="railtrace",
        version=__version__,
        summary="Which fabric link stalled an NCCL job, with the evidence.",
    )
    app.state.store = store
    app.state.fabric = fabric
    app.state.paths = None if fabric is None else PathFinder(fabric)
    app.add_exception_handler(StoreError, _store_unavailable)
    app.include_router(health.router)
    app.include_router(jobs.router)
    app.include_router(topology.router)
    app.include_router(nodes.router)
    metrics = ApiMetrics(store, sink_written)
    app.middleware("http")(metrics.middleware)

    @app.get("/metrics", tags=["health"], response_class=Response)
    def prometheus_metrics() -> Response:
        """railtrace's own health for Prometheus: request latency per route, rows stored per
        table, seconds from stall to verdict, and (with the sink) rows written."""
        return metrics.exposition()

    return app
