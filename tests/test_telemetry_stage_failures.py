"""The telemetry stage against a real broker when sending its outputs fails: it must start
again from its last checkpoint and send what the failed batch lost, not save the state that
produced it (which would make those inputs look done) nor stop the worker."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaTimeoutError
from kafka_support import BOOTSTRAP, read_topic, require_broker
from test_telemetry_stage import FABRIC, _stream

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.settings import KafkaSettings, Settings, WorkerSettings
from railtrace.streams import wire
from railtrace.streams.records import LinkEvent, LinkEventKind
from railtrace.topology.fabric import PortLinks
from railtrace.topology.lldp import PlanIndex
from railtrace.worker.device_states import BatchOutput
from railtrace.worker.telemetry_stage import TelemetryStage


class LosesOneBatch(TelemetryStage):
    """A stage whose first send of a batch with link events fails, as a broker that stays
    away past the producer's timeout makes it fail, before anything reached Kafka."""

    failed = False

    async def _send(self, out: BatchOutput) -> None:
        if out.events and not self.failed:
            self.failed = True
            raise KafkaTimeoutError("injected: the broker did not answer in time")
        await super()._send(out)


def _settings() -> Settings:
    tag = uuid.uuid4().hex[:10]
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"t{tag}", partitions=2),
        worker=WorkerSettings(app_id=f"a{tag}", checkpoint_every_s=0.5, batch_within_s=0.1),
    )


async def _events(settings: Settings) -> list[tuple[str, LinkEventKind]]:
    name = topics.name(settings.kafka.topic_prefix, topics.LINK_EVENTS)
    out = []
    for key, value in await read_topic(name):
        for e in wire.decode_records(value):
            if isinstance(e, LinkEvent):
                out.append((key.decode(), e.kind))
    return out


async def _publish_raw(settings: Settings) -> None:
    """The fabric's raw gNMI stream onto the broker, before a stage reads it."""
    await kafka.ensure_topics(settings.kafka)
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP)
    await producer.start()
    try:
        raw = topics.name(settings.kafka.topic_prefix, topics.RAW_GNMI)
        for r in _stream(PortLinks(FABRIC)):
            await producer.send(raw, r.value, key=r.key, partition=r.partition)
        await producer.flush()
    finally:
        await producer.stop()


async def _run(settings: Settings, stage: TelemetryStage, want: int) -> list[Any]:
    await _publish_raw(settings)
    task = asyncio.create_task(stage.run())
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert not task.done(), f"the stage stopped: {task.exception()!r}"
            got = await _events(settings)
            if len(got) >= want:
                return got
            await asyncio.sleep(0.5)
        return await _events(settings)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_a_batch_whose_outputs_failed_to_send_is_redone_after_a_restart() -> None:
    require_broker()
    plain = _settings()
    expected = asyncio.run(
        _run(plain, TelemetryStage(plain, PortLinks(FABRIC), PlanIndex.of_fabric(FABRIC)), 2)
    )
    kinds = {kind for _, kind in expected}
    assert {LinkEventKind.DOWN, LinkEventKind.ERROR_BURST} <= kinds, expected

    settings = _settings()
    stage = LosesOneBatch(settings, PortLinks(FABRIC), PlanIndex.of_fabric(FABRIC))
    got = asyncio.run(_run(settings, stage, len(expected)))
    assert stage.failed and stage.counters["restarts"] == 1
    assert sorted(set(got)) == sorted(set(expected))


class FailsTwice(TelemetryStage):
    """A stage whose first two sends fail, each failing its run, then sends as it should."""

    failures = 0

    async def _send(self, out: BatchOutput) -> None:
        if self.failures < 2:
            self.failures += 1
            raise KafkaTimeoutError("injected: the broker did not answer in time")
        await super()._send(out)


def test_a_stage_failing_is_reported_from_its_first_failure_until_a_whole_cycle() -> None:
    """What /healthz reads (worker/probes.py): failing from the first failure on, not from
    the latest restart, which would hide a stage that fails over and over; mended once a
    cycle went through; and the raw partitions it holds."""
    require_broker()
    settings = _settings()
    stage = FailsTwice(settings, PortLinks(FABRIC), PlanIndex.of_fabric(FABRIC))
    seen: list[float | None] = []

    async def watch() -> None:
        await _publish_raw(settings)
        assert stage.unassigned_since is not None and not stage.held
        task = asyncio.create_task(stage.run())
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                assert not task.done(), f"the stage stopped: {task.exception()!r}"
                restarts = stage.counters["restarts"]
                if restarts and len(seen) < restarts:
                    seen.append(stage.failing_since)
                if restarts == 2 and stage.failing_since is None and stage.held:
                    break
                await asyncio.sleep(0.05)
            assert stage.failing_since is None, stage.counters
            # both raw telemetry topics, 2 partitions each, and so not unassigned
            assert len(stage.held) == 4 and stage.unassigned_since is None
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert not stage.held and stage.unassigned_since is not None

    asyncio.run(watch())
    assert len(seen) == 2 and seen[0] is not None and seen[1] == seen[0], seen
