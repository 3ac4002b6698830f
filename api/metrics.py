"""The API process's own Prometheus metrics: its requests, and what the store holds.

Store figures are read when Prometheus scrapes (a parts count and one quantile query), not kept
on the request path. A process that also runs the sink (`railtrace sink --serve`) passes the
sink in, and its families (the same `railtrace_sink_*` its own endpoint serves) join this
scrape, so one scrape shows what came in and what is served.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Protocol

from fastapi import Request, Response
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from railtrace.store import Store

log = logging.getLogger(__name__)

PREFIX = "railtrace_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: The methods a label may name; any other is counted as `other`. A label's values must be a
#: set fixed in advance: labelled by the raw method, 20,000 requests with invented ones (no
#: token needed) grew the process by 85 MB and /metrics to 40 MB.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class SinkFigures(Protocol):
    """A sink running in the same process: its metric families, read at each scrape."""

    def families(self) -> Iterable[Metric]: ...


class _StoreFigures(Collector):
    def __init__(self, store: Store, sink: SinkFigures | None) -> None:
        self.store = store
        self.sink = sink

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(PREFIX + "store_up", "1 when the store answered this scrape.")
        try:
            rows = self.store.stored_rows()
            delays = self.store.verdict_delays()
        except Exception as exc:  # a scrape must answer whatever the store does
            log.warning("store figures unavailable", extra={"reason": str(exc)})
            up.add_metric([], 0)
            yield up
        else:
            up.add_metric([], 1)
            yield up
            stored = GaugeMetricFamily(
                PREFIX + "store_rows",
                "Rows stored per table (repeats not yet merged away included).",
                labels=["table"],
            )
            for table, n in sorted(rows.items()):
                stored.add_metric([table], n)
            yield stored
            delay = GaugeMetricFamily(
                PREFIX + "verdict_delay_seconds",
                "Seconds from a job's stall to its verdict, over the verdicts of the last day.",
                labels=["quantile"],
            )
            if delays is not None:
                delay.add_metric(["0.5"], delays[0])
                delay.add_metric(["0.95"], delays[1])
            yield delay
        if self.sink is not None:
            yield from self.sink.families()


class ApiMetrics:
    """One registry per app: request latency by route and status, and the store figures."""

    def __init__(self, store: Store, sink: SinkFigures | None = None) -> None:
        self.registry = CollectorRegistry()
        self.requests = Histogram(
            PREFIX + "api_request_seconds",
            "API requests by route template, method and status code, with their duration.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.registry.register(_StoreFigures(store, sink))

    async def middleware(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        # The template (`/v1/jobs/{job_id}/verdict`), never the raw path: job ids are unbounded.
        template = getattr(route, "path", "unmatched")
        method = request.method if request.method in METHODS else "other"
        self.requests.labels(template, method, str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response

    def exposition(self) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE)
