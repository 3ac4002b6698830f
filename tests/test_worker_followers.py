"""What every worker follows whole, against a real broker: the link-events topic. A message
that does not decode is skipped, and the good ones around it still reach the link history the
correlator judges with."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from attribution_support import HOST_LINK, LEAF, LEAF_PORT, T0, S, fabric
from kafka_support import BOOTSTRAP, require_broker

from railtrace.settings import KafkaSettings, Settings, WorkerSettings
from railtrace.streams import wire
from railtrace.streams.records import LinkEvent, LinkEventKind
from railtrace.streams.worker import kafka, topics
from railtrace.streams.worker.processor import Processor


async def _follow_after(processor: Processor, messages: list[bytes]) -> list[LinkEvent]:
    """Publish `messages` on the link-events topic, follow it, and return HOST_LINK's events
    once two arrived (or what arrived in 60 s)."""
    settings = processor.settings
    await kafka.ensure_topics(settings.kafka)
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP)
    await producer.start()
    try:
        name = topics.name(settings.kafka.topic_prefix, topics.LINK_EVENTS)
        for value in messages:
            await producer.send(name, value, key=HOST_LINK.encode(), partition=0)
        await producer.flush()
    finally:
        await producer.stop()
    task = asyncio.create_task(processor._follow_link_events())
    try:
        deadline = time.monotonic() + 60
        got: list[LinkEvent] = []
        while time.monotonic() < deadline and len(got) < 2:
            assert not task.done(), f"the follower stopped: {task.exception()!r}"
            await asyncio.sleep(0.2)
            got = processor.history.between(HOST_LINK, 0, 2**63)
        return got
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_a_link_event_message_that_does_not_decode_is_skipped_and_its_neighbours_kept() -> None:
    require_broker()
    tag = uuid.uuid4().hex[:10]
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"t{tag}", partitions=1),
        worker=WorkerSettings(app_id=f"a{tag}"),
    )
    processor = Processor(settings, fabric())
    down = LinkEvent(T0, LEAF, LEAF_PORT, LinkEventKind.DOWN, 0.0, "oper-status down")
    up = LinkEvent(T0 + 5 * S, LEAF, LEAF_PORT, LinkEventKind.UP, 0.0, "oper-status up")
    got = asyncio.run(
        _follow_after(
            processor,
            [wire.encode_records([down]), b"\x00 not a record", wire.encode_records([up])],
        )
    )
    assert got == [down, up]
    assert processor.newest_link_event_ns == up.ts_ns
