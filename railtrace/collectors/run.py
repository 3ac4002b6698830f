"""One collector role per process (`railtrace collect gnmi|snmp|logs|xid`), wired to delivery.

Each role gets its own spool folder, so two roles on one host never share a queue, and runs
until SIGINT/SIGTERM; on the way out the drain task gets a few seconds to empty the spool,
and whatever it could not send stays there for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from railtrace.collectors.delivery import Delivery
from railtrace.collectors.emit import Emit
from railtrace.collectors.spool import Spool
from railtrace.settings import Settings

log = logging.getLogger(__name__)
ROLES = ("gnmi", "snmp", "logs", "xid")
FINAL_DRAIN_S = 5.0


def _collector(settings: Settings, role: str) -> Callable[[Emit], Coroutine[Any, Any, Any]]:
    c = settings.collect
    if role == "gnmi":
        from railtrace.collectors.gnmi import collector as gnmi

        return lambda emit: gnmi.run(c.gnmi, emit)
    if role == "snmp":
        return lambda emit: _snmp(settings, emit)
    if role == "logs":
        from railtrace.collectors.hosts import logscraper

        return lambda emit: logscraper.run(c.logs, emit)
    if role == "xid":
        from railtrace.collectors.hosts import xid

        return lambda emit: xid.run(c.xid, emit)
    raise ValueError(f"unknown collector role {role!r}; one of {', '.join(ROLES)}")


async def _snmp(settings: Settings, emit: Emit) -> None:
    from railtrace.collectors.snmp import IfNameCache, SnmpPoller, TrapReceiver

    config = settings.collect.snmp
    ifnames = IfNameCache()
    poller = SnmpPoller(config.targets, emit, ifnames=ifnames)
    parts: list[Awaitable[Any]] = [poller.run()]
    if config.traps is not None:
        parts.append(TrapReceiver(config.traps, emit, ifnames).serve())
    try:
        await asyncio.gather(*parts)
    finally:
        poller.close()


def run(settings: Settings, role: str) -> None:
    """Run collector `role` until interrupted."""
    start = _collector(settings, role)
    spool = Spool(settings.collect.spool_dir / role, settings.collect.spool_max_bytes)
    delivery = Delivery(settings.kafka, spool)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        drain = asyncio.create_task(delivery.run())
        work: asyncio.Task[Any] = asyncio.create_task(start(delivery))
        log.info("collector started", extra={"role": role, "spool": str(spool.dir)})
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work  # a collector that failed raises here, after the drain below
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_until_empty(spool), FINAL_DRAIN_S)
        drain.cancel()
        await asyncio.gather(drain, return_exceptions=True)
        stopped.cancel()
        log.info(
            "collector stopped",
            extra={"role": role, "unsent": not spool.empty(), **delivery.counters},
        )

    try:
        asyncio.run(main())
    finally:
        spool.close()


async def _until_empty(spool: Spool) -> None:
    while not spool.empty():
        await asyncio.sleep(0.1)
