"""The telemetry stage of `railtrace worker`: raw gNMI and SNMP in, link samples and link events
out, consumed in batches straight from aiokafka.

Why not a Faust agent like the rest of the worker: measured on the 2-core test machine, Faust's
per-event stream path alone (an agent that only counts) tops out near 15,000 messages/s, while
aiokafka's batch fetch hands over 800,000/s. The 288-node design sends 13,056 port-samples a
second and one worker must sustain twice that. Logs and verdicts are a few hundred messages a
second and stay in Faust.

State is kept the way a Faust table keeps it, made cheaper: a Normalizer per device in memory,
checkpointed every `worker.checkpoint_every_s` into a compacted topic (keyed by device, in the
partition number of the device's raw messages), and only then are the raw offsets committed.
Each checkpoint carries `upto`, the first raw offset its state has not seen, so a worker that
restarts from an older commit skips what the state already holds and redoes the rest, which
gives the same outputs again (the store and the correlator deduplicate them). The fold itself,
free of Kafka, is `device_states.py`'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.settings import Settings
from railtrace.streams import wire
from railtrace.topology.fabric import PortLinks
from railtrace.topology.lldp import PlanIndex
from railtrace.worker.device_states import BatchOutput, DeviceStates, decode_counts

log = logging.getLogger(__name__)
#: Backoff between restarts after a Kafka failure, reset once a run has lasted a while.
RESTART_FIRST_DELAY_S = 1.0
RESTART_MAX_DELAY_S = 30.0
RESTART_RESET_AFTER_S = 60.0
#: Longest stretch of folding without handing the event loop back. The consumer's heartbeats
#: run on the same loop: a 2,000-message batch folded in one go took 14 s on a loaded
#: machine, past the 10 s session timeout, and the group dropped the stage, again and again.
YIELD_EVERY_S = 0.05


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, stage: TelemetryStage) -> None:
        self.stage = stage

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.stage.on_revoked(list(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.stage.on_assigned(list(assigned))


class TelemetryStage:
    """Consumes the raw telemetry topics in group `<app_id>-telemetry` and sends link samples,
    link events and dead letters."""

    def __init__(self, settings: Settings, link_id: PortLinks, plan: PlanIndex) -> None:
        self.settings = settings
        prefix = settings.kafka.topic_prefix
        self.kinds = {
            topics.name(prefix, topics.RAW_GNMI): "gnmi",
            topics.name(prefix, topics.RAW_SNMP): "snmp",
        }
        self.raw_gnmi = topics.name(prefix, topics.RAW_GNMI)
        self.samples_topic = topics.name(prefix, topics.LINK_SAMPLES)
        self.events_topic = topics.name(prefix, topics.LINK_EVENTS)
        self.cabling_topic = topics.name(prefix, topics.CABLING_EVENTS)
        self.dead_topic = topics.name(prefix, topics.DEAD_LETTERS)
        self.state_topic = topics.name(prefix, topics.NORMALIZER_STATE)
        self.group = f"{settings.worker.app_id}-telemetry"
        self.link_id = link_id
        self.plan = plan
        self.devices: DeviceStates | None = None
        self.positions: dict[TopicPartition, int] = {}
        self.counters: dict[str, int] = defaultdict(int)
        self._lock = asyncio.Lock()
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._last_checkpoint = time.monotonic()
        # For /healthz (worker/probes.py): since when (monotonic) the stage has been failing
        # with no whole cycle since, and since when it has held no raw partition; None
        # otherwise.
        self.failing_since: float | None = None
        self.held: set[TopicPartition] = set()
        self.unassigned_since: float | None = time.monotonic()

    async def run(self) -> None:
        """Consume until cancelled; a cancelled stage checkpoints and commits before it stops.

        A Kafka failure that outlasts the client's own retries (a broker restart taking
        longer than the request timeout) restarts the stage from its last checkpoint rather
        than crash the worker. The failed batch's outputs may not have reached the broker, so
        the state that produced them must not be saved: it is dropped, and the inputs since
        the checkpoint are read again, which sends those outputs once more."""
        delay = RESTART_FIRST_DELAY_S
        while True:
            started = time.monotonic()
            try:
                await self._run_once()
            except (KafkaError, OSError) as exc:
                if time.monotonic() - started > RESTART_RESET_AFTER_S:
                    delay = RESTART_FIRST_DELAY_S
                self.counters["restarts"] += 1
                if self.failing_since is None:
                    self.failing_since = time.monotonic()
                log.error(
                    "telemetry stage failed; restarting from its last checkpoint",
                    extra={"reason": repr(exc), "retry_in_s": delay},
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RESTART_MAX_DELAY_S)

    async def _run_once(self) -> None:
        w, k = self.settings.worker, self.settings.kafka
        self._producer = producer = AIOKafkaProducer(
            **kafka.producer_kwargs(k), linger_ms=5, max_batch_size=1024 * 1024
        )
        self._consumer = consumer = AIOKafkaConsumer(
            group_id=self.group,
            group_instance_id=w.instance_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=int(w.session_timeout_s * 1000),
            heartbeat_interval_ms=int(min(3.0, w.session_timeout_s / 3) * 1000),
            max_partition_fetch_bytes=4 * 1024 * 1024,
            **kafka.client_kwargs(k),
        )
        self.devices = None
        self.positions.clear()
        cancelled = False
        try:
            await producer.start()
            partitions = await producer.partitions_for(self.samples_topic)
            self.devices = DeviceStates(
                self.link_id,
                len(partitions),
                self.plan,
                w.lldp_settle_s,
                self.settings.attribution.health,
            )
            consumer.subscribe(list(self.kinds), listener=_Rebalance(self))
            await consumer.start()
            log.info("telemetry stage started", extra={"group": self.group})
            while True:
                await self._cycle()
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            try:
                if cancelled:
                    async with self._lock:
                        await self._checkpoint()
                else:
                    # Nothing of a failed run may be saved, not even by the revocation
                    # that stopping the consumer may bring.
                    self.devices = None
                    self.positions.clear()
            finally:
                self._hold(set())
                await consumer.stop()
                await producer.stop()

    async def _cycle(self) -> None:
        assert self._consumer is not None
        w = self.settings.worker
        async with self._lock:
            batches = await self._consumer.getmany(
                timeout_ms=int(w.batch_within_s * 1000), max_records=w.batch_max
            )
            if batches:
                await self._process(batches)
            # Checkpoint on the clock, and as soon as the stage has caught up, so an idle
            # worker has committed everything it read.
            due = time.monotonic() - self._last_checkpoint >= w.checkpoint_every_s
            if self.positions and (due or not batches):
                await self._checkpoint()
            # A whole cycle went through: fetched, sent and, when due, checkpointed.
            self.failing_since = None

    async def _process(self, batches: dict[TopicPartition, list[Any]]) -> None:
        assert self._consumer is not None and self.devices is not None
        assigned = self._consumer.assignment()
        out = BatchOutput()
        held = time.monotonic()
        for tp, records in batches.items():
            if tp not in assigned or not records:  # fetched just before a revocation
                continue
            kind = self.kinds[tp.topic]
            for record in records:
                self.devices.fold(kind, record, out)
                if time.monotonic() - held >= YIELD_EVERY_S:
                    await asyncio.sleep(0)
                    held = time.monotonic()
            self.positions[tp] = records[-1].offset + 1
        await self._send(out)
        self.counters["values"] += out.values

    async def _send(self, out: BatchOutput) -> None:
        """Send a batch's outputs and wait until the broker has all of them: a checkpoint
        taken ahead of lost outputs would make their inputs look done."""
        p = self._producer
        assert p is not None
        futures = [
            await p.send(self.samples_topic, wire.encode_samples(rows), partition=part)
            for part, rows in out.samples.items()
        ]
        futures += [
            await p.send(self.events_topic, wire.encode_records(events), key=lid.encode())
            for lid, events in out.events.items()
        ]
        futures += [
            await p.send(self.cabling_topic, wire.encode_records(events), key=device.encode())
            for device, events in out.cabling.items()
            if events
        ]
        self.counters["cabling_events"] += sum(len(e) for e in out.cabling.values())
        for record, reason in out.dead:
            self.counters["dead_letters"] += 1
            log.warning(
                "dead letter",
                extra={"topic": record.topic, "offset": record.offset, "reason": reason},
            )
            futures.append(
                await p.send(
                    self.dead_topic,
                    wire.encode_dead_letter(
                        record.topic,
                        record.partition,
                        record.offset,
                        record.key,
                        record.value,
                        reason,
                    ),
                    key=record.topic.encode(),
                )
            )
        for key, value in out.rekey:
            self.counters["rekeyed"] += 1
            futures.append(await p.send(self.raw_gnmi, value, key=key))
        if futures:
            await asyncio.gather(*futures)

    async def _checkpoint(self) -> None:
        """Save every changed device, then commit the offsets that state covers."""
        assert self._consumer is not None and self._producer is not None
        if self.devices is None:
            return
        p = self._producer
        futures = [
            await p.send(self.state_topic, value, key=key, partition=partition)
            for key, partition, value in self.devices.checkpoint()
        ]
        if futures:
            await asyncio.gather(*futures)
        if self.positions:
            await self._consumer.commit(dict(self.positions))
            self.counters["checkpoints"] += 1
            log.info(
                "telemetry checkpoint",
                extra={
                    "devices": len(futures),
                    "committed": {
                        f"{tp.topic}[{tp.partition}]": o for tp, o in self.positions.items()
                    },
                    "redelivered_skipped": self.devices.redelivered,
                    "decoded": decode_counts(self.devices.decoded),
                },
            )
        self.positions.clear()
        self._last_checkpoint = time.monotonic()

    def _hold(self, partitions: set[TopicPartition]) -> None:
        """Note the raw partitions the stage now holds, and since when it holds none."""
        self.held = partitions
        if partitions:
            self.unassigned_since = None
        elif self.unassigned_since is None:
            self.unassigned_since = time.monotonic()

    async def on_revoked(self, revoked: list[TopicPartition]) -> None:
        self._hold(self.held - set(revoked))
        log.info(
            "telemetry partitions revoked",
            extra={"partitions": sorted(f"{tp.topic}[{tp.partition}]" for tp in revoked)},
        )
        async with self._lock:
            await self._checkpoint()
            if self.devices is not None:
                self.devices.drop_partitions(tp.partition for tp in revoked)

    async def on_assigned(self, assigned: list[TopicPartition]) -> None:
        """Read back the checkpoints of the partitions this worker now owns."""
        self._hold(set(assigned))
        if self.devices is None or not assigned:
            return
        wanted = {tp.partition for tp in assigned}
        kinds = {(self.kinds[tp.topic], tp.partition) for tp in assigned}
        started = time.monotonic()
        reader = AIOKafkaConsumer(
            enable_auto_commit=False, **kafka.client_kwargs(self.settings.kafka)
        )
        await reader.start()
        try:
            tps = [TopicPartition(self.state_topic, part) for part in sorted(wanted)]
            reader.assign(tps)
            await reader.seek_to_beginning(*tps)
            ends = await reader.end_offsets(tps)
            saved: dict[bytes, tuple[int, bytes]] = {}
            pending = {tp for tp in tps if ends[tp] > 0}
            while pending:
                for tp, records in (await reader.getmany(timeout_ms=500)).items():
                    for r in records:
                        kind = r.key.split(b":", 1)[0].decode() if r.key else ""
                        if (kind, tp.partition) not in kinds:
                            continue
                        if r.value is None:
                            saved.pop(r.key, None)
                        else:
                            saved[r.key] = (tp.partition, r.value)
                for tp in list(pending):
                    if await reader.position(tp) >= ends[tp]:
                        pending.discard(tp)
        finally:
            await reader.stop()
        self.devices.saved.update(saved)
        log.info(
            "telemetry state restored",
            extra={
                "partitions": sorted(wanted),
                "devices": len(saved),
                "took_s": round(time.monotonic() - started, 3),
            },
        )
