"""What `railtrace sink` reports about itself: its counters as Prometheus metrics, and whether it
is doing its job, for `/healthz`.

The sink is not healthy when (each rule names itself in `problems`):

- `store`: the store has refused every write of one topic's batch for longer than the grace
  period (ClickHouse down or refusing the user, a full disk, one table's schema): the batch
  is being written again and again and nothing new of that topic lands;
- `partitions`: its consumer group has left it without a partition of its topics for longer
  than the grace period (no broker, or more sinks than partitions).

Pure: the caller gathers the readings, so the rules are tested as a table. Metrics are read at
scrape time from counters the sink keeps anyway; the rows written and the lag have the names
the API's `/metrics` gives them when it runs in the sink's process (`sink --serve`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.probes.health import Health
from railtrace.probes.scrape import ScrapeTime

PREFIX = "railtrace_sink_"


@dataclass(frozen=True, slots=True)
class Readings:
    """What the sink reports at one monotonic instant `now`: since when the writes of a
    topic's batch have been failing, the longest failing of them (None: no batch is failing),
    and since when it has held no partition of its topics (None: it holds some)."""

    now: float
    failing_since: float | None
    unassigned_since: float | None


def assess(r: Readings, grace_s: float) -> Health:
    """The sink's health by the rules above."""
    rules = {"store": r.failing_since, "partitions": r.unassigned_since}
    problems = [
        rule for rule, since in rules.items() if since is not None and r.now - since > grace_s
    ]
    detail = {
        "store_failing_for_s": _shown(r.now, r.failing_since),
        "without_partitions_for_s": _shown(r.now, r.unassigned_since),
    }
    return Health("sink", not problems, problems, detail)


def _shown(now: float, since: float | None) -> float | None:
    return None if since is None else round(now - since, 1)


@dataclass(frozen=True, slots=True)
class Figures:
    """What one scrape reads: rows written per table, messages not yet stored per topic,
    the writes the store refused, and the partitions the sink holds."""

    written: Mapping[str, int]
    lag: Mapping[str, int]
    write_failures: int
    partitions: int


def families(f: Figures, health: Health) -> Iterator[Metric]:
    """The metrics of one scrape."""
    written = CounterMetricFamily(
        PREFIX + "rows_written",
        "Rows the sink of this process wrote, per table, since it started.",
        labels=["table"],
    )
    for table, n in sorted(f.written.items()):
        written.add_metric([table], n)
    yield written
    failures = CounterMetricFamily(
        PREFIX + "write_failures",
        "Batch writes the store refused; each batch is written again after a backoff.",
    )
    failures.add_metric([], f.write_failures)
    yield failures
    lag = GaugeMetricFamily(
        PREFIX + "lag_messages",
        "Messages on each topic this sink owns that are not in the store yet.",
        labels=["topic"],
    )
    for topic, n in sorted(f.lag.items()):
        lag.add_metric([topic], n)
    yield lag
    for name, doc, value in (
        ("partitions", "Partitions of its topics the sink holds.", f.partitions),
        (
            "healthy",
            "1 when the health rules hold (GET /healthz says which one does not), 0 otherwise.",
            1 if health.ok else 0,
        ),
    ):
        gauge = GaugeMetricFamily(PREFIX + name, doc)
        gauge.add_metric([], value)
        yield gauge


def registry(read: Callable[[], Iterable[Metric]]) -> CollectorRegistry:
    """A registry of the sink's own (not prometheus_client's global one) serving `read`."""
    out = CollectorRegistry(auto_describe=False)
    out.register(ScrapeTime(read))
    return out
