"""Delivery of collected messages to Kafka through the disk spool.

`emit` only appends to the spool, so a collector never waits on the broker; one drain task
sends the spool's head in batches (acks=all, idempotent producer), waits for every
acknowledgement, then moves the spool's cursor. While the broker is away the drain task backs
off (jittered, capped) and the spool absorbs the input, dropping the oldest samples when full;
when the broker returns, the backlog goes out first, in order.

A record the broker refuses for what it is rather than for the broker's state (a time more
than the broker's `log.message.timestamp.after.max.ms` ahead, as a host with a wrong clock or
a kernel line with a wrong year gives; a record over the size limit) would otherwise block the
spool forever. Such a record is sent again stamped with the send time when its time was the
problem, and otherwise goes to the dead-letters topic (cut to its first bytes) with the
reason, so the records behind it flow.

A record stamped further back than half of what its topic keeps (a spool backlog from a long
outage, a log file read from its start, a line with a wrong year) is taken by the broker but
deleted at its next retention pass, which may come before any worker has read it: it is sent
stamped with the send time instead. The record's own time is in its value either way.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import (
    CorruptRecordException,
    InvalidTimestampError,
    KafkaError,
    MessageSizeTooLargeError,
    RecordTooLargeError,
)

from railtrace import kafka
from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import Spool
from railtrace.kafka import topics
from railtrace.settings import KafkaSettings
from railtrace.streams import wire

log = logging.getLogger(__name__)

STREAMS = {
    "gnmi": topics.RAW_GNMI,
    "snmp": topics.RAW_SNMP,
    "logs": topics.RAW_LOGS,
    "scheduler": topics.RAW_SCHEDULER,
    "node-events": topics.RAW_NODE_EVENTS,
}
BATCH = 2000
BACKOFF_S = (0.5, 15.0)
# A batch not acknowledged within this long counts as failed (aiokafka would otherwise retry
# against an absent broker for as long as it takes), and so does a producer that will not stop.
SEND_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
#: Errors about the record itself: resending it unchanged can never succeed.
RECORD_FAULTS = (
    InvalidTimestampError,
    MessageSizeTooLargeError,
    RecordTooLargeError,
    CorruptRecordException,
)
#: How much of a refused record its dead letter keeps.
DEAD_LETTER_BYTES = 64 * 1024


class Delivery:
    """The Emit every collector of a process shares.

    `counters`: spooled_<stream> (messages emitted), sent (acknowledged by the broker),
    stamped_now_<stream> (sent with the send time as their Kafka time; module docstring),
    send_failures (batches that failed and were retried after a backoff). `failing_since` is
    the monotonic time of the first failure since the last batch went through (None while
    sends succeed), for the health rules.
    """

    def __init__(self, settings: KafkaSettings, spool: Spool) -> None:
        self.settings = settings
        self.spool = spool
        self.counters: Counter[str] = Counter()
        self.failing_since: float | None = None
        self.last_error = ""
        self._topics = {s: topics.name(settings.topic_prefix, spec) for s, spec in STREAMS.items()}
        # Record times older than this (ms before the send) are replaced by the send time.
        self._kept_ms = {s: spec.retention_ms // 2 for s, spec in STREAMS.items()}
        self._wake = asyncio.Event()
        self._producer: AIOKafkaProducer | None = None
        self._topics_checked = False
        self._last_fault = ""

    async def __call__(self, message: Outgoing) -> None:
        if message.stream not in self._topics:
            raise ValueError(f"no raw topic for stream {message.stream!r}")
        self.spool.append(message)
        self.counters[f"spooled_{message.stream}"] += 1
        self._wake.set()

    def connected(self) -> bool:
        return self._producer is not None

    async def run(self) -> None:
        """Drain the spool until cancelled."""
        failures = 0
        try:
            while True:
                batch = self.spool.peek(BATCH)
                if not batch:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                try:
                    # Not `asyncio.wait_for`: on Python 3.11 a cancellation that meets a send
                    # failing in the same turn is dropped for the send's error, and the drain
                    # went on retrying after its collector had asked it to stop.
                    async with asyncio.timeout(SEND_TIMEOUT_S):
                        await self._send(batch)
                    failures = 0
                    self.failing_since = None
                except (KafkaError, OSError, TimeoutError) as exc:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise asyncio.CancelledError from exc  # the client lost our cancel
                    failures += 1
                    self.counters["send_failures"] += 1
                    self.last_error = repr(exc)
                    if self.failing_since is None:
                        self.failing_since = time.monotonic()
                    await self._drop_producer()
                    low, high = BACKOFF_S
                    delay = min(high, low * 2 ** min(failures, 10)) * random.uniform(0.5, 1.0)
                    log.warning(
                        "kafka unavailable: spooling",
                        extra={
                            "error": repr(exc),
                            "retry_in_s": round(delay, 2),
                            "spool_bytes": self.spool.size_bytes(),
                        },
                    )
                    await asyncio.sleep(delay)
        finally:
            await self._drop_producer()

    async def _send(self, batch: list[tuple[Any, Outgoing]]) -> None:
        producer = await self._connect()
        pending: list[Any] = []
        now_ms = time.time_ns() // 1_000_000
        stamps = [self._stamp(m, now_ms) for _, m in batch]
        for (_, m), ts_ms in zip(batch, stamps, strict=True):
            try:
                topic = self._topics[m.stream]
                pending.append(await producer.send(topic, m.value, key=m.key, timestamp_ms=ts_ms))
            except RECORD_FAULTS as exc:  # refused before it left (over max_request_size)
                pending.append(exc)
        results = await asyncio.gather(
            *(p for p in pending if not isinstance(p, BaseException)), return_exceptions=True
        )
        outcomes = iter(results)
        failed: list[tuple[Outgoing, BaseException]] = []
        for (_, m), p in zip(batch, pending, strict=True):
            outcome = p if isinstance(p, BaseException) else next(outcomes)
            if isinstance(outcome, BaseException):
                failed.append((m, outcome))
        if failed and not any(isinstance(e, RECORD_FAULTS) for _, e in failed):
            raise failed[0][1]  # the broker's state: the whole batch is retried
        # A refusal also fails what the producer sent after it to that partition (out of
        # sequence), so every failed record is tried again alone.
        for m, _ in failed:
            await self._refused(m)
        self.spool.ack(batch[-1][0])
        self.counters["sent"] += len(batch) - len(failed)  # _refused counts its own
        for (_, m), ts_ms in zip(batch, stamps, strict=True):
            if ts_ms is None and m.ts_ns is not None:
                self.counters[f"stamped_now_{m.stream}"] += 1

    def _stamp(self, m: Outgoing, now_ms: int) -> int | None:
        """The Kafka time of `m`: its own, unless the broker would delete it at once (see the
        module docstring); None is the send time."""
        if m.ts_ns is None:
            return None
        ts_ms = m.ts_ns // 1_000_000
        return None if ts_ms < now_ms - self._kept_ms[m.stream] else ts_ms

    async def _alone(self, m: Outgoing, topic: str, value: bytes, ts_ms: int | None) -> bool:
        """Send one record and wait for it; False when the broker refused the record itself.

        A refusal leaves the idempotent producer's sequence numbers for that partition out of
        step with the broker's, so the producer is replaced (a new producer id starts clean).
        """
        producer = await self._connect()
        try:
            await (await producer.send(topic, value, key=m.key, timestamp_ms=ts_ms))
        except RECORD_FAULTS as exc:
            self._last_fault = f"{type(exc).__name__}: {exc}"
            await self._drop_producer()
            return False
        return True

    async def _refused(self, m: Outgoing) -> None:
        """Deliver what can be of a record the broker refused; see the module docstring."""
        topic = self._topics[m.stream]
        # The broker answers per partition, so a batch's innocent records share the refusal
        # of a bad one: each is tried again alone first.
        ts_ms = self._stamp(m, time.time_ns() // 1_000_000)
        if await self._alone(m, topic, m.value, ts_ms):
            self.counters["sent"] += 1
            return
        reason = self._last_fault
        if reason.startswith(InvalidTimestampError.__name__):
            if await self._alone(m, topic, m.value, None):
                self.counters[f"retimed_{m.stream}"] += 1
                self.counters["sent"] += 1
                log.warning(
                    "record time refused by the broker; sent stamped with the send time",
                    extra={"stream": m.stream, "key": m.key, "ts_ns": m.ts_ns},
                )
                return
            reason += f"; sent with the send time: {self._last_fault}"
        letter = wire.encode_dead_letter(
            topic, -1, -1, m.key, m.value[:DEAD_LETTER_BYTES], f"refused by the broker: {reason}"
        )
        dead = topics.name(self.settings.topic_prefix, topics.DEAD_LETTERS)
        producer = await self._connect()
        await (await producer.send(dead, letter, key=topic.encode()))
        self.counters[f"refused_{m.stream}"] += 1
        log.error(
            "record refused by the broker; dead-lettered",
            extra={"stream": m.stream, "key": m.key, "bytes": len(m.value), "reason": reason},
        )

    async def _connect(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(
                **kafka.producer_kwargs(self.settings),
                linger_ms=20,
                request_timeout_ms=10_000,
                max_batch_size=1024 * 1024,
            )
            try:
                await producer.start()
            except BaseException:
                # Bounded also when cancelled mid-start: a stop that waits on a broker that is
                # away would hold the collector's shutdown.
                await _stop(producer)
                raise
            self._producer = producer
            log.info("kafka connected", extra={"bootstrap": self.settings.bootstrap_servers})
            if not self._topics_checked:
                # A broker that does not create topics on first use would leave every send
                # waiting for metadata; a principal that may not create them is told so.
                try:
                    await kafka.ensure_topics(self.settings)
                except (KafkaError, OSError) as exc:
                    log.warning("could not create topics", extra={"error": repr(exc)})
                self._topics_checked = True
        return self._producer

    async def _drop_producer(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await _stop(producer)


async def _stop(producer: AIOKafkaProducer) -> None:
    """Stop within STOP_TIMEOUT_S whether the broker answers or not: unsent records are still
    in the spool, so nothing is lost with the producer.

    A stop still running then is cancelled and left to end on its own, not waited for as
    `asyncio.wait_for` would: a shutdown that does not end at its cancellation would hold
    this task, and the collector's, without bound (loaded runs saw a drain task that did not
    stop for ten minutes)."""
    stopping = asyncio.ensure_future(producer.stop())
    stopping.add_done_callback(_retrieved)
    try:
        done, _ = await asyncio.wait({stopping}, timeout=STOP_TIMEOUT_S)
    except asyncio.CancelledError:
        stopping.cancel()
        raise
    if not done:
        stopping.cancel()
        log.warning("producer did not stop in time; left", extra={"after_s": STOP_TIMEOUT_S})
    elif not stopping.cancelled():
        exc = stopping.exception()
        if exc is not None and not isinstance(exc, KafkaError | OSError):
            raise exc


def _retrieved(task: asyncio.Future[None]) -> None:
    """A stop's failure is only logged: the producer is dropped either way."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.debug("producer stop failed", extra={"error": repr(exc)})
