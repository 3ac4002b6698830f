"""The SNMP collector's metric families: the poller's per-agent stats and the trap
receiver's, read at scrape time, and the poll-duration histogram, the one collector metric
observed as it happens (once per poll). deploy/collectors/README.md documents each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.collectors.metrics import PREFIX, CollectorMetrics, counters

if TYPE_CHECKING:
    from .poller import PollObserver, SnmpPoller
    from .traps import TrapReceiver

SNMP_COUNTERS = (
    ("successes", "snmp_poll_successes", "Polls the agent answered in full."),
    ("failures", "snmp_poll_failures", "Polls that failed, timeouts included."),
    ("timeouts", "snmp_poll_timeouts", "Polls the agent did not answer in time."),
    ("state_changes", "snmp_state_changes", "Polls that saw an interface's oper-status change."),
    ("emit_failures", "snmp_emit_failures", "Poll messages delivery refused (spool not writable)."),
)
TRAP_COUNTERS = (
    (
        "received",
        "snmp_traps_received",
        "Traps that passed the engine's checks (community or USM user).",
    ),
    ("emit_failures", "snmp_trap_emit_failures", "Traps delivery refused (spool not writable)."),
)
POLL_DURATION = "snmp_poll_duration_seconds"


def poll_observer(metrics: CollectorMetrics) -> PollObserver:
    """A poll-duration histogram in `metrics`, and the callback that feeds it."""
    histogram = Histogram(
        PREFIX + POLL_DURATION,
        "How long a poll (a GETBULK walk of every column) took, failed polls included.",
        ["role", "target"],
        buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        registry=metrics.registry,
    )
    return lambda target, seconds: histogram.labels(metrics.role, target).observe(seconds)


def snmp_families(role: str, poller: SnmpPoller, traps: TrapReceiver | None) -> Iterator[Metric]:
    """Per agent: up and poll counters; with a trap receiver, its counters and rejections."""
    stats = sorted(poller.stats.items())
    up = GaugeMetricFamily(
        PREFIX + "snmp_target_up",
        "1 when the agent answered the last poll, 0 otherwise.",
        labels=["role", "target"],
    )
    for name, s in stats:
        up.add_metric([role, name], s.down_since is None)
    yield up
    yield from counters(SNMP_COUNTERS, ["role", "target"], (([role, n], s) for n, s in stats))
    if traps is None:
        return
    yield from counters(TRAP_COUNTERS, ["role"], [([role], traps.stats)])
    rejected = CounterMetricFamily(
        PREFIX + "snmp_traps_rejected",
        "Traps turned away, by reason: `unknown` (not linkDown/linkUp), `malformed`, and the "
        "engine's own counters (bad community, unknown user, wrong digest, ...).",
        labels=["role", "reason"],
    )
    rejected.add_metric([role, "unknown"], traps.stats.unknown)
    rejected.add_metric([role, "malformed"], traps.stats.malformed)
    for reason, n in sorted(traps.engine_drops().items()):
        rejected.add_metric([role, reason], n)
    yield rejected
