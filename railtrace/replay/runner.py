"""The embedded replay: a capture fed through the core in event-time order, into a store.

Telemetry files are decoded one by one and merged by timestamp with the job facts parsed from
the logs, then fed to the same `Pipeline` the streaming workers run, record by record, so the
replay never looks ahead. Writes are batched; the final verdict of every job is written last.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Protocol

from railtrace.collectors.hosts.config import QuarantineConfig
from railtrace.replay.capture import Capture
from railtrace.replay.nodes import node_events
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.logs import LogParser
from railtrace.streams.logs.sources import SourceHosts
from railtrace.streams.logs.undated import JobClock
from railtrace.streams.pipeline import Pipeline
from railtrace.streams.records import (
    CablingEvent,
    DeadLetter,
    JobFact,
    LinkEvent,
    LinkSample,
    NodeEvent,
    TelemetryValue,
    Verdict,
)
from railtrace.streams.scheduler import read_placements, uncabled
from railtrace.streams.telemetry import DecodeError, GnmicDecoder, decode_message, iter_messages
from railtrace.streams.telemetry.cabling import CablingWatch, cabling_event
from railtrace.streams.telemetry.lldp import LldpUpdate
from railtrace.topology.asbuilt import cabled_fabric
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.lldp import CablingDifference, Neighbour, PlanIndex, check_cabling

Progress = Callable[[str, int, int], None]  # stage, advance, total
#: Dead letters of one log file are stored in batches of this many as they are found.
DEAD_LETTER_BATCH = 10_000


class Sink(Protocol):
    """Where replay output goes: the store, or anything with the same writers."""

    def write_link_samples(self, rows: Sequence[tuple[LinkSample, str]]) -> None: ...
    def write_link_events(self, rows: Sequence[tuple[LinkEvent, str]]) -> None: ...
    def write_job_facts(self, rows: Sequence[JobFact]) -> None: ...
    def write_verdicts(self, rows: Sequence[Verdict]) -> None: ...
    def write_dead_letters(self, rows: Sequence[DeadLetter]) -> None: ...
    def write_cabling_events(self, rows: Sequence[CablingEvent]) -> None: ...
    def write_node_events(self, rows: Sequence[NodeEvent]) -> None: ...


class DiscardSink:
    """Keeps nothing: for measuring the core alone, or checking what a capture yields."""

    def write_link_samples(self, rows: Sequence[tuple[LinkSample, str]]) -> None: ...
    def write_link_events(self, rows: Sequence[tuple[LinkEvent, str]]) -> None: ...
    def write_job_facts(self, rows: Sequence[JobFact]) -> None: ...
    def write_verdicts(self, rows: Sequence[Verdict]) -> None: ...
    def write_dead_letters(self, rows: Sequence[DeadLetter]) -> None: ...
    def write_cabling_events(self, rows: Sequence[CablingEvent]) -> None: ...
    def write_node_events(self, rows: Sequence[NodeEvent]) -> None: ...


@dataclass(slots=True)
class ReplayReport:
    verdicts: list[Verdict] = field(default_factory=list)
    #: Every verdict change, in the order reached: shows when each answer was first known.
    updates: list[Verdict] = field(default_factory=list)
    telemetry_values: int = 0
    log_lines: int = 0
    facts: int = 0
    #: Job placements read from scheduler/, and jobs listed there that held no host yet.
    placements: int = 0
    waiting_jobs: int = 0
    samples: int = 0
    link_events: int = 0
    #: Xids of named hosts, as the Xid collector's node events (see `replay.nodes`).
    node_events: int = 0
    dead_letters: Counter[str] = field(default_factory=Counter)
    unknown_paths: int = 0
    #: Telemetry messages stamped in another unit than ns, by unit, read in that unit.
    retimed_stamps: Counter[str] = field(default_factory=Counter)
    #: Values at an empty path (gnmic's print of a deprecated `Path.element` path).
    pathless_values: int = 0
    unknown_interfaces: int = 0
    plan_errors: list[str] = field(default_factory=list)
    #: What of the capture was left out, and why (see `Capture.skipped`).
    skipped: list[str] = field(default_factory=list)
    gnmi_files: int = 0
    log_files: int = 0
    scheduler_files: int = 0
    decode_s: float = 0.0
    #: The part of decode_s spent parsing logs.
    logs_s: float = 0.0
    process_s: float = 0.0
    store_s: float = 0.0
    last_event_ns: int = 0
    #: Wall time of each pipeline step that changed a verdict: the verdict latency after the
    #: event that decided it.
    verdict_latency_s: list[float] = field(default_factory=list)
    #: Ports whose LLDP neighbours differ from the plan; miswired ones were replayed as cabled.
    cabling: list[CablingDifference] = field(default_factory=list)


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
        watch.apply(update)
    seen = [
        Neighbour(Endpoint(device, interface), remote)
        for device, watch in watches.items()
        for interface, remotes in watch.neighbours().items()
        for remote in remotes
    ]
    report.cabling = check_cabling(capture.plan, seen, set(watches))
    return cabled_fabric(capture.plan, report.cabling, capture.fabric) or capture.fabric


def year_hint(capture: Capture) -> int | None:
    """The year the capture starts in, from its earliest gNMI timestamp: log prefixes that
    carry no year (PyTorch's glog, syslog) are read as that year. Both replay paths use it."""
    first: list[int] = []
    for path in capture.gnmi_files:
        with path.open(errors="replace") as fh:
            head = fh.read(65536)
        for item in iter_messages(head, path.name):
            if not isinstance(item, DeadLetter):
                try:
                    values = decode_message(item)
                except DecodeError:
                    continue
                if values:
                    first.append(min(v.ts_ns for v in values))
                    break
    if not first:
        return None
    return datetime.fromtimestamp(min(first) / 1e9, tz=UTC).year


@dataclass(slots=True)
class _Decoded:
    per_file: list[list[TelemetryValue]] = field(default_factory=list)
    facts: list[JobFact] = field(default_factory=list)
    lldp: list[LldpUpdate] = field(default_factory=list)


def _decode(
    capture: Capture, report: ReplayReport, sink: Sink, tick: Progress, local: tzinfo
) -> _Decoded:
    """Decode every telemetry file and parse every log file; bad input is dead-lettered, and
    each file's dead letters are stored as soon as it is read: all of them, in bounded memory.
    """
    out = _Decoded()
    files = len(capture.gnmi_files) + capture.log_file_count + len(capture.scheduler_files)

    def store_dead(kind: str, dead: list[DeadLetter]) -> None:
        if dead:
            sink.write_dead_letters(dead)
            report.dead_letters[kind] += len(dead)

    decoder = GnmicDecoder()
    for path in capture.gnmi_files:
        values = decoder.feed_text(path.read_text(errors="replace"), str(path.name), out.lldp)
        values.sort(key=lambda v: v.ts_ns)
        out.per_file.append(values)
        store_dead("gnmi", decoder.stats.take_dead_letters())
        tick("decode", 1, files)
    report.telemetry_values = decoder.stats.values
    report.unknown_paths = decoder.stats.unknown_paths
    report.retimed_stamps = decoder.stats.retimed
    report.pathless_values = decoder.stats.pathless
    year = year_hint(capture)
    named = SourceHosts(capture.fabric.hosts())
    started = time.perf_counter()
    for job_id, paths in capture.log_files.items():
        # Lines with no time of their own nor in their file: see streams.logs.undated.
        clock = JobClock()
        for path in paths:
            source = capture.log_source(path)
            parser = LogParser(job_id, source, year, named.of(source), local)
            _parse_log(path, parser, clock, out.facts, store_dead)
            report.log_lines += parser.stats.lines
            tick("decode", 1, files)
        store_dead("untimed", clock.leftover())
    for path in capture.scheduler_files:
        placed = read_placements(capture.log_source(path), path.read_bytes(), local)
        out.facts.extend(placed.placements)
        report.placements += len(placed.placements)
        report.waiting_jobs += placed.waiting
        store_dead("scheduler", placed.dead_letters)
        tick("decode", 1, files)
    store_dead("placement", uncabled(out.facts, capture.fabric.host_nics))
    out.facts.sort(key=lambda f: f.ts_ns)
    report.facts = len(out.facts)
    report.logs_s = time.perf_counter() - started
    return out


def _parse_log(
    path: Path,
    parser: LogParser,
    clock: JobClock,
    facts: list[JobFact],
    store_dead: Callable[[str, list[DeadLetter]], None],
) -> None:
    """Add the facts of one log file to `facts`, dated by its job's `clock`; its dead letters
    are stored as they pile up, so all are kept in bounded memory."""
    untimed: list[DeadLetter] = []
    with path.open("rb") as fh:
        for line in fh:
            found = parser.feed(line)
            if found:
                dated, dead = clock.date(found)
                facts.extend(dated)
                untimed.extend(dead)
            if len(parser.stats.dead_letters) >= DEAD_LETTER_BATCH:
                store_dead("logs", parser.stats.take_dead_letters())
            if len(untimed) >= DEAD_LETTER_BATCH:
                store_dead("untimed", untimed)
                untimed = []
    dated, dead = clock.date(parser.pause())
    facts.extend(dated)
    store_dead("logs", parser.stats.take_dead_letters())
    store_dead("untimed", untimed + dead)


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
    decoded = _decode(capture, report, sink, tick, local)
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
    return report


#: A record stamped further than this past the replaying machine's clock is called out: the
#: collectors re-stamp what is more than an hour ahead, so a capture should hold none.
FUTURE_SLACK_NS = 3600 * 1_000_000_000


def warnings(report: ReplayReport, now_ns: int) -> list[str]:
    """What a person must know about a replay that the verdicts do not say: input that was
    missing, unreadable or left out, and clocks that cannot be right (`now_ns`: this machine's
    time). Each is a sentence saying what it means for the verdicts."""
    out = list(report.skipped)
    if report.telemetry_values == 0:
        out.append(
            "no switch telemetry: gnmi/ is missing or holds no *.json or *.jsonl file, so no "
            "link can be blamed"
            if report.gnmi_files == 0
            else f"no switch telemetry was read from the {report.gnmi_files} files in gnmi/ "
            "(empty, or every message a dead letter), so no link can be blamed"
        )
    if report.facts == report.placements:
        judged = (
            f"the jobs the {report.placements} placements of scheduler/ name are judged on "
            "their hosts' links alone, and no hang can be seen"
            if report.placements
            else "there is no job to judge"
        )
        out.append(
            f"no job logs: logs/<job_id>/ is missing or empty, so {judged}"
            if report.log_files == 0
            else f"the {report.log_files} log files gave no job facts (no NCCL, PyTorch, "
            f"trainer or kernel line railtrace reads), so {judged}"
        )
    if report.scheduler_files and not report.placements and not report.waiting_jobs:
        out.append(
            f"the {report.scheduler_files} files in scheduler/ gave no job placement (see the "
            "scheduler dead letters): jobs are placed from their NCCL INFO lines only"
        )
    if report.retimed_stamps:
        units = ", ".join(f"{n} in {u}" for u, n in sorted(report.retimed_stamps.items()))
        out.append(
            f"telemetry messages stamped in another unit than gNMI's nanoseconds ({units}) were "
            "read in that unit: a switch OS that stamps so is timed right, not in 1970"
        )
    if report.pathless_values:
        out.append(
            f"{report.pathless_values} telemetry values had no path (gnmic prints a switch's "
            "deprecated gNMI `Path.element` paths as `/`): they are lost; collect such a switch "
            "with `railtrace collect gnmi`, which reads those paths"
        )
    ahead = report.last_event_ns - now_ns
    if ahead > FUTURE_SLACK_NS:
        newest = datetime.fromtimestamp(report.last_event_ns / 1e9, tz=UTC)
        out.append(
            f"the capture's newest record is stamped {newest:%Y-%m-%d %H:%M:%S} UTC, "
            f"{_span(ahead)} after this machine's clock: a switch or host clock is wrong, and "
            "the verdicts are dated by it"
        )
    return out


def _span(ns: int) -> str:
    days = ns / 86_400e9
    return f"{days:,.0f} days" if days >= 2 else f"{ns / 3600e9:,.1f} hours"


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
