"""What every worker follows whole, against a real broker: the link-events topic. A message
that does not decode is skipped, and the good ones around it still reach the link history the
correlator judges with."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from attribution_support import HOST_LINK, LEAF, LEAF_PORT, T0, S, fabric
from kafka_support import BOOTSTRAP, require_broker

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.settings import KafkaSettings, Settings, WorkerSettings
from railtrace.streams import wire
from railtrace.streams.records import LinkEvent, LinkEventKind
from railtrace.worker.processor import Processor


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
    task = asyncio.create_task(processor.follow.link_events())
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
    assert processor.follow.newest_link_event_ns == up.ts_ns


def _changelog_settings(wait_s: float = 60.0) -> Settings:
    tag = uuid.uuid4().hex[:10]
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"t{tag}", partitions=2),
        worker=WorkerSettings(app_id=f"a{tag}", changelog_wait_s=wait_s),
    )


async def _create(names: list[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, 2, 1) for name in names])
    finally:
        await admin.close()


def test_a_table_changelog_new_to_the_producer_is_made_known_before_a_batch_writes_it() -> None:
    """A table write picks its changelog partition from the producer's metadata, without
    waiting; a worker's first write to a changelog the producer had not sent to crashed the
    parse-logs agent (a job streamed one host short). The agent now awaits `ready_for` each
    batch, which this pins against a real broker and producer. The changelogs are made here
    as faust makes them when a worker starts."""
    require_broker()
    settings = _changelog_settings()
    processor = Processor(settings, fabric())
    changelog = processor.jobs_table.changelog_topic.get_topic_name()

    async def partition_before_and_after() -> tuple[BaseException | None, int]:
        producer = processor.app.producer
        await producer.start()
        try:
            # Made after the producer's first metadata, as a worker's table may be new to a
            # producer that started long before it first writes there.
            await _create([changelog])
            before: BaseException | None = None
            try:
                producer.key_partition(changelog, b"job-1")
            except TypeError as exc:
                before = exc
            await asyncio.wait_for(processor._changelogs_ready(), 60)
            return before, producer.key_partition(changelog, b"job-1").partition
        finally:
            await producer.stop()

    before, partition = asyncio.run(partition_before_and_after())
    assert isinstance(before, TypeError), "the producer knew the new changelog already"
    assert partition in (0, 1)


def test_a_changelog_missing_from_the_cluster_fails_naming_it_instead_of_hanging() -> None:
    """aiokafka waits forever for metadata of a topic the cluster lacks; a worker whose
    changelog was deleted must say so rather than sit silent."""
    require_broker()
    settings = _changelog_settings(wait_s=3.0)
    processor = Processor(settings, fabric())
    missing = processor.jobs_table.changelog_topic.get_topic_name()

    async def ready() -> BaseException:
        producer = processor.app.producer
        await producer.start()
        try:
            with pytest.raises(RuntimeError) as caught:
                await asyncio.wait_for(processor._changelogs_ready(), 60)
            return caught.value
        finally:
            await producer.stop()

    error = asyncio.run(ready())
    assert missing in str(error) and "changelog_wait_s" in str(error)
