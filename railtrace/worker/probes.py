"""What `railtrace worker` reports about itself: its counters as Prometheus metrics, and whether
it is doing its job, for `/healthz`.

The worker is not healthy when (each rule names itself in `problems`):

- `telemetry`: the telemetry stage has kept failing (a Kafka error past the client's retries,
  then a restart from its checkpoint) without one whole cycle (fetch, send, checkpoint when
  due) for longer than the grace period: no link samples or link events are being made;
- `telemetry_partitions`: the stage's consumer group has left it without a partition of the
  raw telemetry topics for longer than the grace period (no broker, or more workers than
  partitions);
- `log_partitions`: the same for the Faust group that reads the raw logs and scheduler
  records: no job's logs are parsed here.

Pure: the caller gathers the readings, so the rules are tested as a table. Metrics are read at
scrape time from counters the components keep anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.probes.health import Health
from railtrace.probes.scrape import ScrapeTime
from railtrace.streams.telemetry import DecodeStats

PREFIX = "railtrace_worker_"

#: The telemetry stage's counters (`TelemetryStage.counters`): key -> (metric name without
#: prefix and `_total`, meaning).
TELEMETRY_COUNTERS = {
    "values": ("telemetry_values", "Telemetry values folded into the devices' Normalizers."),
    "dead_letters": (
        "telemetry_dead_letters",
        "Raw gNMI and SNMP messages that did not decode, sent to the dead-letter topic.",
    ),
    "cabling_events": ("cabling_events", "Cabling events sent (LLDP against cables.csv)."),
    "rekeyed": (
        "telemetry_rekeyed",
        "Raw gNMI messages without a key, sent back keyed by their switch.",
    ),
    "checkpoints": (
        "telemetry_checkpoints",
        "Checkpoints of the devices' state, each followed by an offset commit.",
    ),
    "restarts": (
        "telemetry_restarts",
        "Restarts of the telemetry stage from its last checkpoint after a Kafka failure.",
    ),
}
#: The parse-logs agent's counters (`Processor.counters`), as above.
LOG_COUNTERS = {
    "dead_letters": (
        "log_dead_letters",
        "Log and scheduler messages or lines that could not be read, sent to the dead-letter "
        "topic.",
    ),
    "placements": ("placements", "Job placements read from scheduler records."),
    "verdicts": ("verdicts", "Verdicts sent (one per job and batch or re-judgement)."),
    "bad_snapshots": (
        "unreadable_job_states",
        "Saved job states (a job's parsers and view) that could not be read; the job started "
        "afresh.",
    ),
}
#: The reasons of `telemetry_values_set_aside_total`, as `DecodeStats` counts them.
SET_ASIDE = {
    "unknown_path": "unknown_paths",
    "unattributed": "unattributed",
    "bad_value": "bad_values",
    "pathless": "pathless",
}


@dataclass(frozen=True, slots=True)
class Readings:
    """What the worker reports at one monotonic instant `now`: since when its telemetry stage
    has been failing with no whole cycle since (None: its last cycle went through), and
    since when the stage and the logs agent have held no partition (None: they hold some)."""

    now: float
    telemetry_failing_since: float | None
    telemetry_unassigned_since: float | None
    logs_unassigned_since: float | None


def assess(r: Readings, grace_s: float) -> Health:
    """The worker's health by the rules above."""
    rules = {
        "telemetry": r.telemetry_failing_since,
        "telemetry_partitions": r.telemetry_unassigned_since,
        "log_partitions": r.logs_unassigned_since,
    }
    problems = [rule for rule, since in rules.items() if _age(r.now, since) > grace_s]
    detail = {
        "telemetry_failing_for_s": _shown(r.now, r.telemetry_failing_since),
        "without_telemetry_partitions_for_s": _shown(r.now, r.telemetry_unassigned_since),
        "without_log_partitions_for_s": _shown(r.now, r.logs_unassigned_since),
    }
    return Health("worker", not problems, problems, detail)


def _age(now: float, since: float | None) -> float:
    return 0.0 if since is None else now - since


def _shown(now: float, since: float | None) -> float | None:
    return None if since is None else round(now - since, 1)


@dataclass(frozen=True, slots=True)
class Figures:
    """What one scrape reads: the two stages' counters, the decoder's counts (since the
    telemetry stage last started; None before it has), the partitions each stage holds,
    the devices with live state, the jobs this worker judges and the job parser sets that
    could not be restored."""

    telemetry: Mapping[str, int]
    logs: Mapping[str, int]
    decoded: DecodeStats | None
    telemetry_partitions: int
    log_partitions: int
    devices: int
    jobs: int
    unreadable_parser_sets: int


def families(f: Figures, health: Health) -> Iterator[Metric]:
    """The metrics of one scrape."""
    for counts, table in ((f.telemetry, TELEMETRY_COUNTERS), (f.logs, LOG_COUNTERS)):
        for key, (name, doc) in table.items():
            yield _counter(name, doc, counts.get(key, 0))
    yield _counter(
        "unreadable_parser_sets",
        "Saved log parsers of a job that could not be read; the job's files started afresh.",
        f.unreadable_parser_sets,
    )
    decoded = f.decoded or DecodeStats()
    aside = CounterMetricFamily(
        PREFIX + "telemetry_values_set_aside",
        "gNMI values the decoder did not use, by reason, since the telemetry stage started: "
        "a path railtrace has no use for, no interface name, a value that is no number, "
        "an empty path.",
        labels=["reason"],
    )
    for reason, attr in SET_ASIDE.items():
        aside.add_metric([reason], getattr(decoded, attr))
    yield aside
    restamped = CounterMetricFamily(
        PREFIX + "telemetry_restamped_messages",
        "gNMI messages stamped in another unit than nanoseconds, read in that unit, since "
        "the telemetry stage started.",
        labels=["unit"],
    )
    for unit in ("us", "ms", "s"):
        restamped.add_metric([unit], decoded.retimed.get(unit, 0))
    yield restamped
    gauges = (
        (
            "telemetry_partitions",
            "Raw telemetry partitions the stage holds.",
            f.telemetry_partitions,
        ),
        ("log_partitions", "Raw logs partitions the parse-logs agent holds.", f.log_partitions),
        ("telemetry_devices", "Devices whose state the telemetry stage holds.", f.devices),
        ("jobs", "Jobs the correlator of this worker judges.", f.jobs),
        (
            "healthy",
            "1 when the health rules hold (GET /healthz says which one does not), 0 otherwise.",
            1 if health.ok else 0,
        ),
    )
    for name, doc, value in gauges:
        gauge = GaugeMetricFamily(PREFIX + name, doc)
        gauge.add_metric([], value)
        yield gauge


def _counter(name: str, doc: str, value: int) -> CounterMetricFamily:
    family = CounterMetricFamily(PREFIX + name, doc)
    family.add_metric([], value)
    return family


def registry(read: Callable[[], Iterable[Metric]]) -> CollectorRegistry:
    """A registry of the worker's own (not prometheus_client's global one) serving `read`."""
    out = CollectorRegistry(auto_describe=False)
    out.register(ScrapeTime(read))
    return out
