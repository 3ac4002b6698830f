"""What railtrace's Kafka messages carry: the value formats of every topic, as pure functions.

Raw topics take what the tools write (gnmic JSON for gNMI; JSON objects for SNMP and log
lines); railtrace's own topics carry JSON lists of tagged records (see `codec`), except link
samples, which are the bulk of the traffic and travel as compact rows. Every decoder raises
WireError with a reason, which the workers turn into a dead letter.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from railtrace.streams import codec
from railtrace.streams.records import (
    JOB_ID_MAX_LENGTH,
    LinkSample,
    Metric,
    in_time_range,
    valid_job_id,
)


class WireError(ValueError):
    """A message that does not have the shape its topic promises."""


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"not JSON: {exc}") from exc


# -- raw log lines (keyed by job id) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogBatch:
    """Consecutive lines of one source file of one job; `first_line_no` is 1-based.

    `read_ns` is the shipper's stamp: when the collector read the lines (None when the sender
    had none, as `replay --kafka` has none for a capture's files). It dates the lines that
    carry no time before their file's first stamped one."""

    job_id: str
    source: str
    first_line_no: int
    lines: tuple[str, ...]
    year: int | None = None
    read_ns: int | None = None


def encode_log_batch(batch: LogBatch) -> bytes:
    return orjson.dumps(
        {
            "job_id": batch.job_id,
            "source": batch.source,
            "line_no": batch.first_line_no,
            "lines": list(batch.lines),
            **({"year": batch.year} if batch.year is not None else {}),
            **({"read_ns": batch.read_ns} if batch.read_ns is not None else {}),
        }
    )


def decode_log_batch(data: bytes) -> LogBatch:
    """A log message: {"job_id", "source", "line_no", "line"} or with "lines" (a list), and
    optionally "year" and "read_ns"."""
    raw = _json(data)
    if not isinstance(raw, dict):
        raise WireError("a log message must be a JSON object")
    job, source, line_no = raw.get("job_id"), raw.get("source"), raw.get("line_no")
    if not isinstance(job, str) or not job or not isinstance(source, str) or not source:
        raise WireError("a log message needs non-empty string job_id and source")
    if not valid_job_id(job):
        raise WireError(
            f"job_id {job[:80]!r} is not a job id (letters, digits and ._:@+-, at most "
            f"{JOB_ID_MAX_LENGTH}): it could be stored but never asked for"
        )
    if not isinstance(line_no, int) or isinstance(line_no, bool) or line_no < 1:
        raise WireError("a log message needs line_no, the 1-based number of its first line")
    lines = raw.get("lines", [raw["line"]] if "line" in raw else None)
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        raise WireError("a log message needs `line` (a string) or `lines` (strings)")
    year = raw.get("year")
    if year is not None and (not isinstance(year, int) or not 1970 <= year <= 9999):
        raise WireError("`year`, when given, must be a four-digit integer")
    read_ns = raw.get("read_ns")
    if read_ns is not None and (
        not isinstance(read_ns, int) or isinstance(read_ns, bool) or not in_time_range(read_ns)
    ):
        raise WireError("`read_ns`, when given, must be nanoseconds between 1970 and 2106")
    return LogBatch(job, source, line_no, tuple(lines), year, read_ns or None)


SOURCE_MAX_LENGTH = 1024


# -- raw scheduler output (keyed by job id) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchedulerOutput:
    """One job's record as a scheduler tool printed it (`streams.scheduler.split` cuts an
    output into them): `first` is where it began in the output (a line, or a JSON item's
    position), `tz` the zone its times were printed in (scontrol prints local time without
    a zone), `polled_ns` when the collector read it (None for a file of a capture).

    `gone_ns` is set when the job ended unseen: `text` is its last record, listing it running
    at `polled_ns`, and by the poll at `gone_ns` Slurm no longer held it (MinJobAge passed
    between two polls), so the reader's placement is taken as `ended_unseen` then."""

    source: str
    first: int
    text: str
    tz: str = "UTC"
    polled_ns: int | None = None
    gone_ns: int | None = None

    def zone(self) -> tzinfo:
        return _zone(self.tz)


def encode_scheduler_output(out: SchedulerOutput) -> bytes:
    return orjson.dumps(
        {
            "v": 1,
            "source": out.source,
            "first": out.first,
            "text": out.text,
            "tz": out.tz,
            **({"polled_ns": out.polled_ns} if out.polled_ns is not None else {}),
            **({"gone_ns": out.gone_ns} if out.gone_ns is not None else {}),
        }
    )


