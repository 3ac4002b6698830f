"""One collector role per process (`railtrace collect <role>`), wired to delivery.

Each role gets its own spool folder, so two roles on one host never share a queue, and its own
HTTP endpoint (`/metrics`, `/healthz`); it runs until SIGINT/SIGTERM. On the way out the drain
task gets a few seconds to empty the spool, and whatever it could not send stays there for the
next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from typing import Any

from railtrace.collectors import metrics, registry
from railtrace.collectors.delivery import Delivery
from railtrace.collectors.health import Readings, assess
from railtrace.collectors.spool import Spool
from railtrace.probes.endpoint import Endpoint
from railtrace.probes.health import Health
from railtrace.settings import Settings

log = logging.getLogger(__name__)
FINAL_DRAIN_S = 5.0


class CollectorProcess:
    """Everything one collector process runs, built from the settings and nothing else."""

    def __init__(self, settings: Settings, role: str) -> None:
        spec = registry.spec(role)
        c = settings.collect
        self.role = role
        self.grace_s = c.health_grace_s
        self.spool = Spool(c.spool_dir / role, c.spool_max_bytes)
        try:
            self.delivery = Delivery(settings.kafka, self.spool)
            self.metrics = metrics.CollectorMetrics(role)
            self.parts = spec.build(spec.section(c), self.delivery, self.metrics)
        except BaseException:
            self.spool.close()
            raise
        self.metrics.read(lambda: metrics.delivery_families(role, self.delivery))
        self.metrics.read(self.parts.families)
        self.metrics.read(lambda: [metrics.health_family(role, self.health().ok)])
        self.endpoint = Endpoint(
            getattr(c.metrics_listen, role), self.metrics.registry, self.health
        )

    def health(self) -> Health:
        spool, delivery = self.spool, self.delivery
        readings = Readings(
            now=time.monotonic(),
            spool_bytes=spool.size_bytes(),
            spool_max_bytes=spool.max_bytes,
            failing_since=delivery.failing_since,
            last_error=delivery.last_error,
            targets=self.parts.targets(),
            spool_oldest_age_s=spool.oldest_age_s(),
            spool_dropped=spool.dropped.total(),
            extra=self.parts.detail(),
        )
        return assess(self.role, readings, self.grace_s)

    async def run(self, stop: asyncio.Event) -> None:
        """Collect and deliver until `stop` is set or the collector ends (its error raised)."""
        await self.endpoint.start()
        try:
            await self._collect(stop)
        finally:
            await self.endpoint.stop()

    async def _collect(self, stop: asyncio.Event) -> None:
        drain = asyncio.create_task(self.delivery.run())
        work: asyncio.Task[Any] = asyncio.create_task(self.parts.work())
        log.info(
            "collector started",
            extra={
                "role": self.role,
                "spool": str(self.spool.dir),
                "metrics": self.endpoint.address,
            },
        )
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        work.cancel()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await work  # a collector that failed raises here, after the drain below
        finally:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_until_empty(self.spool), FINAL_DRAIN_S)
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)
            stopped.cancel()
            log.info(
                "collector stopped",
                extra={
                    "role": self.role,
                    "unsent": not self.spool.empty(),
                    **self.delivery.counters,
                },
            )

    def close(self) -> None:
        self.spool.close()


def run(settings: Settings, role: str) -> None:
    """Run collector `role` until interrupted."""
    process = CollectorProcess(settings, role)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await process.run(stop)

    try:
        asyncio.run(main())
    finally:
        process.close()


async def _until_empty(spool: Spool) -> None:
    while not spool.empty():
        await asyncio.sleep(0.1)
