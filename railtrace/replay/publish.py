"""`railtrace replay DIR --kafka`: a capture published onto the raw topics, as if live.

gNMI messages go to the raw gNMI topic keyed by switch, stamped when sent (the raw topics keep
a few days by record time, and a capture may be months old); log files go to the raw log topic
keyed by job, in batches of consecutive lines with their positions (so the workers' parsers
can drop redeliveries); `scheduler/` files go to the raw scheduler topic one job record a
message, keyed by its job, with where it began in its file. Sources are named as the embedded
replay names them, so both paths reach identical verdicts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import orjson
from aiokafka import AIOKafkaProducer

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.replay.capture import Capture
from railtrace.replay.decode import year_hint
from railtrace.settings import KafkaSettings
from railtrace.streams import wire
from railtrace.streams.scheduler import read_placements, split
from railtrace.streams.telemetry import iter_messages
from railtrace.streams.telemetry.xpath import device_of

LINES_PER_MESSAGE = 500


@dataclass(slots=True)
class Published:
    gnmi_messages: int = 0
    log_messages: int = 0
    log_lines: int = 0
    scheduler_records: int = 0
    skipped: int = 0


def _source(message: object) -> str | None:
    if isinstance(message, dict):
        src = message.get("source") or (message.get("tags") or {}).get("source")
        return device_of(src) if isinstance(src, str) else None
    if isinstance(message, list) and message:
        return _source(message[0])
    return None


def log_batches(capture: Capture) -> Iterator[wire.LogBatch]:
    """A capture's log files as raw-logs messages: consecutive lines with their positions."""
    year = year_hint(capture)
    for job_id, paths in capture.log_files.items():
        for path in paths:
            # Split on newlines only, as the embedded replay's file iteration does, so that
            # line numbers (and so fact origins) agree.
            data = path.read_bytes()
            lines = (
                [
                    raw.decode("utf-8", errors="replace")
                    for raw in (data[:-1] if data.endswith(b"\n") else data).split(b"\n")
                ]
                if data
                else []
            )
            for start in range(0, len(lines), LINES_PER_MESSAGE):
                yield wire.LogBatch(
                    job_id,
                    capture.log_source(path),
                    start + 1,
                    tuple(lines[start : start + LINES_PER_MESSAGE]),
                    year,
                )


def scheduler_outputs(
    capture: Capture, tz: str = "UTC"
) -> Iterator[tuple[bytes, wire.SchedulerOutput]]:
    """A capture's `scheduler/` files as raw scheduler messages and their keys: one job record
    each, keyed by the job it places (a record that places none, pending or unreadable, is
    keyed by its file: it places nothing, and the worker that gets it counts or refuses it).
    `tz` is the zone scontrol printed the files' times in: the site's."""
    zone = ZoneInfo(tz)
    for path in capture.scheduler_files:
        source = capture.log_source(path)
        for chunk in split(path.read_bytes()):
            placed = read_placements(source, chunk.data, zone, chunk.first).placements
            key = placed[0].job_id if placed else source
            text = chunk.data.decode("utf-8", errors="replace")
            yield key.encode(), wire.SchedulerOutput(source, chunk.first, text, tz)


async def publish(
    capture: Capture,
    settings: KafkaSettings,
    progress: Callable[[int], None] | None = None,
    tz: str = "UTC",
) -> Published:
    await kafka.ensure_topics(settings)
    producer = AIOKafkaProducer(
        **kafka.producer_kwargs(settings), linger_ms=5, max_batch_size=512 * 1024
    )
    await producer.start()
    done = Published()
    gnmi_topic = topics.name(settings.topic_prefix, topics.RAW_GNMI)
    logs_topic = topics.name(settings.topic_prefix, topics.RAW_LOGS)
    try:
        for path in capture.gnmi_files:
            for message in iter_messages(path.read_text(errors="replace"), path.name):
                device = _source(message)
                if device is None:
                    done.skipped += 1  # torn or sourceless: the embedded replay skips it too
                    continue
                # Stamped now, as the broker would: the capture's own time is in the message,
                # and a record stamped months ago is past the raw topic's retention, which
                # deleted the unread backlog within minutes.
                await producer.send(gnmi_topic, orjson.dumps(message), key=device.encode())
                done.gnmi_messages += 1
            if progress:
                progress(1)
        for batch in log_batches(capture):
            await producer.send(logs_topic, wire.encode_log_batch(batch), key=batch.job_id.encode())
            done.log_messages += 1
            done.log_lines += len(batch.lines)
            if progress and batch.first_line_no == 1:
                progress(1)
        scheduler_topic = topics.name(settings.topic_prefix, topics.RAW_SCHEDULER)
        for key, out in scheduler_outputs(capture, tz):
            await producer.send(scheduler_topic, wire.encode_scheduler_output(out), key=key)
            done.scheduler_records += 1
        await producer.flush()
    finally:
        await producer.stop()
    return done


def publish_capture(
    capture: Capture,
    settings: KafkaSettings,
    progress: Callable[[int], None] | None = None,
    tz: str = "UTC",
) -> Published:
    """Publish `capture` onto the raw topics; `tz` is the site's zone (see scheduler_outputs)."""
    return asyncio.run(publish(capture, settings, progress, tz))
