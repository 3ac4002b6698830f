"""`railtrace collect snmp`: the SNMP poller and trap receiver as the registry sees them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ..health import TargetState
from ..spec import CollectorSpec, Role, counter_names
from .config import SnmpCollectorConfig
from .metrics import POLL_DURATION, SNMP_COUNTERS, TRAP_COUNTERS

if TYPE_CHECKING:
    from ..emit import Emit
    from ..metrics import CollectorMetrics


def build(config: SnmpCollectorConfig, emit: Emit, metrics: CollectorMetrics) -> Role:
    """The poller, and the trap receiver when `traps` is configured, sharing one ifName
    cache so a trap names its interface as the polls do."""
    from .ifnames import IfNameCache
    from .metrics import poll_observer, snmp_families
    from .poller import SnmpPoller
    from .traps import TrapReceiver

    ifnames = IfNameCache()
    poller = SnmpPoller(config.targets, emit, ifnames=ifnames, on_poll=poll_observer(metrics))
    traps = None if config.traps is None else TrapReceiver(config.traps, emit, ifnames)

    async def work() -> None:
        parts: list[Awaitable[Any]] = [poller.run()]
        if traps is not None:
            parts.append(traps.serve())
        try:
            await asyncio.gather(*parts)
        finally:
            poller.close()

    def targets() -> dict[str, TargetState]:
        return {
            name: TargetState(
                s.down_since, "up" if s.down_since is None else "down", s.last_error or ""
            )
            for name, s in poller.stats.items()
        }

    return Role(work, lambda: snmp_families(metrics.role, poller, traps), targets)


SPECS = (
    CollectorSpec[SnmpCollectorConfig](
        name="snmp",
        help="Poll the `collect.snmp` targets (GETBULK, v2c/v3) and receive linkDown/linkUp traps.",
        config=SnmpCollectorConfig,
        default=SnmpCollectorConfig,
        metrics_listen="127.0.0.1:9465",
        build=build,
        families=(
            "snmp_target_up",
            *counter_names(SNMP_COUNTERS),
            POLL_DURATION,
            *counter_names(TRAP_COUNTERS),
            "snmp_traps_rejected",
        ),
    ),
)
