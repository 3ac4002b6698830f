"""`railtrace sink`: the faust-streaming app that writes railtrace's topics into the store.

Its own consumer group, so it can run apart from the processing workers: exactly one sink
process on one machine with embedded chDB (which one process may hold), or as many as wanted
against a ClickHouse server. Writes are batched and idempotent (deduplicated blocks, verdicts
versioned by their topic timestamp and offset), so redelivery after a crash doubles nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from railtrace.collectors.hosts import nodeevents
from railtrace.kafka import topics
from railtrace.kafka.faustapp import faust_app, topic_of
from railtrace.settings import Settings
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


def _version(message: Any) -> int:
    """Order of a job's verdicts: the record's timestamp (ms) with its offset below it."""
    return int(int(message.timestamp * 1000) * 1_000_000 + message.offset % 1_000_000)


class Sink:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.app = faust_app(settings, f"{settings.worker.app_id}-sink")
        self.written: dict[str, int] = {}
        # (topic, partition) -> the first offset not yet in the store
        self._stored_upto: dict[tuple[str, int], int] = {}
        self._topics: set[str] = set()
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
            self.app.agent(topic, name=f"sink-{spec.suffix}")(self._agent(handler, batch, within))

    def _agent(self, handler: Callable[[Sequence[Any]], None], batch: int, within: float) -> Any:
        async def sink(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                handler(events)
                for event in events:
                    msg = event.message
                    self._stored_upto[(msg.topic, msg.partition)] = msg.offset + 1

        return sink

    def written_rows(self) -> dict[str, int]:
        return dict(self.written)

    def lag(self) -> dict[str, int]:
        """Messages on each topic this process owns but has not stored yet: how far the store
        is behind Kafka. A partition not read from yet counts from the start of its log."""
        consumer = self.app.consumer
        behind: dict[str, int] = {}
        for tp in consumer.assignment():
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
