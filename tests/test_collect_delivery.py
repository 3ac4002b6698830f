"""Delivery of collected messages through the disk spool to the real broker, including while
the broker is stopped under load."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from collections import defaultdict
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import gates
from kafka_support import (
    BOOTSTRAP,
    broker_is_ours,
    read_records,
    read_topic,
    require_broker,
    run_kafka_sh,
)

from railtrace import kafka
from railtrace.collectors.delivery import DEAD_LETTER_BYTES, Delivery
from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import Spool
from railtrace.kafka import topics
from railtrace.settings import KafkaSettings
from railtrace.streams import wire

T = TypeVar("T")

#: The collected messages' times: this minute, as a live collector's are. (Stamped in 1970,
#: the broker deleted them at its next retention pass, at times before the test read them.)
NOW_NS = time.time_ns()


def _message(n: int) -> Outgoing:
    key = f"leaf{n % 5}".encode()
    ts_ns = NOW_NS + n * 10**6
    if n % 50 == 0:
        return Outgoing("snmp", key, b"trap %d" % n, state_change=True, ts_ns=ts_ns)
    return Outgoing("gnmi", key, b"sample %d" % n, ts_ns=ts_ns)


async def _received(settings: KafkaSettings) -> dict[tuple[str, bytes], list[bytes]]:
    """Every message on the raw gNMI and SNMP topics, by (stream, key), in partition order."""
    out: dict[tuple[str, bytes], list[bytes]] = defaultdict(list)
    for stream, spec in (("gnmi", topics.RAW_GNMI), ("snmp", topics.RAW_SNMP)):
        for key, value in await read_topic(topics.name(settings.topic_prefix, spec)):
            out[(stream, key)].append(value)
    return out


def _expected(sent: list[Outgoing]) -> dict[tuple[str, bytes], list[bytes]]:
    out: dict[tuple[str, bytes], list[bytes]] = defaultdict(list)
    for m in sent:
        out[(m.stream, m.key)].append(m.value)
    return out


def _without_repeats(values: list[bytes]) -> list[bytes]:
    """At-least-once: a batch resent after a lost acknowledgement repeats a run of values."""
    seen: set[bytes] = set()
    return [v for v in values if not (v in seen or seen.add(v))]


#: How long a cancelled Delivery.run() may take to end: its producer's stop is bounded by
#: STOP_TIMEOUT_S, so more than this is a collector that would not shut down.
STOP_GRACE_S = 60.0


async def _stopped(task: asyncio.Task[None]) -> None:
    """Cancel the drain task and fail, with where it waits, if it does not end in time."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_GRACE_S)
    if not done:
        where = io.StringIO()
        for waiting in asyncio.all_tasks():  # wait_for's inner coroutines are tasks of their own
            print(f"--- {waiting!r}", file=where)
            waiting.print_stack(file=where)
        raise AssertionError(
            f"Delivery.run() still running {STOP_GRACE_S} s after cancel:\n{where.getvalue()}"
        )
    if not task.cancelled() and task.exception() is not None:
        raise AssertionError(f"Delivery.run() failed: {task.exception()!r}")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run without its wait for every task at the end: a task that ignores its
    cancellation would hang the test there instead of letting it fail."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=STOP_GRACE_S))
        loop.close()


async def _until(check: object, timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.1)


def test_collected_messages_reach_their_raw_topics_in_order(tmp_path: Path) -> None:
    require_broker()
    settings = KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"d{uuid.uuid4().hex[:8]}")

    async def go() -> dict[tuple[str, bytes], list[bytes]]:
        await kafka.ensure_topics(settings)
        delivery = Delivery(settings, Spool(tmp_path / "spool", max_bytes=10**8))
        task = asyncio.create_task(delivery.run())
        try:
            for n in range(3000):
                await delivery(_message(n))
            await _until(delivery.spool.empty, 60)
        finally:
            await _stopped(task)
        return await _received(settings)

    got = _run(go())
    assert got == _expected([_message(n) for n in range(3000)])


