"""The Prometheus metrics of one collector process, on a registry of its own.

Every metric is named `railtrace_collector_*` and labelled with the process's `role`, and with
`target` (a collector's peer, by its configured name) where it is about one. Nearly all are
read at scrape time from counters the components keep anyway (`Delivery.counters`, the spool,
each collector's own stats), so the hot path pays nothing for them. This module has what every
collector reports (delivery, spool, health) and the helpers the collectors build their own
families with; each collector's families live in its package, named in its spec
(`railtrace.collectors.spec`). deploy/collectors/README.md documents each metric, and a test
checks it does.

The registry is per process, not prometheus_client's global one, so that tests can build
several collectors side by side; scrapes run in the collector's own event loop (see
`endpoint`), so reading the counters needs no locking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.probes.scrape import ScrapeTime

if TYPE_CHECKING:
    from railtrace.collectors.delivery import Delivery

PREFIX = "railtrace_collector_"

Stats = tuple[list[str], Any]  # (label values, the object whose attributes are read)


class CollectorMetrics:
    """The metrics of one collector process (role `role`) and the registry they live in."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # CPU and memory: the collectors' budget

    def read(self, families: Callable[[], Iterable[Metric]]) -> None:
        """Register `families`, called on every scrape."""
        self.registry.register(ScrapeTime(families))


def counters(
    table: Sequence[tuple[str, str, str]], labels: Sequence[str], rows: Iterable[Stats]
) -> Iterator[Metric]:
    """One counter family per `table` row, with a sample per row of `rows`."""
    rows = list(rows)
    for attr, name, doc in table:
        family = CounterMetricFamily(PREFIX + name, doc, labels=labels)
        for values, stats in rows:
            family.add_metric(values, getattr(stats, attr))
        yield family


def _one(family: GaugeMetricFamily | CounterMetricFamily, role: str, value: float) -> Metric:
    family.add_metric([role], value)
    return family


def counter(name: str, doc: str, role: str, value: float) -> Metric:
    return _one(CounterMetricFamily(PREFIX + name, doc, labels=["role"]), role, value)


def gauge(name: str, doc: str, role: str, value: float) -> Metric:
    return _one(GaugeMetricFamily(PREFIX + name, doc, labels=["role"]), role, value)


def delivery_families(role: str, delivery: Delivery) -> Iterator[Metric]:
    """Emitted, delivered and failed messages, and the state of the spool between them."""
    seen = delivery.counters
    emitted = CounterMetricFamily(
        PREFIX + "messages_emitted",
        "Messages handed to delivery (appended to the spool), by raw stream.",
        labels=["role", "stream"],
    )
    for key, n in sorted(seen.items()):
        if key.startswith("spooled_"):
            emitted.add_metric([role, key.removeprefix("spooled_")], n)
    yield emitted
    for kind, what in (
        ("refused", "Messages the broker refused for what they are (too large, bad), "
         "dead-lettered instead."),
        ("retimed", "Messages whose time the broker refused (too far ahead), sent stamped "
         "with the send time instead."),
        ("stamped_now", "Messages whose own time was older than half their topic's retention "
         "(the broker would delete them at once), sent stamped with the send time."),
    ):  # fmt: skip
        family = CounterMetricFamily(PREFIX + f"messages_{kind}", what, labels=["role", "stream"])
        for key, n in sorted(seen.items()):
            if key.startswith(f"{kind}_"):
                family.add_metric([role, key.removeprefix(f"{kind}_")], n)
        yield family
    yield counter("messages_delivered", "Messages the broker acknowledged.", role, seen["sent"])
    yield counter(
        "delivery_failures",
        "Batches whose sending failed (broker away, timeout); each is retried after a backoff.",
        role,
        seen["send_failures"],
    )
    connected = delivery.connected()
    yield gauge(
        "kafka_connected", "1 while a producer is connected to the broker.", role, connected
    )
    failing = 0.0 if delivery.failing_since is None else time.monotonic() - delivery.failing_since
    yield gauge(
        "delivery_failing_seconds",
        "Seconds since sending began failing without a success since; 0 while it succeeds.",
        role,
        failing,
    )
    spool = delivery.spool
    yield gauge("spool_bytes", "Bytes in the spool not yet acknowledged.", role, spool.size_bytes())
    yield gauge(
        "spool_max_bytes",
        "The spool's size limit: past it the oldest samples are dropped.",
        role,
        spool.max_bytes,
    )
    yield gauge("spool_segments", "Segment files in the spool.", role, spool.segment_count())
    yield gauge(
        "spool_oldest_unsent_age_seconds",
        "Age of the oldest message not yet acknowledged (to within a second); 0 when none.",
        role,
        spool.oldest_age_s(),
    )
    dropped = CounterMetricFamily(
        PREFIX + "spool_dropped",
        "Samples dropped unsent from a full spool (never state changes), by raw stream.",
        labels=["role", "stream"],
    )
    for stream, n in sorted(spool.dropped.items()):
        dropped.add_metric([role, stream], n)
    yield dropped


def health_family(role: str, ok: bool) -> Metric:
    return gauge(
        "healthy",
        "1 when the health rules hold (GET /healthz says which one does not), 0 otherwise.",
        role,
        ok,
    )
