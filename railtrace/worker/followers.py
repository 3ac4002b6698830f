"""What every worker reads whole, outside any consumer group: the link-events topic (into the
correlator's link history) and the cabling-events topic (the fabric the correlator judges on,
as LLDP shows it cabled). Both run as app tasks of the processing app (`processor.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from aiokafka import AIOKafkaConsumer

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.settings import Settings
from railtrace.streams import wire
from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.history import LinkHistory
from railtrace.streams.records import CablingEvent, LinkEvent
from railtrace.topology.asbuilt import cabled_fabric
from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.lldp import CablingDifference

log = logging.getLogger(__name__)
#: How far behind the newest link event the link history keeps events.
PRUNE_HORIZON_NS = 3600 * 1_000_000_000


class TopicFollowers:
    """Follows the link and cabling events into `correlator` and its `history`; the fabric as
    planned is `fabric`, which the cabling differences are applied to."""

    def __init__(
        self, settings: Settings, fabric: Fabric, correlator: Correlator, history: LinkHistory
    ) -> None:
        self.settings = settings
        self.fabric = fabric
        self.correlator = correlator
        self.history = history
        # The newest link event's time: event time moves on for jobs whose logs went silent.
        self.newest_link_event_ns = 0
        # The plan, and the ports LLDP shows cabled unlike it (latest cabling event per port).
        self.plan = CablePlan([Cable(link.a, link.b) for link in fabric.links.values()])
        self.cabling: dict[Endpoint, CablingEvent] = {}

    async def _whole_topic_records(
        self, spec: topics.TopicSpec
    ) -> AsyncIterator[tuple[int, list[tuple[bytes | None, list[Any]]]]]:
        """Every partition of `spec` from its start, outside any group (what each worker must
        know whole: link events, cabling events): per poll, how many messages came and each
        decodable one's key and records. A message that does not decode is logged and
        skipped: it must not stop the worker from following the rest."""
        consumer = AIOKafkaConsumer(
            topics.name(self.settings.kafka.topic_prefix, spec),
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **kafka.client_kwargs(self.settings.kafka),
        )
        await consumer.start()
        try:
            while True:
                batches = await consumer.getmany(timeout_ms=500)
                messages = 0
                decoded: list[tuple[bytes | None, list[Any]]] = []
                for records in batches.values():
                    messages += len(records)
                    for record in records:
                        try:
                            decoded.append((record.key, wire.decode_records(record.value or b"")))
                        except wire.WireError as exc:
                            log.warning(
                                "bad record on a followed topic",
                                extra={"topic": spec.suffix, "reason": str(exc)},
                            )
                yield messages, decoded
        finally:
            await consumer.stop()

    async def link_events(self) -> None:
        """Every worker reads the whole link-events topic: anomalies are few, and a job's stall
        must meet the anomalies of links whose telemetry other partitions normalised."""
        newest = 0
        followed = reported = 0
        last_report = time.monotonic()
        async for messages, decoded in self._whole_topic_records(topics.LINK_EVENTS):
            followed += messages
            for key, events in decoded:
                for e in events:
                    if isinstance(e, LinkEvent) and (lid := self._link_of(e, key)):
                        self.history.add(lid, e)
                        newest = max(newest, e.ts_ns)
            if newest:
                self.history.prune(newest - PRUNE_HORIZON_NS)
                self.newest_link_event_ns = newest
            if followed != reported and time.monotonic() - last_report >= 5:
                # What the correlator has to judge with: a verdict missing a link's event
                # is explained here or in the telemetry stage's checkpoints.
                log.info(
                    "link events followed",
                    extra={"messages": followed, "newest_ns": newest},
                )
                reported, last_report = followed, time.monotonic()

    def _link_of(self, e: LinkEvent, key: bytes | None) -> str | None:
        """The link an event's port is on as cabled: the telemetry stage keys it by the plan's
        link, which differs at a miswired port."""
        lid = self.correlator.fabric.link_at.get(Endpoint(e.device, e.interface))
        return lid or (key.decode() if key else None)

    async def cabling_events(self) -> None:
        """Every worker reads the whole cabling-events topic and, when LLDP shows cables
        miswired (or back as planned), judges on the fabric as cabled, as the embedded replay
        does: a job's flows cross other links there, and the cable really on a failed port is
        the one to blame."""
        async for _, decoded in self._whole_topic_records(topics.CABLING_EVENTS):
            changed = False
            for _, events in decoded:
                for e in events:
                    if isinstance(e, CablingEvent):
                        changed |= self._note_cabling(e)
            if changed:
                self._use_cabled_fabric()

    def _note_cabling(self, e: CablingEvent) -> bool:
        """Keep a port's latest miswire; True when what is miswired changed."""
        port = Endpoint(e.device, e.interface)
        before = self.cabling.get(port)
        if e.kind is CablingKind.MISWIRED:
            self.cabling[port] = e
        else:
            self.cabling.pop(port, None)
        after = self.cabling.get(port)
        return (before and (before.planned, before.seen)) != (after and (after.planned, after.seen))

    def _use_cabled_fabric(self) -> None:
        differences = [
            CablingDifference(port, e.kind, e.planned, e.seen)
            for port, e in sorted(self.cabling.items())
        ]
        fabric = cabled_fabric(self.plan, differences, self.fabric) or self.fabric
        self.correlator.use_fabric(fabric)
        self.history.rekey(fabric.link_at)
        log.info("judging on the fabric as cabled", extra={"miswired": sorted(fabric.as_built)})
