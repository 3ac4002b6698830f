"""The embedded replay: a capture fed through the core in event-time order, into a store.

Telemetry files are decoded one by one and merged by timestamp with the job facts parsed from
the logs, then fed to the same `Pipeline` the streaming workers run, record by record, so the
replay never looks ahead. Writes are batched; the final verdict of every job is written last.
The files are read by `decode`, the output goes to a `sinks.Sink`, and what happened to a
`report.ReplayReport`.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator
from datetime import UTC, tzinfo

from railtrace.collectors.hosts.config import QuarantineConfig
from railtrace.replay.capture import Capture
from railtrace.replay.decode import Progress, decode
from railtrace.replay.nodes import node_events
from railtrace.replay.report import ReplayReport
from railtrace.replay.sinks import Sink
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.pipeline import Pipeline
from railtrace.streams.records import JobFact, LinkEvent, LinkSample, TelemetryValue
from railtrace.streams.telemetry.cabling import CablingWatch, cabling_event
from railtrace.streams.telemetry.lldp import LldpUpdate
from railtrace.topology.asbuilt import cabled_fabric
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.lldp import Neighbour, PlanIndex, check_cabling


def _as_cabled(capture: Capture, lldp: list[LldpUpdate], report: ReplayReport) -> Fabric:
    """The capture's fabric, rebuilt as cabled when the switches' LLDP neighbours show ports
    cabled unlike the plan (the differences go to the report either way)."""
    if not lldp:
        return capture.fabric
    index = PlanIndex.of(capture.plan)
    watches: dict[str, CablingWatch] = {}
    for update in sorted(lldp, key=lambda u: u.ts_ns):
        watch = watches.get(update.device)
        if watch is None:
            watch = watches[update.device] = CablingWatch(update.device, index, 0)
        watch.fold(update)
    seen = [
        Neighbour(Endpoint(device, interface), remote)
        for device, watch in watches.items()
        for interface, remotes in watch.neighbours().items()
        for remote in remotes
    ]
    report.cabling = check_cabling(capture.plan, seen, set(watches))
    return cabled_fabric(capture.plan, report.cabling, capture.fabric) or capture.fabric


class _Batches:
    """Buffers output rows and flushes link samples to the sink every `size` rows."""

    def __init__(self, sink: Sink, size: int) -> None:
        self.sink, self.size = sink, size
        self.samples: list[tuple[LinkSample, str]] = []
        self.events: list[tuple[LinkEvent, str]] = []
        self.written_samples = 0
        self.store_s = 0.0

    def flush_samples(self) -> None:
        t = time.perf_counter()
        self.sink.write_link_samples(self.samples)
        self.store_s += time.perf_counter() - t
        self.written_samples += len(self.samples)
        self.samples = []


def replay(
    capture: Capture,
    sink: Sink,
    *,
    profile: AttributionProfile = DEFAULT_PROFILE,
    local: tzinfo = UTC,
    batch_rows: int = 50_000,
    progress: Progress | None = None,
    quarantine: QuarantineConfig | None = None,
) -> ReplayReport:
    """Feed a whole capture through the core and the sink; returns what happened. `local` is
    the site's zone, for log stamps that carry none; `quarantine` the Xid collector's policy
    (`collect.xid.policy`), which decides the replayed nodes' quarantines as it would live."""
    report = ReplayReport(
        plan_errors=list(capture.plan_errors),
        skipped=list(capture.skipped),
        gnmi_files=len(capture.gnmi_files),
        log_files=capture.log_file_count,
        scheduler_files=len(capture.scheduler_files),
    )
    tick = progress or (lambda _stage, _n, _total: None)
    started = time.perf_counter()
    decoded = decode(capture, report, sink, tick, local)
    report.decode_s = time.perf_counter() - started

    fabric = _as_cabled(capture, decoded.lldp, report)
    pipeline = Pipeline(fabric, profile)
    out = _Batches(sink, batch_rows)
    total = report.telemetry_values + report.facts
    step = max(1, total // 200)
    t0 = time.perf_counter()
    for n, record in enumerate(_merged(decoded.per_file, decoded.facts), 1):
        begun = time.perf_counter()
        result = (
            pipeline.on_telemetry(record)
            if isinstance(record, TelemetryValue)
            else pipeline.on_fact(record)
        )
        if result.verdicts:
            report.verdict_latency_s.append(time.perf_counter() - begun)
        report.last_event_ns = max(report.last_event_ns, record.ts_ns)
        out.samples.extend((s, pipeline.link_id(s.device, s.interface)) for s in result.samples)
        out.events.extend((e, pipeline.link_id(e.device, e.interface)) for e in result.events)
        report.updates.extend(result.verdicts)
        if len(out.samples) >= batch_rows:
            out.flush_samples()
        if n % step == 0:
            tick("replay", step, total)
    report.updates.extend(pipeline.flush())
    report.process_s = time.perf_counter() - t0 - out.store_s
    t = time.perf_counter()
    report.verdicts = pipeline.correlator.verdicts()
    out.flush_samples()
    sink.write_link_events(out.events)
    for i in range(0, len(decoded.facts), batch_rows):
        sink.write_job_facts(decoded.facts[i : i + batch_rows])
    nodes = node_events(decoded.facts, capture.root, quarantine or QuarantineConfig())
    sink.write_node_events(nodes)
    report.node_events = len(nodes)
    seen_at = min((u.ts_ns for u in decoded.lldp), default=0)
    sink.write_cabling_events([cabling_event(d, seen_at) for d in report.cabling])
    sink.write_verdicts(report.verdicts)
    report.store_s = out.store_s + time.perf_counter() - t
    report.samples = out.written_samples
    report.link_events = len(out.events)
    report.unknown_interfaces = pipeline.correlator.stats.unknown_interfaces
    report.evaluations = pipeline.correlator.stats.evaluations
    return report


def _merged(
    per_file: list[list[TelemetryValue]], facts: list[JobFact]
) -> Iterator[TelemetryValue | JobFact]:
    """All records by event time; at equal times telemetry first, then facts, stably."""
    streams: list[Iterator[tuple[int, int, int, TelemetryValue | JobFact]]] = [
        ((v.ts_ns, 0, i, v) for v in values) for i, values in enumerate(per_file)
    ]
    streams.append((f.ts_ns, 1, 0, f) for f in facts)
    for *_, record in heapq.merge(*streams, key=lambda item: item[:3]):
        yield record
