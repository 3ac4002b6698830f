"""The collector roles as one shape: what runs, which metrics it reports, which targets it
has for the health rules. Each role's packages are imported only when that role is built, so
a log collector on a GPU node never loads gRPC or pysnmp.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import Metric

from railtrace.collectors import metrics as m
from railtrace.collectors.emit import Emit
from railtrace.collectors.health import TargetState
from railtrace.settings import CollectSettings

ROLES = ("gnmi", "snmp", "logs", "xid", "ufm", "scheduler")


@dataclass
class Role:
    """`work()` runs the collector until cancelled; `families`, `targets` and `detail` are
    read on every scrape or health check."""

    work: Callable[[], Coroutine[Any, Any, Any]]
    families: Callable[[], Iterable[Metric]]
    targets: Callable[[], dict[str, TargetState]] = dict
    detail: Callable[[], dict[str, Any]] = dict


def build(name: str, config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    """Role `name` (one of ROLES) wired to `emit`, reporting into `metrics`."""
    builders = {
        "gnmi": _gnmi,
        "snmp": _snmp,
        "logs": _logs,
        "xid": _xid,
        "ufm": _ufm,
        "scheduler": _scheduler,
    }
    return builders[name](config, emit, metrics)


def _gnmi(config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    from railtrace.collectors.gnmi import GnmiCollector, TargetStatus

    collector = GnmiCollector(config.gnmi, emit)

    def state(s: TargetStatus) -> TargetState:
        # A stream whose every update is malformed delivers nothing: the target is down for
        # the health rules from its first such update, whatever its session says.
        if s.state == "streaming" and s.malformed_since is not None:
            error = f"every update malformed: {s.malformed_reason}"
            return TargetState(s.malformed_since, "malformed", error)
        return TargetState(s.down_since, s.state, s.last_error)

    def targets() -> dict[str, TargetState]:
        return {session.status.name: state(session.status) for session in collector.sessions}

    return Role(collector.run, lambda: m.gnmi_families(metrics.role, collector), targets)


def _snmp(config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    from railtrace.collectors.snmp import IfNameCache, SnmpPoller, TrapReceiver

    ifnames = IfNameCache()
    poller = SnmpPoller(
        config.snmp.targets, emit, ifnames=ifnames, on_poll=metrics.snmp_poll_observer()
    )
    traps = None if config.snmp.traps is None else TrapReceiver(config.snmp.traps, emit, ifnames)

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

    return Role(work, lambda: m.snmp_families(metrics.role, poller, traps), targets)


def _logs(config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    from railtrace.collectors.hosts import LogScraper

    scraper = LogScraper(config.logs, emit)
    return Role(
        scraper.run,
        lambda: m.logs_families(metrics.role, scraper),
        detail=lambda: {"files_followed": scraper.open_files()},
    )


def _xid(config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    from railtrace.collectors.hosts import XidScraper

    scraper = XidScraper(config.xid, emit)
    return Role(
        scraper.run,
        lambda: m.xid_families(metrics.role, scraper),
        detail=lambda: {"source": scraper.source, "quarantined": scraper.policy.quarantined()},
    )


def _ufm(config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    from railtrace.collectors.ufm import load_switches
    from railtrace.collectors.ufm.collector import UfmCollector

    ufm = config.ufm
    if ufm.switches is None:
        raise ValueError("collect.ufm has no endpoints and no switches file to name them")
    collector = UfmCollector(ufm, load_switches(ufm.switches, ufm.interface_template), emit)

    def targets() -> dict[str, TargetState]:
        return {
            name: TargetState(
                s.down_since, "up" if s.down_since is None else "down", s.last_error or ""
            )
            for name, s in collector.stats.items()
        }

    return Role(collector.run, lambda: m.ufm_families(metrics.role, collector), targets)


def _scheduler(config: CollectSettings, emit: Emit, metrics: m.CollectorMetrics) -> Role:
    from railtrace.collectors.scheduler.poller import SlurmPoller

    poller = SlurmPoller(config.scheduler, emit)
    missing = poller.slurm.missing()
    if missing is not None:
        raise ValueError(missing)

    def targets() -> dict[str, TargetState]:
        s = poller.stats
        state = "up" if s.down_since is None else "down"
        return {poller.source: TargetState(s.down_since, state, s.last_error or "")}

    return Role(poller.run, lambda: m.scheduler_families(metrics.role, poller), targets)