def decode_scheduler_output(data: bytes) -> SchedulerOutput:
    """{"v": 1, "source", "first", "text", "tz", "polled_ns" (optional), "gone_ns" (optional,
    with "polled_ns")}."""
    raw = _json(data)
    if not isinstance(raw, dict) or raw.get("v") != 1:
        raise WireError('a scheduler message must be a JSON object with "v": 1')
    source, first, text = raw.get("source"), raw.get("first"), raw.get("text")
    if not isinstance(source, str) or not source or len(source) > SOURCE_MAX_LENGTH:
        raise WireError(f"a scheduler message needs `source`, 1 to {SOURCE_MAX_LENGTH} chars")
    if not isinstance(first, int) or isinstance(first, bool) or first < 1:
        raise WireError("a scheduler message needs `first`, the 1-based line it begins on")
    if not isinstance(text, str):
        raise WireError("a scheduler message needs `text`, the tool's output (a string)")
    tz = raw.get("tz", "UTC")
    if not isinstance(tz, str):
        raise WireError("`tz` must be a time zone name")
    _zone(tz)
    polled = raw.get("polled_ns")
    if polled is not None and (not isinstance(polled, int) or isinstance(polled, bool)):
        raise WireError("`polled_ns`, when given, must be an integer")
    gone = raw.get("gone_ns")
    if gone is not None and (
        not isinstance(gone, int) or isinstance(gone, bool) or polled is None or gone < polled
    ):
        raise WireError("`gone_ns`, when given, must be an integer, from `polled_ns` on")
    return SchedulerOutput(source, first, text, tz, polled, gone)


@functools.lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo:
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError) as exc:
        raise WireError(f"`tz` {name[:80]!r} is not a time zone name: {exc}") from None


# -- link samples (keyed by link id) ------------------------------------------------------------


#: A link sample as the wire carries it: (ts_ns, link_id, device, interface, metric,
#: qualifier, rate, interval_s). The telemetry stage's compiled fold makes these tuples
#: straight from a message's leaves (a tuple costs half a list to make and to collect), the
#: metric as its StrEnum member, whose value orjson writes.
SampleRow = tuple[int, str, str, str, Metric, str, float, float]


def sample_row(s: LinkSample, link: str) -> SampleRow:
    """`s` as the wire row of link `link`."""
    return (s.ts_ns, link, s.device, s.interface, s.metric, s.qualifier, s.rate, s.interval_s)


def encode_samples(rows: Sequence[SampleRow]) -> bytes:
    """Rows of [ts_ns, link_id, device, interface, metric, qualifier, rate, interval_s]."""
    return orjson.dumps(rows)


def decode_samples(data: bytes) -> list[tuple[LinkSample, str]]:
    rows = _json(data)
    if not isinstance(rows, list):
        raise WireError("link samples must be a JSON list of rows")
    try:
        return [
            (LinkSample(int(r[0]), r[2], r[3], Metric(r[4]), r[5], float(r[6]), float(r[7])), r[1])
            for r in rows
        ]
    except (TypeError, ValueError, IndexError) as exc:
        raise WireError(f"bad link sample row: {exc}") from exc


# -- everything else of ours: lists of tagged records -------------------------------------------


def encode_records(records: Sequence[Any]) -> bytes:
    return orjson.dumps([codec.encode(r) for r in records])


def decode_records(data: bytes) -> list[Any]:
    try:
        return codec.loads_many(data)
    except codec.CodecError as exc:
        raise WireError(str(exc)) from exc


# -- dead letters -------------------------------------------------------------------------------


def encode_dead_letter(
    topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, reason: str
) -> bytes:
    """The original bytes (base64) and the reason, so nothing bad is lost or silently fixed."""
    return orjson.dumps(
        {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "key": None if key is None else base64.b64encode(key).decode(),
            "value": None if value is None else base64.b64encode(value).decode(),
            "reason": reason[:2000],
        }
    )


def decode_dead_letter(data: bytes) -> dict[str, Any]:
    raw = _json(data)
    if not isinstance(raw, dict) or "reason" not in raw:
        raise WireError("not a dead letter")
    for field in ("key", "value"):
        if raw.get(field) is not None:
            raw[field] = base64.b64decode(raw[field])
    return dict(raw)
