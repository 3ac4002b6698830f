"""`railtrace sink`: the faust-streaming app that writes railtrace's topics into the store.

Its own consumer group, so it can run apart from the processing workers: exactly one sink
process on one machine with embedded chDB (which one process may hold), or as many as wanted
against a ClickHouse server. Writes are batched and idempotent (deduplicated blocks, verdicts
versioned by their topic timestamp and offset), so redelivery after a crash doubles nothing.

A batch the store refuses (ClickHouse down, a disk full) is written again after a backoff
until it is taken, its offsets uncommitted meanwhile, and `/healthz` says so once that has
lasted `sink.health_grace_s` (`sink/probes.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from faust.exceptions import ConsumerNotStarted
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from railtrace.collectors.hosts import nodeevents
from railtrace.kafka import topics
from railtrace.kafka.faustapp import faust_app, topic_of
from railtrace.probes.health import Health
from railtrace.settings import Settings
from railtrace.sink import probes
from railtrace.store import Store
from railtrace.streams import wire
from railtrace.streams.records import (
    CablingEvent,
    DeadLetter,
    JobFact,
    LinkEvent,
    NodeEvent,
    Verdict,
)

log = logging.getLogger(__name__)
#: Backoff between writes of a batch the store refused.
RETRY_FIRST_DELAY_S = 1.0
RETRY_MAX_DELAY_S = 30.0


def _version(message: Any) -> int:
    """Order of a job's verdicts: the record's timestamp (ms) with its offset below it."""
    return int(int(message.timestamp * 1000) * 1_000_000 + message.offset % 1_000_000)


class Sink:
    """The sink's app: one agent per topic, each writing its batches into `store`."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.app = faust_app(settings, f"{settings.worker.app_id}-sink")
        self.written: dict[str, int] = {}
        # (topic, partition) -> the first offset not yet in the store
        self._stored_upto: dict[tuple[str, int], int] = {}
        self._topics: set[str] = set()
        # For /healthz: since when (monotonic) each agent's writes have been failing (by its
        # topic; one table refused must not hide behind the others' writes), and since when
        # the group has given this sink no partition of its topics (None: it holds some).
        self.failing_since: dict[str, float] = {}
        self.unassigned_since: float | None = time.monotonic()
        self.held = 0
        self.write_failures = 0
        batch, within = settings.worker.batch_max, settings.worker.batch_within_s
        for spec, handler in (
            (topics.LINK_SAMPLES, self._samples),
            (topics.LINK_EVENTS, self._events),
            (topics.CABLING_EVENTS, self._cabling),
            (topics.RAW_NODE_EVENTS, self._node_events),
            (topics.JOB_FACTS, self._facts),
            (topics.VERDICTS, self._verdicts),
            (topics.DEAD_LETTERS, self._dead_letters),
        ):
            topic = topic_of(self.app, settings, spec)
            self._topics.add(topic.get_topic_name())
            self.app.agent(topic, name=f"sink-{spec.suffix}")(
                self._agent(spec.suffix, handler, batch, within)
            )
        self.app.on_partitions_assigned.connect(cast(Any, self._on_assigned))

    def _agent(
        self, name: str, handler: Callable[[Sequence[Any]], None], batch: int, within: float
    ) -> Any:
        async def sink(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                await self._write(name, handler, events)
                for event in events:
                    msg = event.message
                    self._stored_upto[(msg.topic, msg.partition)] = msg.offset + 1

        return sink

    async def _write(
        self, name: str, handler: Callable[[Sequence[Any]], None], events: Sequence[Any]
    ) -> None:
        """Write one batch of agent `name`, again and again until the store takes it:
        stopping the agent would lose the batch, and skipping it would commit offsets of rows
        never stored."""
        delay = RETRY_FIRST_DELAY_S
        while True:
            try:
                handler(events)
            except Exception as exc:  # whatever the store raises: its driver's or the OS's
                self.write_failures += 1
                self.failing_since.setdefault(name, time.monotonic())
                log.error(
                    "store write failed; writing the batch again",
                    extra={"topic": name, "reason": repr(exc), "retry_in_s": delay},
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_DELAY_S)
            else:
                self.failing_since.pop(name, None)
                return

    async def _on_assigned(self, sender: Any, assigned: set[Any], **_: Any) -> None:
        self.held = sum(1 for tp in assigned if tp.topic in self._topics)
        if self.held:
            self.unassigned_since = None
        elif self.unassigned_since is None:
            self.unassigned_since = time.monotonic()

    def health(self) -> Health:
        failing = min(self.failing_since.values(), default=None)
        readings = probes.Readings(time.monotonic(), failing, self.unassigned_since)
        return probes.assess(readings, self.settings.sink.health_grace_s)

    def metrics(self) -> CollectorRegistry:
        """A registry reading the sink's counters at each scrape."""
        return probes.registry(self.families)

    def families(self) -> list[Metric]:
        """The sink's metric families as they stand now; the API of a `sink --serve` process
        serves them too."""
        figures = probes.Figures(self.written_rows(), self.lag(), self.write_failures, self.held)
        return list(probes.families(figures, self.health()))

    def written_rows(self) -> dict[str, int]:
        return dict(self.written)

    def lag(self) -> dict[str, int]:
        """Messages on each topic this process owns but has not stored yet: how far the store
        is behind Kafka. A partition not read from yet counts from the start of its log."""
        consumer = self.app.consumer
        try:
            assigned = consumer.assignment()
        except ConsumerNotStarted:  # scraped before the app started: nothing read yet
            return {}
        behind: dict[str, int] = {}
        for tp in assigned:
            if tp.topic not in self._topics:  # Faust's own (the assignor's leader topic)
                continue
            try:
                end = consumer.highwater(tp)
            except (KeyError, AttributeError):  # not fetched from yet: no highwater known
                continue
            if end is None:
                continue
            done = self._stored_upto.get((tp.topic, tp.partition), 0)
            behind[tp.topic] = behind.get(tp.topic, 0) + max(0, end - done)
        return behind

    def _count(self, name: str, n: int) -> None:
        self.written[name] = self.written.get(name, 0) + n

    def _decode(
        self, event: Any, decode: Callable[[bytes], list[Any]], what: str = "sink"
    ) -> list[Any]:
        """The records of one message; one that does not decode (WireError or any other
        ValueError) is stored as a dead letter and the rest of its batch still lands."""
        try:
            return decode(event.value or b"")
        except ValueError as exc:
            self.store.write_dead_letters(
                [DeadLetter(event.message.topic, f"{what}: {exc}", event.value or b"")]
            )
            self._count("dead_letters", 1)
            return []

    def _samples(self, events: Sequence[Any]) -> None:
        rows = [row for e in events for row in self._decode(e, wire.decode_samples)]
        self.store.write_link_samples(rows)
        self._count("link_samples", len(rows))

    def _events(self, events: Sequence[Any]) -> None:
        rows = [
            (r, (e.key or b"").decode())
            for e in events
            for r in self._decode(e, wire.decode_records)
            if isinstance(r, LinkEvent)
        ]
        self.store.write_link_events(rows)
        self._count("link_events", len(rows))

    def _cabling(self, events: Sequence[Any]) -> None:
        rows = [
            r
            for e in events
            for r in self._decode(e, wire.decode_records)
            if isinstance(r, CablingEvent)
        ]
        self.store.write_cabling_events(rows)
        self._count("cabling_events", len(rows))

    def _node_events(self, events: Sequence[Any]) -> None:
        """Node events come straight from the Xid collectors (the quarantine decision is
        theirs), in their own format."""
        rows: list[NodeEvent] = [
            r for e in events for r in self._decode(e, _node_event, "node event")
        ]
        self.store.write_node_events(rows)
        self._count("node_events", len(rows))

    def _facts(self, events: Sequence[Any]) -> None:
        rows: list[JobFact] = [r for e in events for r in self._decode(e, wire.decode_records)]
        self.store.write_job_facts(rows)
        self._count("job_facts", len(rows))

    def _verdicts(self, events: Sequence[Any]) -> None:
        rows: list[Verdict] = []
        versions: list[int] = []
        for e in events:
            for r in self._decode(e, wire.decode_records):
                if isinstance(r, Verdict):
                    rows.append(r)
                    versions.append(_version(e.message))
        self.store.write_verdicts(rows, versions)
        self._count("verdicts", len(rows))

    def _dead_letters(self, events: Sequence[Any]) -> None:
        rows = []
        for e in events:
            try:
                d = wire.decode_dead_letter(e.value or b"")
            except wire.WireError as exc:
                rows.append(DeadLetter(e.message.topic, f"unreadable dead letter: {exc}"))
                continue
            rows.append(
                DeadLetter(
                    d["topic"],
                    d["reason"],
                    d.get("value") or b"",
                    extra={"partition": str(d["partition"]), "offset": str(d["offset"])},
                )
            )
        self.store.write_dead_letters(rows)
        self._count("dead_letters", len(rows))


def _node_event(data: bytes) -> list[NodeEvent]:
    return [nodeevents.to_record(nodeevents.decode(data))]
