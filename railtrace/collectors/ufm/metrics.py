"""The UFM collector's metric families, read from each endpoint's `EndpointStats` at scrape
time (deploy/collectors/README.md documents each)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from railtrace.collectors.metrics import PREFIX, counters

if TYPE_CHECKING:
    from .collector import UfmCollector

UFM_COUNTERS = (
    ("successes", "ufm_poll_successes", "Polls the endpoint answered (HTTP 200)."),
    ("failures", "ufm_poll_failures", "Polls that failed: refused, timed out, HTTP error."),
    ("samples", "ufm_samples", "Sample lines read from the endpoint."),
    (
        "malformed",
        "ufm_malformed",
        "Lines that did not parse and samples whose value is no usable number or state.",
    ),
    ("unmapped_samples", "ufm_unmapped_samples", "Samples of node GUIDs the switches file lacks."),
    (
        "not_mapped",
        "ufm_not_mapped_samples",
        "Samples of named switches with no OpenConfig meaning (or no port number).",
    ),
    ("stale", "ufm_stale_switches", "Switch messages skipped: UFM's sample time had not moved."),
    ("messages", "ufm_messages", "Messages emitted (one per switch per poll)."),
    ("state_changes", "ufm_state_changes", "Messages in which a port's oper-status changed."),
    ("emit_failures", "ufm_emit_failures", "Messages delivery refused (spool not writable)."),
)

ENDPOINT_UP = "ufm_endpoint_up"
UNMAPPED_GUIDS = "ufm_unmapped_guids"


def ufm_families(role: str, collector: UfmCollector) -> Iterator[Metric]:
    """Per endpoint: up, the GUIDs the switches file lacks, and the poll counters."""
    stats = sorted(collector.stats.items())
    up = GaugeMetricFamily(
        PREFIX + ENDPOINT_UP,
        "1 when the UFM Telemetry endpoint answered the last poll, 0 otherwise.",
        labels=["role", "target"],
    )
    unmapped = GaugeMetricFamily(
        PREFIX + UNMAPPED_GUIDS,
        "Node GUIDs in the endpoint's last good poll that the switches file does not name.",
        labels=["role", "target"],
    )
    for name, s in stats:
        up.add_metric([role, name], s.down_since is None)
        unmapped.add_metric([role, name], s.unmapped_guids)
    yield up
    yield unmapped
    yield from counters(UFM_COUNTERS, ["role", "target"], (([role, n], s) for n, s in stats))
