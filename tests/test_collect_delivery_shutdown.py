"""A collector shuts down in bounded time whatever its Kafka client does on the way out.

The real broker's part of this (a broker stopped under the collector, and records the broker
refuses) is in test_collect_delivery.py; here the client is a stand-in that never finishes
its sends and ignores the cancellation of its stop, which no real broker can be made to do on
demand, and which is what a drain task that did not stop for ten minutes in a loaded run
looked like from outside."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from railtrace.collectors import delivery as delivery_module
from railtrace.collectors.delivery import Delivery
from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import Spool
from railtrace.settings import KafkaSettings


class StuckProducer:
    """Connects, takes sends that are never acknowledged, and will not stop."""

    stops = 0

    def __init__(self, **_: Any) -> None:
        pass

    async def start(self) -> None:
        return None

    async def send(self, *_: Any, **__: Any) -> asyncio.Future[None]:
        return asyncio.get_running_loop().create_future()

    async def stop(self) -> None:
        StuckProducer.stops += 1
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # as a client that swallows its cancellation would


async def _no_topics(_: Any) -> None:
    return None


def test_a_producer_that_will_not_stop_does_not_hold_the_collectors_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery_module, "AIOKafkaProducer", StuckProducer)
    monkeypatch.setattr(delivery_module.kafka, "ensure_topics", _no_topics)
    monkeypatch.setattr(delivery_module, "SEND_TIMEOUT_S", 0.2)
    monkeypatch.setattr(delivery_module, "STOP_TIMEOUT_S", 0.2)
    monkeypatch.setattr(delivery_module, "BACKOFF_S", (0.05, 0.1))
    StuckProducer.stops = 0

    async def go() -> tuple[bool, Delivery]:
        d = Delivery(KafkaSettings(topic_prefix="t"), Spool(tmp_path / "spool", max_bytes=10**7))
        task = asyncio.create_task(d.run())
        await d(Outgoing("gnmi", b"leaf1", b"sample", ts_ns=1))
        # Unacknowledged sends time out, the producer is dropped (its stop left running),
        # and the drain tries again: a few rounds.
        deadline = asyncio.get_running_loop().time() + 10
        while d.counters["send_failures"] < 3:
            assert asyncio.get_running_loop().time() < deadline, (
                "the drain stopped trying again: held by a producer that will not stop"
            )
            await asyncio.sleep(0.05)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        return bool(done), d

    loop = asyncio.new_event_loop()
    try:
        stopped, d = loop.run_until_complete(go())
    finally:
        loop.close()  # the stuck stops are left pending: that is the stand-in's nature
    assert stopped, "Delivery.run() did not end within 5 s of its cancellation"
    assert StuckProducer.stops >= 3
    assert not d.spool.empty()  # nothing acknowledged, nothing lost: still spooled


def test_a_cancellation_that_meets_a_failing_send_still_ends_the_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker goes away as the collector shuts down: its send fails in the same turn of
    the loop as the drain task is cancelled. `asyncio.wait_for` (Python 3.11) then hands the
    send's error to the drain and drops the cancellation, and the drain took it for one more
    broker failure and went on retrying, so the collector never stopped (seen in a loaded run
    of the stopped-broker test: Delivery.run() still running 60 s after its cancel)."""
    from aiokafka.errors import KafkaConnectionError

    monkeypatch.setattr(delivery_module, "BACKOFF_S", (0.05, 0.1))
    failing: asyncio.Future[None] | None = None

    async def go() -> bool:
        nonlocal failing
        d = Delivery(KafkaSettings(topic_prefix="t"), Spool(tmp_path / "spool", max_bytes=10**7))

        async def send(_batch: Any) -> None:
            nonlocal failing
            failing = asyncio.get_running_loop().create_future()
            await failing

        monkeypatch.setattr(d, "_send", send)
        task = asyncio.create_task(d.run())
        await d(Outgoing("gnmi", b"leaf1", b"sample", ts_ns=1))
        while failing is None:
            await asyncio.sleep(0.01)
        failing.set_exception(KafkaConnectionError("broker went away"))
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        return bool(done) and task.cancelled()

    assert asyncio.run(go()), "Delivery.run() went on after its cancellation"
