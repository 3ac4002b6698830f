"""The HTTP endpoint of one long-running process: `/metrics` for Prometheus, `/healthz` for
probes. Every collector, the alerter, the worker and the sink serve one.

Served by aiohttp inside the process's own event loop: a scrape reads the components'
counters between two of their steps, with no thread and no locking, and costs the loop what
rendering a few hundred samples costs. `/healthz` answers 200 when the process is healthy and
503 when not, with a JSON body saying why (`Health`). There is no `/readyz`: nothing routes
requests to any of them, so there is nothing to be ready for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from railtrace.probes.health import Health

log = logging.getLogger(__name__)


def parse_listen(value: str) -> tuple[str, int]:
    """`host:port` (IPv6 in brackets) as (host, port); port 0 asks for any free port.

    >>> parse_listen("0.0.0.0:9464"), parse_listen("[::1]:0")
    (('0.0.0.0', 9464), ('::1', 0))
    """
    host, sep, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"listen address {value!r} is not host:port (e.g. 127.0.0.1:9464)")
    return host, int(port)


class Endpoint:
    """Serves `registry` and `health()` on `listen` between `start()` and `stop()`."""

    def __init__(
        self, listen: str, registry: CollectorRegistry, health: Callable[[], Health]
    ) -> None:
        self.host, self.port = parse_listen(listen)
        self.registry = registry
        self.health = health
        self.address = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Bind and serve; returns the bound `host:port` (the real port when 0 was asked)."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        log.info("metrics endpoint listening", extra={"address": self.address})
        return self.address

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return web.Response(body=encoder(self.registry), headers={"Content-Type": content_type})

    async def _healthz(self, request: web.Request) -> web.Response:
        health = self.health()
        return web.Response(
            body=orjson.dumps(health.to_json()),
            status=200 if health.ok else 503,
            content_type="application/json",
        )
