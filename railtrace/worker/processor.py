"""`railtrace worker`: the faust-streaming app that turns raw topics into link samples, link
events, job facts and verdicts.

- The `parse-logs` agent (batches of up to `batch_max` messages): a LogParser per (job, source
  file) -> job facts -> the job's Correlator -> verdicts, with each job's parsers and view in
  one Faust table value (`job_state.py`). It reads the raw scheduler topic too
  (co-partitioned with the logs, both keyed by job): each job's placement, read by the
  replay's scheduler reader, joins its logs' facts.
- The telemetry stage (`telemetry_stage.py`, run as an app task): raw gNMI and SNMP in batches
  straight from aiokafka, a Normalizer per device -> link samples and link events.
- Tasks read the whole link-events and cabling-events topics (no consumer group) into the
  correlator on every worker (`followers.py`), and a timer re-judges stalled jobs as
  anomalies arrive.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import defaultdict
from typing import Any, cast

import faust
import orjson
from prometheus_client import CollectorRegistry

from railtrace.kafka import topics
from railtrace.kafka.faustapp import IdempotentProducer, faust_app, raw_table, topic_of
from railtrace.probes.health import Health
from railtrace.settings import Settings
from railtrace.streams import wire
from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.history import LinkHistory
from railtrace.streams.logs.sources import SourceHosts
from railtrace.streams.records import JobPlacement, Verdict
from railtrace.streams.scheduler import ended_unseen, read_placements, uncabled
from railtrace.topology.fabric import Fabric, PortLinks
from railtrace.topology.lldp import PlanIndex
from railtrace.worker import job_state, probes
from railtrace.worker.followers import TopicFollowers
from railtrace.worker.job_parsers import JobParsers, partition_of
from railtrace.worker.state import SnapshotCache
from railtrace.worker.telemetry_stage import TelemetryStage

log = logging.getLogger(__name__)
RECORDS_PER_MESSAGE = 1000


class Processor:
    """The processing app and the state its agents share, wired from explicit dependencies."""

    def __init__(self, settings: Settings, fabric: Fabric) -> None:
        self.settings = settings
        self.fabric = fabric
        self.app = faust_app(settings, settings.worker.app_id)
        self.history = LinkHistory()
        self.correlator = Correlator(fabric, settings.attribution, self.history)
        self.follow = TopicFollowers(settings, fabric, self.correlator, self.history)
        app = self.app
        self.raw_logs = topic_of(app, settings, topics.RAW_LOGS)
        self.raw_scheduler = topic_of(app, settings, topics.RAW_SCHEDULER)
        # One agent reads a job's log lines and its scheduler records: both are keyed by job
        # and co-partitioned, so the worker that owns a job's logs also learns where it runs.
        self.job_inputs = app.topic(
            self.raw_logs.get_topic_name(),
            self.raw_scheduler.get_topic_name(),
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=settings.kafka.partitions,
        )
        self.facts_topic = topic_of(app, settings, topics.JOB_FACTS)
        self.verdicts_topic = topic_of(app, settings, topics.VERDICTS)
        self.dead_topic = topic_of(app, settings, topics.DEAD_LETTERS)
        # A log file whose lines name no host (`dmesg -T`) belongs to the one its name gives.
        named = SourceHosts(fabric.hosts())
        local = settings.site.zone
        # Each job's parsers and view, one value per job (worker/job_state.py).
        self.jobs_table = raw_table(app, settings, "job-state")
        self.parsers = SnapshotCache(
            self.jobs_table,
            lambda _key: JobParsers(named, local),
            functools.partial(job_state.parsers_of, named=named, local=local),
        )
        # Saved states that held no view (a job no fact has reached yet), by key, as read:
        # the timer would otherwise parse each again on every tick. Compared by identity, so
        # a new value of the key (written, or recovered from the changelog) is read afresh.
        self._viewless: dict[bytes, bytes] = {}
        # The raw-logs partitions assigned to this worker: only their jobs are its own.
        self.owned: set[int] = set()
        # Since when (monotonic) the group has given this worker no raw-logs partition.
        self.logs_unassigned_since: float | None = time.monotonic()
        self.counters: dict[str, int] = defaultdict(int)
        self.telemetry = TelemetryStage(settings, PortLinks(fabric), PlanIndex.of_fabric(fabric))
        batch, within = settings.worker.batch_max, settings.worker.batch_within_s
        app.agent(self.job_inputs, name="parse-logs")(self._logs_agent(batch, within))
        app.task(self.telemetry.run)
        app.task(self.follow.link_events)
        app.task(self.follow.cabling_events)
        app.timer(settings.worker.reevaluate_every_s)(self._reevaluate)
        app.on_partitions_assigned.connect(cast(Any, self._on_assigned))

    # -- helpers ----------------------------------------------------------------------------

    async def _dead(self, event: Any, reason: str, value: bytes | None = None) -> Any:
        """Send a dead letter for `event` (or for `value`, a part of it); returns its delivery
        future, awaited with the batch's outputs."""
        msg = event.message
        self.counters["dead_letters"] += 1
        log.warning(
            "dead letter", extra={"topic": msg.topic, "offset": msg.offset, "reason": reason}
        )
        return await self.dead_topic.send(
            key=msg.topic.encode(),
            value=wire.encode_dead_letter(
                msg.topic,
                msg.partition,
                msg.offset,
                msg.key,
                msg.value if value is None else value,
                reason,
            ),
        )

    async def _send_grouped(
        self, topic: faust.TopicT, groups: dict[str, list[Any]], encode: Any
    ) -> list[Any]:
        """Send each key's records, at most RECORDS_PER_MESSAGE to a message (a large job's
        start-up facts would pass Kafka's 1 MB message limit); returns the delivery futures."""
        return [
            await topic.send(key=key.encode(), value=encode(items[i : i + RECORDS_PER_MESSAGE]))
            for key, items in groups.items()
            for i in range(0, len(items), RECORDS_PER_MESSAGE)
        ]

    @staticmethod
    async def _delivered(futures: list[Any]) -> None:
        """Wait until the broker has every output of a batch before its state is saved: state
        saved ahead of lost outputs would make the redelivered inputs look already done."""
        for future in futures:
            await future

    async def _on_assigned(self, sender: Any, assigned: set[Any], **_: Any) -> None:
        """Let go of the jobs of raw-log partitions this worker no longer owns, once a
        rebalance has settled. Kept, their parsers and views would go stale while another
        worker carries on, and if the partition came back they would be resumed instead of
        the table's newer state. A partition that comes straight back (a broker restart, a
        rebalance that changes nothing for it) keeps its memory, which nobody else moved on
        from, rather than trust a changelog that may still be catching up."""
        name = self.raw_logs.get_topic_name()
        parts = self.settings.kafka.partitions
        kept = {tp.partition for tp in assigned if tp.topic == name}
        self.owned = kept
        if kept:
            self.logs_unassigned_since = None
        elif self.logs_unassigned_since is None:
            self.logs_unassigned_since = time.monotonic()
        keys = [k for k in self.parsers.live_keys() if partition_of(k, parts) not in kept]
        self.parsers.forget(keys)
        for key in [k for k in self._viewless if partition_of(k, parts) not in kept]:
            del self._viewless[key]
        jobs = [j for j in self.correlator.job_ids() if partition_of(j.encode(), parts) not in kept]
        for job_id in jobs:
            self.correlator.drop(job_id)
        if keys or jobs:
            log.info(
                "jobs of partitions moved away dropped",
                extra={"kept": sorted(kept), "parsers": len(keys), "jobs": len(jobs)},
            )

    # -- what /healthz and /metrics read (worker/probes.py) ---------------------------------

    def health(self) -> Health:
        t = self.telemetry
        readings = probes.Readings(
            time.monotonic(), t.failing_since, t.unassigned_since, self.logs_unassigned_since
        )
        return probes.assess(readings, self.settings.worker.health_grace_s)

    def metrics(self) -> CollectorRegistry:
        """A registry reading the worker's counters at each scrape."""

        def read() -> list[Any]:
            t = self.telemetry
            devices = t.devices
            figures = probes.Figures(
                telemetry=t.counters,
                logs=self.counters,
                decoded=None if devices is None else devices.decoded,
                telemetry_partitions=len(t.held),
                log_partitions=len(self.owned),
                devices=0 if devices is None else len(devices.live),
                jobs=len(self.correlator.job_ids()),
                unreadable_parser_sets=self.parsers.unreadable,
            )
            return list(probes.families(figures, self.health()))

        return probes.registry(read)

    # -- agents -----------------------------------------------------------------------------

    def _logs_agent(self, batch: int, within: float) -> Any:
        scheduler_topic = self.raw_scheduler.get_topic_name()

        async def parse_logs(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                await self._changelogs_ready()
                facts_out: dict[str, list[Any]] = defaultdict(list)
                verdicts: list[Verdict] = []
                dead: list[Any] = []
                touched: set[bytes] = set()  # jobs whose logs were read: parser state
                placed: set[bytes] = set()  # jobs a scheduler record placed
                for event in events:
                    if event.message.topic == scheduler_topic:
                        dead += await self._placements(event, facts_out, verdicts, placed)
                        continue
                    try:
                        if not isinstance(event.value, bytes):
                            raise wire.WireError("empty message")
                        logs = wire.decode_log_batch(event.value)
                    except wire.WireError as exc:
                        dead.append(await self._dead(event, f"logs: {exc}"))
                        continue
                    key = logs.job_id.encode()
                    verdicts.extend(self._adopt(key))
                    parsers = self.parsers.get(key)
                    parser = parsers.parser(logs)
                    parser.shipped(logs.read_ns)
                    parsed = [
                        fact
                        for i, line in enumerate(logs.lines)
                        for fact in parser.feed(line, logs.first_line_no + i)
                    ]
                    # A log shipper sends a message when the file goes quiet: an env dump
                    # the message ended with is read now, as the replay reads one that ends
                    # a file.
                    parsed += parser.pause()
                    # Facts of lines with no time: dated by the job, or dead letters.
                    parsed, untimed = parsers.clock.date(parsed)
                    for bad in untimed:
                        reason = f"logs: {bad.source} line {bad.line_no}: {bad.reason}"
                        at = bad.line_no - logs.first_line_no
                        line = logs.lines[at] if 0 <= at < len(logs.lines) else ""
                        dead.append(await self._dead(event, reason, line.encode()))
                    for fact in parsed:
                        facts_out[logs.job_id].append(fact)
                        self.correlator.fold(fact)
                    dead += await self._uncabled(event, parsed)
                    # Garbled lines of a good message: reported as they happen, as the
                    # embedded replay stores them.
                    for bad in parser.stats.dead_letters:
                        reason = f"logs: {bad.source} line {bad.line_no}: {bad.reason}"
                        dead.append(await self._dead(event, reason, bad.raw))
                    parser.stats.dead_letters.clear()
                    touched.add(key)
                # Each job is judged once per batch, not per fact (a large job's watchdog
                # lines come by the hundred); healthy jobs' verdicts (ranks, hosts) are
                # refreshed with them.
                jobs = touched | placed
                verdicts.extend(self.correlator.judge_pending(k.decode() for k in jobs))
                await self._delivered(
                    dead
                    + await self._send_grouped(self.facts_topic, facts_out, wire.encode_records)
                    + await self._send_verdicts(verdicts)
                )
                for key in jobs:
                    view = self.correlator.job_view(key.decode())
                    self.jobs_table[key] = job_state.encode(self.parsers.get(key), view)
                # Acknowledged (and so committable) only once its state is on the broker too:
                # else a restart would resume past input that no saved state holds.
                await self.jobs_table.delivered()

        return parse_logs

    async def _placements(
        self,
        event: Any,
        facts_out: dict[str, list[Any]],
        verdicts: list[Verdict],
        placed: set[bytes],
    ) -> list[Any]:
        """One job's scheduler record, read as the embedded replay reads a capture's
        `scheduler/` files: its placement observed and published as a fact; a record that
        cannot be read, or hosts that are not cabled, dead-lettered with the reason. Returns
        the dead letters' delivery futures."""
        try:
            if not isinstance(event.value, bytes):
                raise wire.WireError("empty message")
            out = wire.decode_scheduler_output(event.value)
        except wire.WireError as exc:
            return [await self._dead(event, f"scheduler: {exc}")]
        read = read_placements(out.source, out.text.encode(), out.zone(), out.first)
        if out.gone_ns is not None and out.polled_ns is not None:
            read.placements = [ended_unseen(p, out.polled_ns, out.gone_ns) for p in read.placements]
        dead = [
            await self._dead(event, f"scheduler: {d.source} line {d.line_no}: {d.reason}")
            for d in read.dead_letters
        ]
        news: list[JobPlacement] = []
        for placement in read.placements:
            key = placement.job_id.encode()
            verdicts.extend(self._adopt(key))
            view = self.correlator.job_view(placement.job_id)
            if view is not None and view.knows(placement):
                continue  # delivered again (a restart before the offset was committed)
            facts_out[placement.job_id].append(placement)
            self.correlator.fold(placement)
            placed.add(key)
            news.append(placement)
        self.counters["placements"] += len(read.placements)
        return dead + await self._uncabled(event, news)

    async def _uncabled(self, event: Any, facts: list[Any]) -> list[Any]:
        """Dead-letter the placements among `facts` (a scheduler record's, or a log's env
        dumps') whose hosts are not cabled, as the embedded replay does; returns the dead
        letters' delivery futures. The placements stay folded: their other hosts count."""
        return [
            await self._dead(event, f"placement: {d.source} line {d.line_no}: {d.reason}")
            for d in uncabled(facts, self.correlator.fabric.host_nics)
        ]

    async def _changelogs_ready(self) -> None:
        """Before a batch writes the job-state table: its changelog known to the producer
        (`IdempotentProducer.ready_for`)."""
        producer = cast(IdempotentProducer, self.app.producer)
        await producer.ready_for(
            self.jobs_table.changelog_topic.get_topic_name(),
            self.settings.worker.changelog_wait_s,
        )

    def _adopt(self, key: bytes) -> list[Verdict]:
        """Take over a job whose view this worker has only in its recovered table; returns the
        verdict to publish (a re-send of the same verdict is harmless, a missing one is not)."""
        job_id = key.decode()
        if self.correlator.job_view(job_id) is None:
            saved = self.jobs_table.get(key)
            if saved and self._viewless.get(key) is not saved:
                try:
                    view = job_state.view_of(orjson.loads(saved), self.settings.attribution.pace)
                except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError included
                    # Start the job afresh from its next facts rather than stop the agent.
                    self.counters["bad_snapshots"] += 1
                    log.error("unreadable job state", extra={"job": job_id, "reason": str(exc)})
                    self.jobs_table.pop(key, None)
                    return []
                if view is None:
                    self._viewless[key] = saved
                    return []
                self._viewless.pop(key, None)
                verdict = self.correlator.adopt(view)
                # Which worker took which job over, and what it then said: a verdict that
                # differs from the embedded replay's is explained from here.
                log.info(
                    "job taken over from its table",
                    extra={
                        "job": job_id,
                        "partition": partition_of(key, self.settings.kafka.partitions),
                        "owned": sorted(self.owned),
                        "state": verdict.state.value,
                        "hosts": verdict.hosts,
                    },
                )
                return [verdict]
        return []

    async def _send_verdicts(self, verdicts: list[Verdict]) -> list[Any]:
        """Send each job's verdict as the correlator holds it at the moment of sending, not as
        it was when `verdicts` were judged: a batch waits on the broker between judging and
        sending, the timer may re-judge a job and send the newer verdict meanwhile, and the
        older one sent after it would be the job's last word at the sink."""
        latest = {v.job_id: v for v in verdicts}
        self.counters["verdicts"] += len(latest)
        sent = []
        for job_id, judged in sorted(latest.items()):
            v = self.correlator.verdict_of(job_id) or judged
            sent.append(
                await self.verdicts_topic.send(key=job_id.encode(), value=wire.encode_records([v]))
            )
        return sent

    async def _reevaluate(self) -> None:
        """The timer: adopt the jobs of this worker's partitions that only its table holds
        (taken over in a rebalance, and maybe sent no message since), then re-judge.

        Nothing is done while a rebalance is under way: which jobs are whose is not settled,
        and the table of a partition just taken over is still being replayed (older values of
        a key first), so a job adopted then would be judged on an earlier batch's view. Only
        the jobs of owned partitions are adopted: the table also holds what this worker wrote
        for partitions it has lost (faust's memory store forgets only what it recovered), and
        a view from there is older than what the new owner publishes."""
        if self.app.rebalancing:
            return
        parts = self.settings.kafka.partitions
        adopted = [
            v
            for key in list(self.jobs_table.keys())
            if partition_of(key, parts) in self.owned
            for v in self._adopt(key)
        ]
        # Event time also moves with the link events other partitions normalised: a job whose
        # logs went silent has no record of its own that would move it.
        advanced = self.correlator.advance(self.follow.newest_link_event_ns)
        await self._delivered(
            await self._send_verdicts(adopted + advanced + self.correlator.reevaluate())
        )
