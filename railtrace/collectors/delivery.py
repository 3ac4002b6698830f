"""Delivery of collected messages to Kafka through the disk spool.

`emit` only appends to the spool, so a collector never waits on the broker; one drain task
sends the spool's head in batches (acks=all, idempotent producer), waits for every
acknowledgement, then moves the spool's cursor. While the broker is away the drain task backs
off (jittered, capped) and the spool absorbs the input, dropping the oldest samples when full;
when the broker returns, the backlog goes out first, in order.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import Spool
from railtrace.settings import KafkaSettings
from railtrace.streams.worker import kafka, topics

log = logging.getLogger(__name__)

STREAMS = {
    "gnmi": topics.RAW_GNMI,
    "snmp": topics.RAW_SNMP,
    "logs": topics.RAW_LOGS,
    "node-events": topics.RAW_NODE_EVENTS,
}
BATCH = 2000
BACKOFF_S = (0.5, 15.0)
# A batch not acknowledged within this long counts as failed (aiokafka would otherwise retry
# against an absent broker for as long as it takes), and so does a producer that will not stop.
SEND_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0


class Delivery:
    """The Emit every collector of a process shares.

    `counters`: spooled_<stream> (messages emitted), sent (acknowledged by the broker),
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
        self._wake = asyncio.Event()
        self._producer: AIOKafkaProducer | None = None
        self._topics_checked = False

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
                    await asyncio.wait_for(self._send(batch), SEND_TIMEOUT_S)
                    failures = 0
                    self.failing_since = None
                except (KafkaError, OSError, TimeoutError) as exc:
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
        futures = [
            await producer.send(
                self._topics[m.stream],
                m.value,
                key=m.key,
                timestamp_ms=None if m.ts_ns is None else m.ts_ns // 1_000_000,
            )
            for _, m in batch
        ]
        await asyncio.gather(*futures)
        self.spool.ack(batch[-1][0])
        self.counters["sent"] += len(batch)

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
                await producer.stop()
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
            try:
                await asyncio.wait_for(producer.stop(), STOP_TIMEOUT_S)
            except (KafkaError, OSError, TimeoutError) as exc:
                # Unsent records are still in the spool: nothing is lost with the producer.
                log.debug("producer stop failed", extra={"error": repr(exc)})
