"""A capture's files read into records: telemetry decoded per file, logs parsed per job and
dated by the job's other files, scheduler records read into placements; bad input stored as
dead letters as each file is read.

Apart from the runner because reading is done once, before any record is replayed, and the
streaming publisher reads the capture's year the same way (`year_hint`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from railtrace.replay.capture import Capture
from railtrace.replay.report import ReplayReport
from railtrace.replay.sinks import Sink
from railtrace.streams.logs import LogParser
from railtrace.streams.logs.sources import SourceHosts
from railtrace.streams.logs.undated import JobClock
from railtrace.streams.records import DeadLetter, JobFact, TelemetryValue
from railtrace.streams.scheduler import read_placements, uncabled
from railtrace.streams.telemetry import DecodeError, GnmicDecoder, decode_message, iter_messages
from railtrace.streams.telemetry.lldp import LldpUpdate

Progress = Callable[[str, int, int], None]  # stage, advance, total
#: Dead letters of one log file are stored in batches of this many as they are found.
DEAD_LETTER_BATCH = 10_000


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
class Decoded:
    """What a capture's files gave: each telemetry file's values in time order, every job fact
    in time order, and the LLDP neighbours the telemetry carried."""

    per_file: list[list[TelemetryValue]] = field(default_factory=list)
    facts: list[JobFact] = field(default_factory=list)
    lldp: list[LldpUpdate] = field(default_factory=list)


def decode(
    capture: Capture, report: ReplayReport, sink: Sink, tick: Progress, local: tzinfo
) -> Decoded:
    """Decode every telemetry file and parse every log file; bad input is dead-lettered, and
    each file's dead letters are stored as soon as it is read: all of them, in bounded memory.
    """
    out = Decoded()
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
