"""`railtrace worker`: the faust-streaming app that turns raw topics into link samples, link
events, job facts and verdicts.

Agents (one task each, batches of up to `batch_max` messages):
- gnmi / snmp: decode, then a Normalizer per message key (a switch) -> link samples and events.
- logs: a LogParser per (job, source file) -> job facts -> the job's Correlator -> verdicts.
A background task reads the whole link-events topic (no consumer group) into the correlator's
link history on every worker, and a timer re-judges stalled jobs as anomalies arrive.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

import faust
import orjson
from aiokafka import AIOKafkaConsumer
from faust.transport.drivers.aiokafka import Producer as FaustProducer

from railtrace.settings import Settings
from railtrace.streams import wire
from railtrace.streams.attribution import Correlator, TimeWindow
from railtrace.streams.attribution.history import LinkHistory
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.logs import LogParser
from railtrace.streams.pipeline import Normalizer, Output
from railtrace.streams.records import LinkEvent, LinkSample, Verdict
from railtrace.streams.telemetry import DecodeError, decode_message
from railtrace.streams.telemetry.snmp import decode_snmp
from railtrace.streams.worker import kafka, topics
from railtrace.streams.worker.state import SnapshotCache
from railtrace.topology.fabric import Fabric, PortLinks

log = logging.getLogger(__name__)
PRUNE_HORIZON_NS = 3600 * 1_000_000_000


class _IdempotentProducer(FaustProducer):
    """Faust enables producer idempotence only with transactions; railtrace wants it always
    (acks=all plus idempotence, at-least-once processing)."""

    def _settings_extra(self) -> dict[str, Any]:
        return {"acks": "all", "enable_idempotence": True}


def faust_app(settings: Settings, app_id: str) -> faust.App:
    """A faust.App configured from railtrace's settings (broker, security, timeouts)."""
    k = settings.kafka
    datadir = settings.worker.data_dir / app_id
    datadir.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {
        "broker": "kafka://" + ";".join(k.bootstrap_servers.split(",")),
        "store": "memory://",
        "topic_partitions": k.partitions,
        "topic_replication_factor": k.replication_factor,
        "broker_session_timeout": settings.worker.session_timeout_s,
        "broker_heartbeat_interval": min(3.0, settings.worker.session_timeout_s / 3),
        "producer_acks": -1,
        "consumer_auto_offset_reset": "earliest",
        "web_enabled": False,
        "datadir": str(datadir),
        "table_cleanup_interval": 60.0,
    }
    context = kafka.ssl_context(k)
    if "SASL" in k.security_protocol:
        kwargs["broker_credentials"] = faust.SASLCredentials(
            username=k.sasl_username,
            password=k.sasl_password.get_secret_value() if k.sasl_password else None,
            mechanism=k.sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        kwargs["broker_credentials"] = faust.SSLCredentials(context)
    app = faust.App(app_id, **kwargs)
    app.transport.Producer = _IdempotentProducer  # type: ignore[misc]
    return app


def topic_of(app: faust.App, settings: Settings, spec: topics.TopicSpec) -> faust.TopicT:
    return app.topic(
        topics.name(settings.kafka.topic_prefix, spec),
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=settings.kafka.partitions,
    )


def _table(app: faust.App, settings: Settings, name: str) -> Any:
    return app.Table(
        name,
        default=None,
        partitions=settings.kafka.partitions,
        # bytes key and value types make Faust use its "raw" codec for the table and its
        # changelog (and so for recovery too).
        key_type=bytes,
        value_type=bytes,
        use_partitioner=True,
    )


class Processor:
    """The processing app and the state its agents share, wired from explicit dependencies."""

    def __init__(self, settings: Settings, fabric: Fabric) -> None:
        self.settings = settings
        self.fabric = fabric
        self.app = faust_app(settings, settings.worker.app_id)
        w = settings.attribution
        self.history = LinkHistory()
        self.correlator = Correlator(
            fabric, TimeWindow(lookback_s=w.lookback_s, lookahead_s=w.lookahead_s), self.history
        )
        app = self.app
        self.raw_gnmi = topic_of(app, settings, topics.RAW_GNMI)
        self.raw_snmp = topic_of(app, settings, topics.RAW_SNMP)
        self.raw_logs = topic_of(app, settings, topics.RAW_LOGS)
        self.samples_topic = topic_of(app, settings, topics.LINK_SAMPLES)
        self.events_topic = topic_of(app, settings, topics.LINK_EVENTS)
        self.facts_topic = topic_of(app, settings, topics.JOB_FACTS)
        self.verdicts_topic = topic_of(app, settings, topics.VERDICTS)
        self.dead_topic = topic_of(app, settings, topics.DEAD_LETTERS)
        self.normalizers = {
            name: SnapshotCache(
                _table(app, settings, f"{name}-state"),
                lambda _key: Normalizer(),
                Normalizer.restore,
                Normalizer.snapshot,
            )
            for name in ("gnmi", "snmp")
        }
        self.parsers = SnapshotCache(
            _table(app, settings, "log-parsers"),
            lambda _key: _Parsers(),
            _Parsers.restore,
            _Parsers.snapshot,
        )
        self.views_table = _table(app, settings, "job-views")
        self.counters: dict[str, int] = defaultdict(int)
        self.link_id = PortLinks(fabric)
        batch, within = settings.worker.batch_max, settings.worker.batch_within_s
        app.agent(self.raw_gnmi, name="normalize-gnmi")(
            self._telemetry_agent("gnmi", batch, within)
        )
        app.agent(self.raw_snmp, name="normalize-snmp")(
            self._telemetry_agent("snmp", batch, within)
        )
        app.agent(self.raw_logs, name="parse-logs")(self._logs_agent(batch, within))
        app.task(self._follow_link_events)
        app.timer(settings.worker.reevaluate_every_s)(self._reevaluate)

    # -- helpers ----------------------------------------------------------------------------

    async def _dead(self, event: Any, reason: str) -> None:
        msg = event.message
        self.counters["dead_letters"] += 1
        await self.dead_topic.send(
            key=msg.topic.encode(),
            value=wire.encode_dead_letter(
                msg.topic, msg.partition, msg.offset, msg.key, msg.value, reason
            ),
        )

    async def _send_grouped(
        self, topic: faust.TopicT, groups: dict[str, list[Any]], encode: Any
    ) -> list[Any]:
        """Send one message per key; returns the delivery futures."""
        return [
            await topic.send(key=key.encode(), value=encode(items)) for key, items in groups.items()
        ]

    @staticmethod
    async def _delivered(futures: list[Any]) -> None:
        """Wait until the broker has every output of a batch before its state is saved: state
        saved ahead of lost outputs would make the redelivered inputs look already done."""
        for future in futures:
            await future

    # -- agents -----------------------------------------------------------------------------

    def _telemetry_agent(self, kind: str, batch: int, within: float) -> Any:
        cache = self.normalizers[kind]
        source_topic = self.raw_gnmi if kind == "gnmi" else self.raw_snmp

        async def agent(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                samples: dict[str, list[LinkSample]] = defaultdict(list)
                link_events: dict[str, list[LinkEvent]] = defaultdict(list)
                touched: set[bytes] = set()
                for event in events:
                    value = event.value
                    try:
                        decoded = orjson.loads(value) if isinstance(value, bytes) else None
                        if decoded is None:
                            raise DecodeError("empty message")
                        values = decode_message(decoded) if kind == "gnmi" else decode_snmp(decoded)
                    except (orjson.JSONDecodeError, DecodeError, ValueError) as exc:
                        await self._dead(event, f"{kind}: {exc}")
                        continue
                    if not values:
                        continue
                    key = event.key
                    if not key:  # gnmic without insert-key: give it a home, keyed by switch
                        await source_topic.send(key=values[0].device.encode(), value=value)
                        self.counters["rekeyed"] += 1
                        continue
                    out = Output()
                    normalizer = cache.get(key)
                    for v in values:
                        normalizer.on_telemetry(v, out)
                    touched.add(key)
                    for s in out.samples:
                        samples[
                            self.link_id(s.device, s.interface) or f"{s.device}:{s.interface}"
                        ].append(s)
                    for e in out.events:
                        link_events[
                            self.link_id(e.device, e.interface) or f"{e.device}:{e.interface}"
                        ].append(e)
                    self.counters[f"{kind}_values"] += len(values)
                await self._delivered(
                    await self._send_grouped(self.samples_topic, samples, wire.encode_samples)
                    + await self._send_grouped(self.events_topic, link_events, wire.encode_records)
                )
                cache.save(touched)

        agent.__name__ = f"normalize_{kind}"
        return agent

    def _logs_agent(self, batch: int, within: float) -> Any:
        async def parse_logs(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                facts_out: dict[str, list[Any]] = defaultdict(list)
                verdicts: list[Verdict] = []
                touched: set[bytes] = set()
                for event in events:
                    try:
                        if not isinstance(event.value, bytes):
                            raise wire.WireError("empty message")
                        logs = wire.decode_log_batch(event.value)
                    except wire.WireError as exc:
                        await self._dead(event, f"logs: {exc}")
                        continue
                    key = logs.job_id.encode()
                    self._adopt(key)
                    parser = self.parsers.get(key).parser(logs)
                    for i, line in enumerate(logs.lines):
                        for fact in parser.feed(line, logs.first_line_no + i):
                            facts_out[logs.job_id].append(fact)
                            verdicts.extend(self.correlator.observe(fact))
                    touched.add(key)
                # Healthy jobs' verdicts (ranks, hosts) are refreshed once per batch, not per fact.
                verdicts.extend(self.correlator.reevaluate(k.decode() for k in touched))
                await self._delivered(
                    await self._send_grouped(self.facts_topic, facts_out, wire.encode_records)
                    + await self._send_verdicts(verdicts)
                )
                self.parsers.save(touched)
                for key in touched:
                    view = self.correlator.job_view(key.decode())
                    if view is not None:
                        self.views_table[key] = orjson.dumps(view.snapshot())

        return parse_logs

    def _adopt(self, key: bytes) -> None:
        """Take over a job whose view this worker has only in its recovered table."""
        job_id = key.decode()
        if self.correlator.job_view(job_id) is None:
            saved = self.views_table.get(key)
            if saved:
                self.correlator.adopt(JobView.restore(orjson.loads(saved)))

    async def _send_verdicts(self, verdicts: list[Verdict]) -> list[Any]:
        latest = {v.job_id: v for v in verdicts}
        self.counters["verdicts"] += len(latest)
        return [
            await self.verdicts_topic.send(key=job_id.encode(), value=wire.encode_records([v]))
            for job_id, v in sorted(latest.items())
        ]

    async def _reevaluate(self) -> None:
        for key in list(self.views_table.keys()):
            self._adopt(key)
        await self._delivered(await self._send_verdicts(self.correlator.reevaluate()))

    async def _follow_link_events(self) -> None:
        """Every worker reads the whole link-events topic: anomalies are few, and a job's stall
        must meet the anomalies of links whose telemetry other partitions normalised."""
        consumer = AIOKafkaConsumer(
            topics.name(self.settings.kafka.topic_prefix, topics.LINK_EVENTS),
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **kafka.client_kwargs(self.settings.kafka),
        )
        await consumer.start()
        try:
            newest = 0
            while True:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for record in records:
                        try:
                            events = wire.decode_records(record.value or b"")
                        except wire.WireError as exc:
                            log.warning("bad link-events record", extra={"reason": str(exc)})
                            continue
                        for e in events:
                            if isinstance(e, LinkEvent) and (lid := record.key):
                                self.history.add(lid.decode(), e)
                                newest = max(newest, e.ts_ns)
                if newest:
                    self.history.prune(newest - PRUNE_HORIZON_NS)
        except asyncio.CancelledError:
            raise
        finally:
            await consumer.stop()


class _Parsers:
    """The LogParsers of one job, one per source file."""

    def __init__(self, parsers: dict[str, LogParser] | None = None) -> None:
        self.by_source: dict[str, LogParser] = parsers or {}

    def parser(self, logs: wire.LogBatch) -> LogParser:
        p = self.by_source.get(logs.source)
        if p is None:
            p = self.by_source[logs.source] = LogParser(logs.job_id, logs.source, logs.year)
        return p

    def snapshot(self) -> dict[str, Any]:
        return {"v": 1, "parsers": {s: p.snapshot() for s, p in self.by_source.items()}}

    @classmethod
    def restore(cls, snap: dict[str, Any]) -> _Parsers:
        if snap.get("v") != 1:
            raise ValueError(f"unknown parser-set snapshot version {snap.get('v')!r}")
        return cls({s: LogParser.restore(p) for s, p in snap["parsers"].items()})
