"""The gNMI collector's metric families, read from each session's `TargetStatus` at scrape
time (deploy/collectors/README.md documents each)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.collectors.metrics import PREFIX, counters

if TYPE_CHECKING:
    from .collector import GnmiCollector

#: (attribute of the component's stats, metric name without prefix and `_total`, meaning)
GNMI_COUNTERS = (
    ("connects", "gnmi_connects", "Subscribe streams opened to the target."),
    (
        "failures",
        "gnmi_reconnects",
        "Sessions lost or not opened (refused, timed out, ended, silent); each is followed "
        "by a reconnect after a backoff.",
    ),
    ("notifications", "gnmi_notifications", "Notifications received from the target."),
    ("updates", "gnmi_updates", "Updates received, summed over the notifications."),
    (
        "malformed_updates",
        "gnmi_malformed_updates",
        "Updates dropped: no path, a bad value, or a timestamp that is no time.",
    ),
    ("messages", "gnmi_messages", "Messages emitted for the target (one per notification)."),
    (
        "capabilities_fallbacks",
        "gnmi_capabilities_fallbacks",
        "Sessions subscribed with the fallback encoding: Capabilities answered UNIMPLEMENTED.",
    ),
)
#: The reasons of `gnmi_odd_timestamps_total`, each always reported (0 until seen).
GNMI_ODD_TIMESTAMPS = ("us", "ms", "s", "missing", "rejected")


def gnmi_families(role: str, collector: GnmiCollector) -> Iterator[Metric]:
    """Per target: whether its stream delivers, its session counters and odd timestamps."""
    statuses = [s.status for s in collector.sessions]
    up = GaugeMetricFamily(
        PREFIX + "gnmi_session_up",
        "1 while the target's Subscribe stream is delivering, 0 otherwise.",
        labels=["role", "target"],
    )
    for s in statuses:
        up.add_metric([role, s.name], s.state == "streaming")
    yield up
    yield from counters(GNMI_COUNTERS, ["role", "target"], (([role, s.name], s) for s in statuses))
    odd = CounterMetricFamily(
        PREFIX + "gnmi_odd_timestamps",
        "Notifications not stamped in ns since the epoch, by reason: `us`, `ms`, `s` (read in "
        "that unit), `missing` (0: stamped when received), `rejected` (no time from 2000 to "
        "2106 in any unit: dropped, its updates counted malformed).",
        labels=["role", "target", "reason"],
    )
    for s in statuses:
        for reason in GNMI_ODD_TIMESTAMPS:
            odd.add_metric([role, s.name, reason], s.odd_timestamps[reason])
    yield odd
