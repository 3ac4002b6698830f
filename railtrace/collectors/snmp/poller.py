"""SNMP polling: one asyncio task per target, each on its own interval.

A target that times out only delays itself: tasks are independent and share nothing but the
pysnmp engine (which multiplexes requests by request id). Failures are counted per target
and logged, never raised out of the loop; a failed poll emits nothing (no fake zeros).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from pysnmp.hlapi.v3arch.asyncio import SnmpEngine, UdpTransportTarget

from railtrace.collectors.emit import Emit, Outgoing
from railtrace.collectors.snmp import oids
from railtrace.collectors.snmp.config import SnmpTarget
from railtrace.collectors.snmp.ifnames import IfNameCache
from railtrace.collectors.snmp.messages import OperStatusMemory, build_poll
from railtrace.collectors.snmp.usm import auth_data
from railtrace.collectors.snmp.walk import SnmpError, SnmpTimeoutError, walk_columns

log = logging.getLogger(__name__)


#: Called after every poll with the target's name and how long the poll took (seconds).
PollObserver = Callable[[str, float], None]


@dataclass
class TargetStats:
    """Counters of one target, for health endpoints and tests: `polls` begun, `successes`
    (the agent answered in full) and `failures` (which include the `timeouts`). `down_since`
    is the monotonic time of the first failed poll since the last good one (or when polling
    began), None while the last poll succeeded."""

    polls: int = 0
    successes: int = 0
    failures: int = 0
    timeouts: int = 0
    emit_failures: int = 0
    state_changes: int = 0
    last_error: str | None = None
    last_duration_s: float | None = None
    down_since: float | None = field(default_factory=time.monotonic)


class SnmpPoller:
    """Polls every target with GETBULK walks and emits one "snmp" message per good poll."""

    def __init__(
        self,
        targets: Sequence[SnmpTarget],
        emit: Emit,
        *,
        ifnames: IfNameCache | None = None,
        columns: Sequence[str] = oids.POLL_COLUMNS,
        on_poll: PollObserver | None = None,
    ) -> None:
        self.targets = tuple(targets)
        self.emit = emit
        self.on_poll = on_poll
        self.ifnames = ifnames if ifnames is not None else IfNameCache()
        self.columns = tuple(columns)
        self.stats = {t.name: TargetStats() for t in self.targets}
        self._status = OperStatusMemory()
        self._engine: SnmpEngine | None = None
        self._transports: dict[str, Any] = {}

    def _snmp_engine(self) -> SnmpEngine:
        # Created on first use, inside the running loop the engine's dispatcher binds to.
        if self._engine is None:
            self._engine = SnmpEngine()
        return self._engine

    async def _transport(self, target: SnmpTarget) -> Any:
        transport = self._transports.get(target.name)
        if transport is None:
            try:
                transport = await UdpTransportTarget.create(
                    (target.host, target.port), timeout=target.timeout_s, retries=target.retries
                )
            except Exception as exc:  # pysnmp wraps resolution failures in its own errors
                raise SnmpError(f"cannot resolve {target.host}: {exc}") from exc
            self._transports[target.name] = transport
            self.ifnames.remember_address(str(transport.transport_address[0]), target.name)
        return transport

    async def poll_once(self, target: SnmpTarget) -> Outgoing | None:
        """Walk one target and emit its message; None (counted, logged) when it failed."""
        stats = self.stats.setdefault(target.name, TargetStats())
        stats.polls += 1
        started = time.monotonic()
        try:
            walked = await walk_columns(
                self._snmp_engine(),
                auth_data(target),
                await self._transport(target),
                self.columns,
                target.max_repetitions,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # SnmpError, or pysnmp failing in a way we did not foresee
            stats.failures += 1
            stats.timeouts += isinstance(exc, SnmpTimeoutError)
            if stats.down_since is None:
                stats.down_since = time.monotonic()
            stats.last_error = f"{type(exc).__name__}: {exc}"
            self._polled(target, stats, started)
            log.warning(
                "snmp poll failed",
                extra={
                    "device": target.name,
                    "host": target.host,
                    "port": target.port,
                    "error": stats.last_error,
                    "failures": stats.failures,
                },
            )
            return None
        self._polled(target, stats, started)
        stats.successes += 1
        stats.down_since = None
        ts_ns = time.time_ns()
        message = build_poll(target.name, ts_ns, walked)
        self.ifnames.remember_ifnames(target.name, message["ifnames"])
        changed = self._status.changed(target.name, message["varbinds"])
        stats.state_changes += changed
        stats.last_error = None
        outgoing = Outgoing(
            stream="snmp",
            key=target.name.encode(),
            value=orjson.dumps(message),
            state_change=changed,
            ts_ns=ts_ns,
        )
        try:
            await self.emit(outgoing)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stats.emit_failures += 1
            log.error(
                "snmp message not handed to delivery",
                extra={"device": target.name, "error": f"{type(exc).__name__}: {exc}"},
            )
            return None
        return outgoing

    def _polled(self, target: SnmpTarget, stats: TargetStats, started: float) -> None:
        """A poll ended (a cancelled one did not: it is neither timed nor counted)."""
        stats.last_duration_s = time.monotonic() - started
        if self.on_poll is not None:
            self.on_poll(target.name, stats.last_duration_s)

    async def poll_forever(self, target: SnmpTarget) -> None:
        """Poll one target every interval_s; a poll longer than that skips the missed ticks
        instead of bunching them up."""
        next_at = time.monotonic()
        while True:
            await self.poll_once(target)
            next_at += target.interval_s
            now = time.monotonic()
            if next_at < now:
                next_at += ((now - next_at) // target.interval_s + 1) * target.interval_s
            await asyncio.sleep(next_at - now)

    async def run(self) -> None:
        """Poll every target until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                for target in self.targets:
                    group.create_task(self.poll_forever(target), name=f"snmp-poll-{target.name}")
        finally:
            self.close()

    def close(self) -> None:
        """Release the engine's sockets; the poller can be run again afterwards."""
        if self._engine is not None:
            self._engine.close_dispatcher()
            self._engine = None
            self._transports.clear()