def test_a_stopped_broker_costs_spool_space_not_data(tmp_path: Path) -> None:
    require_broker()
    if not broker_is_ours():
        gates.deliberately("RAILTRACE_TEST_KAFKA names a broker that is not ours to stop")
    settings = KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"d{uuid.uuid4().hex[:8]}")
    sent = [_message(n) for n in range(6000)]

    async def go() -> tuple[dict[tuple[str, bytes], list[bytes]], Delivery]:
        await kafka.ensure_topics(settings)
        delivery = Delivery(settings, Spool(tmp_path / "spool", max_bytes=10**8))
        task = asyncio.create_task(delivery.run())
        try:
            for m in sent[:2000]:
                await delivery(m)
            await _until(delivery.spool.empty, 60)
            stopped = await asyncio.to_thread(run_kafka_sh, "stop")
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            for m in sent[2000:]:  # the collector keeps emitting: nothing blocks
                await delivery(m)
                await asyncio.sleep(0)
            await _until(lambda: delivery.counters["send_failures"] > 0, 60)
            assert not delivery.spool.empty()
            resumed = await asyncio.to_thread(run_kafka_sh, "resume")
            assert resumed.returncode == 0, resumed.stdout + resumed.stderr
            await _until(delivery.spool.empty, 120)
        finally:
            await _stopped(task)
        return await _received(settings), delivery

    got, delivery = _run(go())
    assert {k: _without_repeats(v) for k, v in got.items()} == _expected(sent)
    assert delivery.spool.dropped.total() == 0


def test_a_record_older_than_half_its_topics_retention_goes_out_stamped_with_the_send_time(
    tmp_path: Path,
) -> None:
    """Taken with its own time, a record from a long outage's backlog (or a wrong year) would
    be deleted by the broker's next retention pass, maybe before a worker read it."""
    require_broker()
    settings = KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"d{uuid.uuid4().hex[:8]}")
    now_ns = time.time_ns()
    kept_ns = topics.RAW_GNMI.retention_ms * 10**6 // 2
    old = [
        Outgoing("gnmi", b"leaf1", b"from 1970", ts_ns=10**9),
        Outgoing("gnmi", b"leaf1", b"past half the retention", ts_ns=now_ns - kept_ns - 10**9),
    ]
    recent = Outgoing("gnmi", b"leaf1", b"an hour ago", ts_ns=now_ns - 3600 * 10**9)

    async def go() -> tuple[list[Any], Delivery]:
        await kafka.ensure_topics(settings)
        delivery = Delivery(settings, Spool(tmp_path / "spool", max_bytes=10**8))
        task = asyncio.create_task(delivery.run())
        try:
            for m in [*old, recent]:
                await delivery(m)
            await _until(delivery.spool.empty, 60)
        finally:
            await _stopped(task)
        return await read_records(topics.name(settings.topic_prefix, topics.RAW_GNMI)), delivery

    records, delivery = _run(go())
    stamps = {r.value: r.timestamp for r in records}
    assert list(stamps) == [m.value for m in [*old, recent]]
    for m in old:
        assert stamps[m.value] >= now_ns // 10**6 - 1000, m.value
    assert stamps[recent.value] == recent.ts_ns // 10**6  # a recent record keeps its own time
    assert delivery.counters["stamped_now_gnmi"] == len(old)


def test_records_the_broker_refuses_do_not_block_the_ones_behind_them(tmp_path: Path) -> None:
    """A line stamped a week ahead goes out with the send time; a record over the size limit
    becomes a dead letter; everything around them arrives, in order."""
    require_broker()
    settings = KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=f"d{uuid.uuid4().hex[:8]}")
    now_ns = time.time_ns()
    future = Outgoing("gnmi", b"leaf1", b"from the future", ts_ns=now_ns + 7 * 86_400 * 10**9)
    huge = Outgoing("gnmi", b"leaf1", b"x" * (3 * 1024 * 1024), ts_ns=now_ns)
    good = [Outgoing("gnmi", b"leaf1", b"good %d" % n, ts_ns=now_ns + n) for n in range(300)]
    sent = [*good[:100], future, *good[100:200], huge, *good[200:]]

    async def go() -> tuple[dict[tuple[str, bytes], list[bytes]], Delivery, list[Any]]:
        await kafka.ensure_topics(settings)
        delivery = Delivery(settings, Spool(tmp_path / "spool", max_bytes=10**8))
        task = asyncio.create_task(delivery.run())
        try:
            for m in sent:
                await delivery(m)
            await _until(delivery.spool.empty, 60)
        finally:
            await _stopped(task)
        dead = topics.name(settings.topic_prefix, topics.DEAD_LETTERS)
        letters = [value for _, value in await read_topic(dead)]
        return await _received(settings), delivery, letters

    got, delivery, letters = _run(go())
    values = got[("gnmi", b"leaf1")]
    assert [v for v in values if v.startswith(b"good")] == [m.value for m in good]
    assert values.count(b"from the future") == 1 and huge.value not in values
    assert delivery.counters["retimed_gnmi"] == 1
    assert delivery.counters["refused_gnmi"] == 1
    assert delivery.counters["sent"] == len(sent) - 1
    (letter,) = [wire.decode_dead_letter(v) for v in letters]
    assert letter["topic"] == topics.name(settings.topic_prefix, topics.RAW_GNMI)
    assert "refused by the broker" in letter["reason"]
    assert letter["value"] == huge.value[:DEAD_LETTER_BYTES]
