"""The Prometheus metrics of one collector process, on a registry of its own.

Every metric is named `railtrace_collector_*` and labelled with the process's `role`, and with
`target` (a gNMI target, SNMP agent or UFM endpoint, by its configured name) where it is about
one. Nearly all
are read at scrape time from counters the components keep anyway (`Delivery.counters`, the
spool, gNMI `TargetStatus`, SNMP `TargetStats` / `TrapStats`, `ScraperStats`, `XidStats`,
UFM `EndpointStats`), so
the hot path pays nothing for them; the one metric observed as it happens is the SNMP poll
duration histogram, once per poll. The tables below are the one list of names and meanings
(deploy/collectors/README.md documents each, and a test checks it does).

The registry is per process, not prometheus_client's global one, so that tests can build
several collectors side by side; scrapes run in the collector's own event loop (see
`endpoint`), so reading the counters needs no locking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.probes.scrape import ScrapeTime

if TYPE_CHECKING:
    from railtrace.collectors.delivery import Delivery
    from railtrace.collectors.gnmi import GnmiCollector
    from railtrace.collectors.hosts import LogScraper, XidScraper
    from railtrace.collectors.scheduler.poller import SlurmPoller
    from railtrace.collectors.snmp import SnmpPoller, TrapReceiver
    from railtrace.collectors.snmp.poller import PollObserver
    from railtrace.collectors.ufm.collector import UfmCollector

PREFIX = "railtrace_collector_"

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
LOGS_COUNTERS = (
    ("lines", "logs_lines", "Log lines handed to delivery."),
    ("batches", "logs_batches", "Raw-logs messages emitted."),
    ("alert_batches", "logs_alert_batches", "Messages holding a hang or error line."),
    ("files_adopted", "logs_files_adopted", "Log files taken up (found by the path globs)."),
    ("rotations", "logs_rotations", "Rename rotations followed."),
    ("truncations", "logs_truncations", "Truncations (copytruncate) followed."),
    ("lines_cut", "logs_lines_cut", "Lines longer than max_line_bytes, cut to that length."),
    ("files_without_job", "logs_files_without_job", "Files skipped: no job id found."),
    ("files_lost", "logs_files_lost", "Contents gone or cut while the collector was away."),
    ("read_errors", "logs_read_errors", "Errors reading files or expanding the globs."),
    ("emit_errors", "logs_emit_errors", "Batches delivery refused (spool not writable); retried."),
)
XID_COUNTERS = (
    ("lines", "xid_kernel_lines", "Kernel log lines read."),
    ("xids", "xid_events", "Xid lines recognised (repeats included)."),
    ("repeats", "xid_repeats", "Xid lines seen before (a restarted journalctl or dmesg)."),
    ("malformed", "xid_malformed_lines", "Kernel lines the parser could not read."),
    ("events", "xid_node_events", "Node events emitted (Xids and releases)."),
    ("quarantines", "xid_quarantines", "Quarantine decisions taken."),
    ("releases", "xid_releases", "Quarantines lifted."),
    ("source_restarts", "xid_source_restarts", "Times the kernel log command exited."),
    (
        "emit_errors",
        "xid_emit_errors",
        "Node events delivery refused (spool not writable); retried.",
    ),
)
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

    def snmp_poll_observer(self) -> PollObserver:
        """A poll-duration histogram for the SNMP poller, and the callback that feeds it."""
        histogram = Histogram(
            PREFIX + "snmp_poll_duration_seconds",
            "How long a poll (a GETBULK walk of every column) took, failed polls included.",
            ["role", "target"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        return lambda target, seconds: histogram.labels(self.role, target).observe(seconds)


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


def _counter(name: str, doc: str, role: str, value: float) -> Metric:
    return _one(CounterMetricFamily(PREFIX + name, doc, labels=["role"]), role, value)


def _gauge(name: str, doc: str, role: str, value: float) -> Metric:
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
    yield _counter("messages_delivered", "Messages the broker acknowledged.", role, seen["sent"])
    yield _counter(
        "delivery_failures",
        "Batches whose sending failed (broker away, timeout); each is retried after a backoff.",
        role,
        seen["send_failures"],
    )
    connected = delivery.connected()
    yield _gauge(
        "kafka_connected", "1 while a producer is connected to the broker.", role, connected
    )
    failing = 0.0 if delivery.failing_since is None else time.monotonic() - delivery.failing_since
    yield _gauge(
        "delivery_failing_seconds",
        "Seconds since sending began failing without a success since; 0 while it succeeds.",
        role,
        failing,
    )
    spool = delivery.spool
    yield _gauge(
        "spool_bytes", "Bytes in the spool not yet acknowledged.", role, spool.size_bytes()
    )
    yield _gauge(
        "spool_max_bytes",
        "The spool's size limit: past it the oldest samples are dropped.",
        role,
        spool.max_bytes,
    )
    yield _gauge("spool_segments", "Segment files in the spool.", role, spool.segment_count())
    yield _gauge(
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


def gnmi_families(role: str, collector: GnmiCollector) -> Iterator[Metric]:
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


def snmp_families(role: str, poller: SnmpPoller, traps: TrapReceiver | None) -> Iterator[Metric]:
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


def logs_families(role: str, scraper: LogScraper) -> Iterator[Metric]:
    yield _gauge(
        "logs_files_followed",
        "Log file contents open: current files and rotated ones still being read.",
        role,
        scraper.open_files(),
    )
    yield from counters(LOGS_COUNTERS, ["role"], [([role], scraper.stats)])


def xid_families(role: str, scraper: XidScraper) -> Iterator[Metric]:
    yield _gauge(
        "xid_quarantined_nodes",
        "Nodes the quarantine policy holds quarantined now.",
        role,
        len(scraper.policy.quarantined()),
    )
    yield from counters(XID_COUNTERS, ["role"], [([role], scraper.stats)])


def ufm_families(role: str, collector: UfmCollector) -> Iterator[Metric]:
    stats = sorted(collector.stats.items())
    up = GaugeMetricFamily(
        PREFIX + "ufm_endpoint_up",
        "1 when the UFM Telemetry endpoint answered the last poll, 0 otherwise.",
        labels=["role", "target"],
    )
    unmapped = GaugeMetricFamily(
        PREFIX + "ufm_unmapped_guids",
        "Node GUIDs in the endpoint's last good poll that the switches file does not name.",
        labels=["role", "target"],
    )
    for name, s in stats:
        up.add_metric([role, name], s.down_since is None)
        unmapped.add_metric([role, name], s.unmapped_guids)
    yield up
    yield unmapped
    yield from counters(UFM_COUNTERS, ["role", "target"], (([role, n], s) for n, s in stats))


SCHEDULER_COUNTERS = (
    ("successes", "scheduler_poll_successes", "Polls Slurm answered (the tool or slurmrestd)."),
    (
        "failures",
        "scheduler_poll_failures",
        "Polls that failed: the tool missing, exiting non-zero, slurmrestd refusing or erring,"
        " or a timeout.",
    ),
    ("records", "scheduler_records", "Job records published (a job's placement changed)."),
    ("unchanged", "scheduler_unchanged_records", "Job records not published: nothing changed."),
    (
        "other_partitions",
        "scheduler_other_partition_records",
        "Job records passed over: their partition is not in collect.scheduler.partitions.",
    ),
    (
        "refused",
        "scheduler_refused_records",
        "Job records the reader refuses, published for the worker to dead-letter.",
    ),
    (
        "ended_unseen",
        "scheduler_ended_unseen_records",
        "Jobs published as ended between two polls: Slurm forgot them before their end was seen.",
    ),
    (
        "lookup_failures",
        "scheduler_lookup_failures",
        "Lookups by id of a running job no longer listed that failed; asked again next poll.",
    ),
    ("emit_failures", "scheduler_emit_failures", "Records delivery refused (spool not writable)."),
)


def scheduler_families(role: str, poller: SlurmPoller) -> Iterator[Metric]:
    s = poller.stats
    up = GaugeMetricFamily(
        PREFIX + "scheduler_up",
        "1 when Slurm (the tool or slurmrestd) answered the last poll, 0 otherwise.",
        labels=["role", "target"],
    )
    up.add_metric([role, poller.source], s.down_since is None)
    yield up
    listed = GaugeMetricFamily(
        PREFIX + "scheduler_jobs_listed",
        "Jobs in the last good poll (waiting ones included).",
        labels=["role", "target"],
    )
    listed.add_metric([role, poller.source], s.jobs_listed)
    yield listed
    yield from counters(SCHEDULER_COUNTERS, ["role", "target"], [([role, poller.source], s)])


def health_family(role: str, ok: bool) -> Metric:
    return _gauge(
        "healthy",
        "1 when the health rules hold (GET /healthz says which one does not), 0 otherwise.",
        role,
        ok,
    )
