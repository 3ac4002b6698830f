"""The worker's `parse-logs` agent, driven through faust's `agent.test_context()` with the
memory table store: raw log batches in, job facts, verdicts, dead letters and table snapshots
out, without a Kafka broker.

The one stand-in is the producer: faust's test support delivers input to the agent but has no
answer for what the agent sends, so `RecordingProducer` takes the place of the app's Kafka
producer (topic sends and table changelog writes alike) and records every message. Faking the
producer is acceptable here only because the same path runs against a real broker, producer
included, in tests/test_streaming_e2e.py. Everything between the producer and the agent
(faust's topics, futures and tables, railtrace's wire formats, parsers and correlator) is real.

The log lines come from the project's simulator (a small rail-optimized cluster and a link
that goes down under the first job), cut into raw-logs messages the way `railtrace replay
--kafka` cuts capture files.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from zoneinfo import ZoneInfo

import orjson
import pytest
from faust.types import TP
from faust.types.tuples import RecordMetadata

from railtrace.kafka import topics
from railtrace.replay.capture import open_capture
from railtrace.replay.runner import Sink, replay
from railtrace.settings import KafkaSettings, Settings, WorkerSettings
from railtrace.simulate.logs import LogFile, job_logs
from railtrace.simulate.scenario import Fault, Scenario, SimJob, plan_scenario
from railtrace.streams import wire
from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.logs import LogParser
from railtrace.streams.logs.sources import SourceHosts
from railtrace.streams.logs.undated import JobClock
from railtrace.streams.records import (
    ChannelEdge,
    DeadLetter,
    JobPlacement,
    JobState,
    LinkEvent,
    LinkEventKind,
    RankInfo,
    Verdict,
    XidEvent,
)
from railtrace.worker import job_state
from railtrace.worker.job_parsers import JobParsers, partition_of
from railtrace.worker.processor import Processor

NODES = 16
SEED = 5
WATCHDOG_S = 120
LINES_PER_MESSAGE = 40  # several messages per file, so batches hold more than one
WAIT_S = 60.0  # a deadline, not a duration: what is waited for takes far less


# -- the stand-in producer ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sent:
    topic: str
    key: bytes | None
    value: bytes | None


class RecordingProducer:
    """Takes the place of the app's Kafka producer: records each message and reports it
    delivered at once. `send` serves `topic.send` (the agent's outputs), `send_soon` and
    `key_partition` serve table writes (their changelog), which a test may hold undelivered;
    `ready_for` records the topics the agent made sure of before writing (aiokafka's own
    `key_partition` fails on a topic its metadata does not hold:
    tests/test_worker_followers.py)."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []
        self.ready: set[str] = set()  # topics `ready_for` was awaited on
        # Table writes are delivered at once unless held: a broker slow to take them.
        self.hold_table_writes = False
        self.undelivered: list[Any] = []

    async def maybe_start(self) -> None:
        return None

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: float | None,
        headers: Any,
        **_: Any,
    ) -> asyncio.Future[RecordMetadata]:
        self.sent.append(Sent(topic, key, value))
        delivered: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        delivered.set_result(RecordMetadata(topic, 0, TP(topic, 0), len(self.sent) - 1))
        return delivered

    def send_soon(self, fut: Any) -> None:
        m = fut.message
        self.sent.append(Sent(m.channel.get_topic_name(), m.key, m.value))
        self.undelivered.append(fut)
        if not self.hold_table_writes:
            self.deliver_table_writes()

    def deliver_table_writes(self) -> None:
        """Report every changelog write made so far as on the broker."""
        for fut in self.undelivered:
            topic = fut.message.channel.get_topic_name()
            fut.set_result(RecordMetadata(topic, 0, TP(topic, 0), len(self.sent) - 1))
        self.undelivered.clear()

    def key_partition(self, topic: str, key: bytes | None) -> TP:
        return TP(topic, 0)

    async def ready_for(self, topic: str, within_s: float) -> None:
        self.ready.add(topic)

    def on(self, topic: str) -> list[Sent]:
        return [s for s in self.sent if s.topic == topic]


# -- the worker under test ---------------------------------------------------------------------


@dataclass
class Worker:
    processor: Processor
    producer: RecordingProducer
    prefix: str

    def topic(self, spec: topics.TopicSpec) -> str:
        return topics.name(self.prefix, spec)

    def facts(self) -> list[Sent]:
        return self.producer.on(self.topic(topics.JOB_FACTS))

    def verdicts(self) -> list[Sent]:
        return self.producer.on(self.topic(topics.VERDICTS))

    def dead_letters(self) -> list[Sent]:
        return self.producer.on(self.topic(topics.DEAD_LETTERS))

    def table(self, name: str) -> Any:
        return self.processor.app.tables[name]


def make_worker(tmp_path: Path, fabric: Any, partitions: int = 1) -> Worker:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    settings = Settings(
        worker=WorkerSettings(
            data_dir=tmp_path / "worker", app_id=f"{prefix}-worker", batch_within_s=0.02
        ),
        # Nothing listens on port 1: anything that got past the stand-in would fail, not
        # reach a broker that happens to run on this machine.
        kafka=KafkaSettings(
            bootstrap_servers="127.0.0.1:1", topic_prefix=prefix, partitions=partitions
        ),
    )
    processor = Processor(settings, fabric)
    producer = RecordingProducer()
    processor.app.producer = producer
    return Worker(processor, producer, prefix)


class Agent:
    """The `parse-logs` agent in a test context; `put` hands it one raw-logs message."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.errors: list[BaseException] = []
        self._barriers = 0

    async def __aenter__(self) -> Agent:
        async def on_error(_agent: Any, exc: BaseException) -> None:
            self.errors.append(exc)

        agent = self.worker.processor.app.agents["parse-logs"]
        self._context = agent.test_context(on_error=on_error)
        self._test_agent = await self._context.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._context.__aexit__(*exc)

    async def put(
        self, value: bytes | None, key: bytes | None, spec: topics.TopicSpec = topics.RAW_LOGS
    ) -> Any:
        """As faust's `put`, but from topic `spec`: the agent reads two topics (raw logs and
        raw scheduler records), and faust's test wrapper names no topic for such a channel.
        Returns the message, whose `acked` says when its offset may be committed."""
        t = self._test_agent
        message = t.to_message(key, value, offset=t.sent_offset)
        message.topic = self.worker.topic(spec)
        channel = t.stream().channel
        await channel.put(await channel.decode(message))
        t.sent_offset += 1
        async with t.new_value_processed:
            await t.new_value_processed.wait()
            if t._crash_reason:
                raise t._crash_reason from t._crash_reason
        return message

    async def put_batches(self, batches: list[wire.LogBatch]) -> None:
        for b in batches:
            await self.put(wire.encode_log_batch(b), key=b.job_id.encode())

    async def until(self, done: Callable[[], bool], what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        while not done():
            if self.errors:
                raise AssertionError(f"the agent crashed: {self.errors[0]!r}") from self.errors[0]
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.005)

    async def drain(self) -> None:
        """Wait until every message put so far is processed: `put` returns once the agent's
        stream has the message, before its batch is done. One agent task takes messages in
        order and saves a batch's parser state once its outputs are delivered, so once a
        barrier message (a job of its own, one empty line: no facts, no verdict) has its
        state saved, every earlier message is done with."""
        self._barriers += 1
        key = f"barrier-{self._barriers}".encode()
        await self.put(
            wire.encode_log_batch(wire.LogBatch(key.decode(), "barrier", 1, ("",))), key=key
        )
        jobs = self.worker.table("job-state")
        await self.until(lambda: jobs.get(key) is not None, f"barrier {key!r}")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- simulated input -----------------------------------------------------------------------------


@dataclass(frozen=True)
class JobLogs:
    job: SimJob
    year: int
    files: dict[str, list[str]]  # source -> lines, as `railtrace replay --kafka` names them

    @property
    def job_id(self) -> str:
        return self.job.job_id

    def batches(self, start: int = 0, stop: int | None = None) -> list[wire.LogBatch]:
        """The raw-logs messages of lines [start, stop) of every file (0-based, per file)."""
        out = []
        for source, lines in self.files.items():
            end = len(lines) if stop is None else min(stop, len(lines))
            for first in range(start, end, LINES_PER_MESSAGE):
                chunk = tuple(lines[first : min(first + LINES_PER_MESSAGE, end)])
                out.append(wire.LogBatch(self.job_id, source, first + 1, chunk, self.year))
        return out


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return plan_scenario(NODES, Fault.LINK_DOWN, SEED, watchdog_s=WATCHDOG_S)


def logs_of(sc: Scenario, job: SimJob) -> JobLogs:
    # As the capture writer does: every other job's files carry a log shipper's timestamps.
    shipped = sc.jobs.index(job) % 2 == 1
    files: list[LogFile] = job_logs(sc, job, random.Random(f"logs-{SEED}-{job.job_id}"))
    year = datetime.fromtimestamp(sc.start_ns / 1e9, tz=UTC).year
    return JobLogs(
        job,
        year,
        {f"logs/{job.job_id}/{f.name}": f.text(shipped).splitlines() for f in files},
    )


@pytest.fixture(scope="module")
def hung(scenario: Scenario) -> JobLogs:
    """The job the link fault stalled: transport errors, then every rank's watchdog."""
    assert scenario.affected is not None and scenario.affected.stalled_ns is not None
    return logs_of(scenario, scenario.affected)


@pytest.fixture(scope="module")
def healthy(scenario: Scenario) -> JobLogs:
    job = next(j for j in scenario.jobs if j is not scenario.affected)
    return logs_of(scenario, job)


def embedded_batches(logs: JobLogs, batches: list[wire.LogBatch]) -> list[list[Any]]:
    """The facts the core gives for each of `batches` in turn, without the worker: one parser
    per file, fed as a worker feeds it (a message's lines, then a pause), and the job's clock
    for the lines that carry no time, which reads them in that order."""
    parsers: dict[str, LogParser] = {}
    clock = JobClock()
    out = []
    for b in batches:
        parser = parsers.setdefault(b.source, LogParser(logs.job_id, b.source, logs.year))
        facts = [
            f for i, line in enumerate(b.lines) for f in parser.feed(line, b.first_line_no + i)
        ]
        dated, _ = clock.date([*facts, *parser.pause()])
        out.append(dated)
    return out


def embedded(
    sc: Scenario, logs: JobLogs, batches: list[wire.LogBatch] | None = None
) -> tuple[list[Any], Verdict]:
    """What the core says without the worker, read in the order of `batches` (the job's files
    one after the other by default): the facts and the verdict of one correlator."""
    correlator = Correlator(sc.fabric, Settings().attribution)
    per_batch = embedded_batches(logs, logs.batches() if batches is None else batches)
    facts = [f for batch in per_batch for f in batch]
    for fact in facts:
        correlator.observe(fact)
    (verdict,) = [v for v in correlator.verdicts() if v.job_id == logs.job_id]
    return facts, verdict


def decoded(messages: list[Sent]) -> Iterator[Any]:
    for m in messages:
        assert m.value is not None
        yield from wire.decode_records(m.value)


def _shortest_rank_log(logs: JobLogs) -> int:
    """Lines of the shortest ranks' log: slices of it cut every such file. A host's kernel log
    may hold a single line; it then falls wholly in the first slice."""
    return min(len(lines) for source, lines in logs.files.items() if source.endswith(".log"))


def _fault_down(sc: Scenario) -> LinkEvent:
    """The faulty link's DOWN, as the telemetry stage reports it from the link's first end."""
    assert sc.fault_link is not None and sc.fault_at_ns is not None
    end = sc.fault_link.a
    return LinkEvent(
        sc.fault_at_ns, end.device, end.interface, LinkEventKind.DOWN, 0.0, "oper-status down"
    )


def parser_snapshot(worker: Worker, job_id: str) -> JobParsers:
    saved = worker.table("job-state").get(job_id.encode())
    assert saved is not None, f"no state saved for {job_id}"
    named = SourceHosts(worker.processor.fabric.hosts())
    return job_state.parsers_of(orjson.loads(saved), named, UTC)


def saved_view(worker: Worker, job_id: str) -> JobView:
    saved = worker.table("job-state").get(job_id.encode())
    assert saved is not None, f"no state saved for {job_id}"
    view = job_state.view_of(orjson.loads(saved), Settings().attribution.pace)
    assert view is not None, f"no view saved for {job_id}"
    return view


# -- tests -----------------------------------------------------------------------------------


def test_good_log_lines_yield_job_facts_keyed_by_job_and_save_the_job_view(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs
) -> None:
    w = make_worker(tmp_path, scenario.fabric)

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put_batches(healthy.batches())
            await agent.drain()

    run(go())

    facts_msgs = w.facts()
    assert facts_msgs, "no job facts were sent"
    assert {m.key for m in facts_msgs} == {healthy.job_id.encode()}
    facts = list(decoded(facts_msgs))
    expected_facts, expected_verdict = embedded(scenario, healthy)
    assert facts == expected_facts
    assert {f.job_id for f in facts} == {healthy.job_id}

    # Independently of the parser: every rank of the simulated job announced itself, each
    # fact points back at the very line that said so, and the ring's channels were read.
    ranks = [f for f in facts if isinstance(f, RankInfo)]
    assert sorted(r.rank for r in ranks) == list(range(healthy.job.ranks))
    assert {r.host for r in ranks} == set(healthy.job.hosts)
    for r in ranks:
        line = healthy.files[r.origin.source][r.origin.line_no - 1]
        assert f"rank {r.rank} nranks {healthy.job.ranks}" in line, line
    edges = [f for f in facts if isinstance(f, ChannelEdge)]
    assert {e.channel for e in edges} == set(range(8))

    # The job's view is in the job-state table, keyed by job id, and restores to the job;
    # the table's changelog was made known to the producer before the agent wrote it.
    assert w.processor.jobs_table.changelog_topic.get_topic_name() in w.producer.ready
    view = saved_view(w, healthy.job_id)
    assert view.job_id == healthy.job_id
    assert view.hosts == set(healthy.job.hosts)
    assert view.ranks == healthy.job.ranks
    # It keeps the channels that cross the network (the job's flows), as they were sent.
    assert sorted(view.edges.values(), key=repr) == sorted(
        (e for e in edges if e.net_dev is not None), key=repr
    )
    assert view.flows(scenario.fabric)

    # A healthy job's verdict says so, with its size.
    verdicts = list(decoded(w.verdicts()))
    assert verdicts and all(v.job_id == healthy.job_id for v in verdicts)
    assert verdicts[-1] == expected_verdict
    assert verdicts[-1].state == JobState.HEALTHY
    assert (verdicts[-1].ranks, verdicts[-1].hosts) == (healthy.job.ranks, len(healthy.job.hosts))
    assert w.dead_letters() == []


def test_facts_of_two_jobs_in_one_batch_go_out_under_each_jobs_own_key(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs, hung: JobLogs
) -> None:
    w = make_worker(tmp_path, scenario.fabric)
    interleaved = [b for pair in zip(healthy.batches(), hung.batches(), strict=False) for b in pair]

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put_batches(interleaved)
            await agent.drain()

    run(go())

    by_key: dict[bytes | None, list[Any]] = {}
    for m in w.facts():
        by_key.setdefault(m.key, []).extend(decoded([m]))
    fed = {b.job_id for b in interleaved}
    assert set(by_key) == {j.encode() for j in fed}
    for key, facts in by_key.items():
        assert key is not None
        assert {f.job_id for f in facts} == {key.decode()}
    assert {m.key for m in w.verdicts()} == {j.encode() for j in fed}


def test_a_hang_yields_a_stalled_verdict_keyed_by_job_and_redelivery_adds_no_facts(
    tmp_path: Path, scenario: Scenario, hung: JobLogs
) -> None:
    w = make_worker(tmp_path, scenario.fabric)
    batches = hung.batches()
    counts: dict[str, int] = {}

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put_batches(batches)
            await agent.drain()
            counts["facts"], counts["verdicts"] = len(w.facts()), len(w.verdicts())
            # At-least-once delivery: after a crash the same messages arrive again.
            await agent.put_batches(batches)
            await agent.drain()

    run(go())

    sent = w.verdicts()
    assert sent and {m.key for m in sent} == {hung.job_id.encode()}
    for m in sent:
        assert m.value is not None
        assert len(wire.decode_records(m.value)) == 1, "one verdict record per message"
    verdict = next(iter(decoded(sent[-1:])))
    assert isinstance(verdict, Verdict)
    assert verdict.job_id == hung.job_id
    assert verdict.state == JobState.STALLED
    assert hung.job.stalled_ns is not None
    # The watchdog dates the stall to the start of the collective that never finished.
    assert verdict.stalled_at_ns is not None
    assert abs(verdict.stalled_at_ns - hung.job.stalled_ns) < 1_000_000
    assert (verdict.ranks, verdict.hosts) == (hung.job.ranks, len(hung.job.hosts))
    _, expected = embedded(scenario, hung)
    assert verdict == expected

    # The redelivered messages changed nothing and were counted as redelivered.
    assert len(w.facts()) == counts["facts"]
    assert len(w.verdicts()) == counts["verdicts"]
    parsers = parser_snapshot(w, hung.job_id).by_source
    for source, lines in hung.files.items():
        assert parsers[source].position == len(lines)
        assert parsers[source].stats.redelivered == len(lines)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"{not json", "logs: not JSON"),
        (b"[1, 2, 3]", "logs: a log message must be a JSON object"),
        (
            b'{"job_id": "x", "source": "y", "line_no": 0, "lines": []}',
            "logs: a log message needs line_no",
        ),
        (b'{"job_id": "x", "source": "y", "line_no": 1, "lines": [7]}', "logs: a log message"),
        (None, "logs: empty message"),
    ],
    ids=["not-json", "not-an-object", "line-no-0", "lines-not-strings", "tombstone"],
)
def test_a_garbled_message_is_dead_lettered_with_its_reason_and_later_ones_still_flow(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs, value: bytes | None, reason: str
) -> None:
    w = make_worker(tmp_path, scenario.fabric)

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put(value, key=b"junk")
            await agent.put_batches(healthy.batches())
            await agent.drain()

    run(go())

    raw_topic = w.topic(topics.RAW_LOGS)
    (letter_msg,) = w.dead_letters()
    assert letter_msg.key == raw_topic.encode()
    assert letter_msg.value is not None
    letter = wire.decode_dead_letter(letter_msg.value)
    assert letter["reason"].startswith(reason), letter["reason"]
    assert (letter["topic"], letter["partition"], letter["offset"]) == (raw_topic, 0, 0)
    assert letter["key"] == b"junk"
    assert letter["value"] == value
    assert w.processor.counters["dead_letters"] == 1

    expected_facts, _ = embedded(scenario, healthy)
    assert list(decoded(w.facts())) == expected_facts
    assert saved_view(w, healthy.job_id).job_id == healthy.job_id


def test_a_batch_is_acknowledged_only_once_the_broker_has_its_table_snapshots(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs
) -> None:
    """An acknowledged message's offset may be committed at any moment. Were it committed
    while the job's view was still on its way to the changelog, a worker killed then would
    restart past lines whose facts no saved view holds (a CI run lost a job's first facts)."""
    w = make_worker(tmp_path, scenario.fabric)
    w.producer.hold_table_writes = True
    key = healthy.job_id.encode()

    async def go() -> None:
        async with Agent(w) as agent:
            first = healthy.batches()[0]
            message = await agent.put(wire.encode_log_batch(first), key=key)
            jobs = w.table("job-state")
            await agent.until(lambda: jobs.get(key) is not None, "the job's state written")
            # The outputs are delivered and the snapshots written; only their delivery is
            # missing. Time for the agent to go on, were it not waiting for it.
            await asyncio.sleep(0.3)
            assert w.producer.undelivered, "the table writes were not held"
            assert not message.acked, "acknowledged before its state reached the broker"
            w.producer.deliver_table_writes()
            await agent.until(lambda: message.acked, "the message acknowledged")

    run(go())


def test_a_worker_killed_after_any_state_write_and_read_again_from_the_start_agrees(
    tmp_path: Path, scenario: Scenario, hung: JobLogs
) -> None:
    """Kill a worker after any of its state writes, before it committed an offset: its
    successor recovers the last state the broker had and reads the job's messages again from
    the first. The verdict must be that of one uninterrupted reading. It was not when parsers
    and view went to two changelogs: parsers recovered ahead of the view skipped lines the
    view never got (a CI run streamed a hang without its first NCCL error)."""
    key = hung.job_id.encode()
    a = make_worker(tmp_path / "a", scenario.fabric)

    async def on_a() -> None:
        async with Agent(a) as agent:
            for batch in hung.batches():  # one batch each: a state write after each
                await agent.put_batches([batch])
                await agent.drain()

    run(on_a())
    changelog = a.table("job-state").changelog_topic.get_topic_name()
    writes = [m.value for m in a.producer.on(changelog) if m.key == key]
    assert len(writes) >= 3, "too few state writes: the test would prove nothing"
    _, expected = embedded(scenario, hung)
    whole = saved_view(a, hung.job_id)
    for i, recovered in enumerate([None, *writes]):
        b = make_worker(tmp_path / f"b{i}", scenario.fabric)

        async def on_b(recovered: bytes | None = recovered, b: Worker = b) -> None:
            if recovered is not None:
                b.table("job-state")[key] = recovered
            async with Agent(b) as agent:
                await agent.put_batches(hung.batches())
                await agent.drain()

        run(on_b())
        assert next(iter(decoded(b.verdicts()[-1:]))) == expected, f"after write {i}"
        # The same view, and every line read once (parsers' counts of lines read again
        # differ, as they should).
        assert saved_view(b, hung.job_id).snapshot() == whole.snapshot(), f"after write {i}"
        positions = {s: p.position for s, p in parser_snapshot(b, hung.job_id).by_source.items()}
        assert positions == {s: len(lines) for s, lines in hung.files.items()}


def test_a_saved_state_without_a_view_is_read_once_not_on_every_timer_tick(
    tmp_path: Path, scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job whose lines gave no fact yet has parsers saved but no view. The timer looks for
    jobs to take over in every saved state its correlator lacks; reading such a state again
    on every tick would parse each quiet job's parsers (a file each) over and over. A new
    value of the key is read again: it may hold a view another worker wrote."""
    w = make_worker(tmp_path, scenario.fabric)
    key = b"quiet-job"
    reads: list[Any] = []
    view_of = job_state.view_of

    def counted(snap: Any, pace: Any) -> JobView | None:
        reads.append(snap)
        return view_of(snap, pace)

    monkeypatch.setattr(job_state, "view_of", counted)

    async def go() -> None:
        await w.processor._on_assigned(
            w.processor.app, {TP(w.processor.raw_logs.get_topic_name(), 0)}
        )
        async with Agent(w) as agent:
            quiet = wire.LogBatch(key.decode(), "logs/quiet/a.log", 1, ("nothing to see",))
            await agent.put(wire.encode_log_batch(quiet), key=key)
            await agent.drain()
        saved = w.table("job-state").get(key)
        assert saved is not None and job_state.view_of is counted
        assert orjson.loads(saved)["view"] is None, "the job has a view: nothing to pin"
        # Read on the first tick: this job's state and the barrier job's of `drain`.
        reads.clear()
        await w.processor._reevaluate()
        viewless = len(reads)
        assert viewless == 2
        for _ in range(3):
            await w.processor._reevaluate()
        assert len(reads) == viewless
        w.table("job-state")[key] = bytes(bytearray(saved))  # a new value, equal or not
        await w.processor._reevaluate()
        assert len(reads) == viewless + 1

    run(go())


def test_the_parser_snapshot_in_the_log_parsers_table_restores_and_resumes_on_a_new_worker(
    tmp_path: Path, scenario: Scenario, hung: JobLogs
) -> None:
    """Worker A reads the first half of every file and stops; worker B recovers A's tables
    (as Kafka would replay their changelogs) and reads the rest. B's facts and verdict must be
    those of one uninterrupted reading."""
    half = _shortest_rank_log(hung) // 2
    key = hung.job_id.encode()
    a = make_worker(tmp_path / "a", scenario.fabric)

    async def first_half() -> None:
        async with Agent(a) as agent:
            await agent.put_batches(hung.batches(stop=half))
            await agent.drain()

    run(first_half())

    snapshot = parser_snapshot(a, hung.job_id)
    assert set(snapshot.by_source) == set(hung.files)
    for source, parser in snapshot.by_source.items():
        read = min(half, len(hung.files[source]))
        assert (parser.job_id, parser.source, parser.position) == (hung.job_id, source, read)
    # What a restarted worker recovers is the last value of the key in the changelog.
    changelog = a.table("job-state").changelog_topic.get_topic_name()
    writes = [m for m in a.producer.on(changelog) if m.key == key]
    assert writes, "nothing went to the changelog"
    recovered = writes[-1].value
    assert recovered is not None
    assert recovered == a.table("job-state").get(key)

    b = make_worker(tmp_path / "b", scenario.fabric)

    async def second_half() -> None:
        b.table("job-state")[key] = recovered
        async with Agent(b) as agent:
            await agent.put_batches(hung.batches(start=half))
            await agent.drain()

    run(second_half())

    # Read in the same order: what the lines without a time are dated by depends on it.
    first, rest = hung.batches(stop=half), hung.batches(start=half)
    _, expected_verdict = embedded(scenario, hung, first + rest)
    resumed = list(decoded(b.facts()))
    assert resumed == [
        f for batch in embedded_batches(hung, first + rest)[len(first) :] for f in batch
    ]
    assert resumed, "the second half held no facts: the test would prove nothing"
    assert next(iter(decoded(b.verdicts()[-1:]))) == expected_verdict
    for source, parser in parser_snapshot(b, hung.job_id).by_source.items():
        assert parser.position == len(hung.files[source])


def test_a_worker_taking_over_a_job_publishes_the_verdict_its_link_history_gives(
    tmp_path: Path, scenario: Scenario, hung: JobLogs
) -> None:
    """Worker A judged the hang before the faulty link's DOWN reached it, then died. Worker B
    already holds that DOWN when it adopts the job from A's table: B must publish the verdict
    that blames the link, not keep it to itself because nothing changed since adoption."""
    assert scenario.fault_link is not None and scenario.fault_at_ns is not None
    key = hung.job_id.encode()
    a = make_worker(tmp_path / "a", scenario.fabric)

    async def on_a() -> None:
        async with Agent(a) as agent:
            await agent.put_batches(hung.batches())
            await agent.drain()

    run(on_a())
    (published_by_a,) = [v for v in decoded(a.verdicts()[-1:])]
    down = _fault_down(scenario)
    b = make_worker(tmp_path / "b", scenario.fabric)
    b.processor.history.add(scenario.fault_link.link_id, down)

    async def on_b() -> None:
        # B is given the job's partition and recovers its table; then its timer runs.
        await b.processor._on_assigned(
            b.processor.app, {TP(b.processor.raw_logs.get_topic_name(), 0)}
        )
        b.table("job-state")[key] = a.table("job-state").get(key)
        await b.processor._reevaluate()

    run(on_b())

    facts, _ = embedded(scenario, hung)
    correlator = Correlator(scenario.fabric, Settings().attribution)
    correlator.observe(down)
    for fact in facts:
        correlator.observe(fact)
    (expected,) = [v for v in correlator.verdicts() if v.job_id == hung.job_id]
    assert expected.cause_link == scenario.fault_link
    assert published_by_a != expected, "A already knew: the test would prove nothing"
    assert [v for v in decoded(b.verdicts())] == [expected]


def test_a_garbled_line_inside_a_good_message_is_dead_lettered_and_its_neighbours_parsed(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs
) -> None:
    bad = "h1:1:2 [0] NCCL WARN NET/IB : Got completion from peer"  # the peer is missing
    first = healthy.batches()[0]
    garbled = wire.LogBatch(
        first.job_id, first.source, first.first_line_no, (*first.lines, bad), first.year
    )
    w = make_worker(tmp_path, scenario.fabric)

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put_batches([garbled])
            await agent.drain()

    run(go())

    (letter_msg,) = w.dead_letters()
    assert letter_msg.value is not None
    letter = wire.decode_dead_letter(letter_msg.value)
    line_no = first.first_line_no + len(first.lines)
    assert letter["reason"].startswith(f"logs: {first.source} line {line_no}: "), letter["reason"]
    assert letter["value"] == bad.encode()
    assert (letter["topic"], letter["offset"]) == (w.topic(topics.RAW_LOGS), 0)
    expected = [f for f in embedded(scenario, healthy)[0] if f.origin.source == first.source]
    expected = [f for f in expected if f.origin.line_no <= line_no - 1]
    assert list(decoded(w.facts())) == expected
    # reported once: the parser's own list is emptied once the letters are sent
    assert parser_snapshot(w, healthy.job_id).by_source[first.source].stats.dead_letters == []


@pytest.mark.parametrize(
    ("saved", "counted"),
    [
        # torn: neither parsers nor view can be read
        (b'{"v": 1, "torn', "bad_snapshots"),
        # a view of no job, beside parsers that are fine
        (b'{"v": 1, "parsers": {"v": 1, "parsers": {}}, "view": {"job": 7}}', "bad_snapshots"),
        # parsers of a version this worker does not know, and no view yet
        (b'{"v": 1, "parsers": {"v": 99}, "view": null}', "unreadable_parser_sets"),
        # a state of a version this worker does not know
        (b'{"v": 2, "parsers": {}, "view": null}', "bad_snapshots"),
    ],
)
def test_a_damaged_snapshot_is_counted_and_the_job_carries_on_afresh(
    tmp_path: Path, scenario: Scenario, hung: JobLogs, saved: bytes, counted: str
) -> None:
    w = make_worker(tmp_path, scenario.fabric)
    key = hung.job_id.encode()

    async def go() -> None:
        w.table("job-state")[key] = saved
        async with Agent(w) as agent:
            await agent.put_batches(hung.batches())
            await agent.drain()

    run(go())

    counts = {
        "unreadable_parser_sets": w.processor.parsers.unreadable,
        "bad_snapshots": w.processor.counters["bad_snapshots"],
    }
    assert counts == {name: int(name == counted) for name in counts}
    expected_facts, expected_verdict = embedded(scenario, hung)
    assert list(decoded(w.facts())) == expected_facts
    assert next(iter(decoded(w.verdicts()[-1:]))) == expected_verdict


def test_a_partition_moved_away_and_given_back_resumes_from_the_table_not_stale_memory(
    tmp_path: Path, scenario: Scenario, hung: JobLogs
) -> None:
    """Worker A reads the first third and loses the partition to worker B, which carries on
    to two thirds; the partition comes back to A, which must resume from B's state in the
    tables (as Faust recovers them), not from the parser and job view it held before."""
    third = _shortest_rank_log(hung) // 3
    key = hung.job_id.encode()
    a = make_worker(tmp_path / "a", scenario.fabric)
    b = make_worker(tmp_path / "b", scenario.fabric)
    raw_logs = a.processor.raw_logs.get_topic_name()

    async def go() -> None:
        async with Agent(a) as agent:
            await agent.put_batches(hung.batches(stop=third))
            await agent.drain()
        # A rebalance that hands the partition straight back changes nothing ...
        await a.processor._on_assigned(a.processor.app, {TP(raw_logs, 0)})
        assert key in a.processor.parsers.live_keys()
        # ... one that gives it to another worker lets go of its jobs.
        await a.processor._on_assigned(a.processor.app, set())
        assert a.processor.parsers.live_keys() == []
        assert hung.job_id not in a.processor.correlator.job_ids()
        async with Agent(b) as agent:
            b.table("job-state")[key] = a.table("job-state").get(key)
            await agent.put_batches(hung.batches(start=third, stop=2 * third))
            await agent.drain()
        # the changelog A recovers on reassignment
        a.table("job-state")[key] = b.table("job-state").get(key)
        a.producer.sent.clear()
        async with Agent(a) as agent:
            await agent.put_batches(hung.batches(start=2 * third))
            await agent.drain()

    whole = make_worker(tmp_path / "whole", scenario.fabric)

    async def uninterrupted() -> None:
        async with Agent(whole) as agent:  # the same slices, in the same order, one worker
            for start, stop in ((0, third), (third, 2 * third), (2 * third, None)):
                await agent.put_batches(hung.batches(start=start, stop=stop))
            await agent.drain()

    run(go())
    run(uninterrupted())
    # Read in the same order: what the lines without a time are dated by depends on it.
    slices = [hung.batches(start=lo, stop=hi) for lo, hi in ((0, third), (third, 2 * third))]
    read_before = slices[0] + slices[1]
    in_order = read_before + hung.batches(start=2 * third)
    _, expected_verdict = embedded(scenario, hung, in_order)
    resumed = list(decoded(a.facts()))
    assert resumed == [
        f for batch in embedded_batches(hung, in_order)[len(read_before) :] for f in batch
    ]
    assert resumed, "the last third held no facts: the test would prove nothing"
    assert next(iter(decoded(a.verdicts()[-1:]))) == expected_verdict
    # What A saved knows the middle third it never read: B's work, taken from the table.
    assert saved_view(a, hung.job_id).snapshot() == saved_view(whole, hung.job_id).snapshot()


# -- which worker may publish a job's verdict ----------------------------------------------------


def _split_by_host(logs: JobLogs) -> tuple[list[wire.LogBatch], list[wire.LogBatch]]:
    """The job's messages of every file but the last, then the last file's: its verdict says
    one host fewer after the first part than after both."""
    files = sorted(logs.files)
    first = [b for b in logs.batches() if b.source in files[:-1]]
    last = [b for b in logs.batches() if b.source == files[-1]]
    return first, last


def _of(job_id: str, messages: list[Sent]) -> list[Verdict]:
    return [v for v in decoded(messages) if isinstance(v, Verdict) and v.job_id == job_id]


def _changelog_tps(worker: Worker, partitions: set[int]) -> set[TP]:
    changelog = worker.table("job-state").changelog_topic.get_topic_name()
    return {TP(changelog, p) for p in partitions}


def test_a_worker_that_lost_a_jobs_partition_never_republishes_the_view_it_kept(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs
) -> None:
    """The two-worker flake (a healthy job's final verdict one host short). Worker A reads
    part of a job, then a rebalance gives the job's partition to worker B, which reads the
    rest and publishes the full verdict. Faust's memory store keeps the view A wrote itself
    (it forgets, after a rebalance, only what it recovered from a changelog), and A's timer
    used to adopt every job in its table that its correlator did not hold: A re-published
    its older verdict after B's, and nothing later corrected it."""
    partitions = 2
    key = healthy.job_id.encode()
    moved = partition_of(key, partitions)
    stays = 1 - moved
    first, last = _split_by_host(healthy)
    a = make_worker(tmp_path / "a", scenario.fabric, partitions)
    b = make_worker(tmp_path / "b", scenario.fabric, partitions)
    raw_logs = a.processor.raw_logs.get_topic_name()

    async def go() -> None:
        await a.processor._on_assigned(a.processor.app, {TP(raw_logs, moved), TP(raw_logs, stays)})
        async with Agent(a) as agent:
            await agent.put_batches(first)
            await agent.drain()
        # The rebalance, as faust runs it on A: the signal, then recovery's end.
        await a.processor._on_assigned(a.processor.app, {TP(raw_logs, stays)})
        await a.table("job-state").on_recovery_completed(_changelog_tps(a, {stays}), set())
        assert a.table("job-state").get(key) is not None, "faust forgot A's own write"
        # B recovers the job from the changelog (A's last write) and reads the rest.
        await b.processor._on_assigned(b.processor.app, {TP(raw_logs, moved)})
        b.table("job-state")[key] = a.table("job-state").get(key)
        async with Agent(b) as agent:
            await agent.put_batches(last)
            await agent.drain()
        await b.processor._reevaluate()
        before.extend(_of(healthy.job_id, a.verdicts()))
        a.producer.sent.clear()
        await a.processor._reevaluate()  # A's timer, after B's verdict went out

    before: list[Verdict] = []
    run(go())

    _, expected = embedded(scenario, healthy)
    published_by_b = _of(healthy.job_id, b.verdicts())
    assert published_by_b and published_by_b[-1] == expected
    assert expected.hosts == len(healthy.job.hosts)
    assert before and before[-1].hosts < expected.hosts, "the test would prove nothing"
    assert _of(healthy.job_id, a.verdicts()) == [], "A re-published a job it no longer owns"
    assert healthy.job_id not in a.processor.correlator.job_ids()


def test_a_job_taken_over_is_adopted_only_once_its_table_is_recovered(
    tmp_path: Path, scenario: Scenario, healthy: JobLogs
) -> None:
    """The new owner's timer runs while faust is still replaying the job-state changelog
    (older values of a key first). Adopting the job then would judge it on the view of an
    earlier batch and keep that view for good: no message of the job is left to read."""
    key = healthy.job_id.encode()
    first, last = _split_by_host(healthy)
    a = make_worker(tmp_path / "a", scenario.fabric)
    c = make_worker(tmp_path / "c", scenario.fabric)
    raw_logs = c.processor.raw_logs.get_topic_name()
    changelog = a.table("job-state").changelog_topic.get_topic_name()

    async def on_a() -> None:
        async with Agent(a) as agent:
            for part in (first, last):
                await agent.put_batches(part)
                await agent.drain()

    run(on_a())
    versions = [m.value for m in a.producer.on(changelog) if m.key == key]
    assert len(versions) >= 2 and versions[0] != versions[-1]
    older = job_state.view_of(orjson.loads(versions[0] or b""), Settings().attribution.pace)
    assert older is not None
    assert len(older.hosts) < len(healthy.job.hosts), "the test would prove nothing"

    async def on_c() -> None:
        await c.processor._on_assigned(c.processor.app, {TP(raw_logs, 0)})
        c.processor.app.rebalancing = True  # as faust has it until recovery has ended
        c.table("job-state")[key] = versions[0]
        await c.processor._reevaluate()
        assert _of(healthy.job_id, c.verdicts()) == []
        assert healthy.job_id not in c.processor.correlator.job_ids()
        c.table("job-state")[key] = versions[-1]
        c.processor.app.rebalancing = False
        await c.processor._reevaluate()

    run(on_c())
    _, expected = embedded(scenario, healthy)
    assert _of(healthy.job_id, c.verdicts()) == [expected]


def _scontrol(job_id: str, hosts: list[str], gone_ns: int | None = None) -> bytes:
    """One job's record as `scontrol show job -d` prints it (tests/fixtures/scheduler/), read
    at 1 ns; with `gone_ns`, as the collector publishes a job that ended unseen."""
    listed = ",".join(hosts)
    text = (
        f"JobId={job_id} JobName=pretrain\n"
        "   JobState=RUNNING Reason=None Dependency=(null)\n"
        "   StartTime=2026-12-01T10:00:00 EndTime=Unknown Deadline=N/A\n"
        f"   NodeList={listed}\n"
        f"   Nodes={listed} CPU_IDs=0-63 Mem=0 GRES=gpu:8(IDX:0-7)\n"
    )
    out = wire.SchedulerOutput("scontrol:lab", 1, text, "UTC", 1, gone_ns)
    return wire.encode_scheduler_output(out)


def test_a_scheduler_record_places_its_job_and_what_cannot_be_used_is_dead_lettered(
    tmp_path: Path, scenario: Scenario
) -> None:
    w = make_worker(tmp_path, scenario.fabric)
    a, b = scenario.fabric.hosts()[:2]

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put(_scontrol("4242", [a, b]), b"4242", topics.RAW_SCHEDULER)
            await agent.put(b"{not json", b"4243", topics.RAW_SCHEDULER)
            await agent.put(_scontrol("4244", [a, "ghost-01"]), b"4244", topics.RAW_SCHEDULER)
            await agent.drain()

    run(go())
    placed = [f for f in decoded(w.facts()) if isinstance(f, JobPlacement)]
    assert [(p.job_id, [h.name for h in p.hosts]) for p in placed] == [
        ("4242", [a, b]),
        ("4244", [a, "ghost-01"]),
    ]
    verdicts = {v.job_id: v for v in decoded(w.verdicts())}
    assert (verdicts["4242"].state, verdicts["4242"].hosts) == (JobState.UNKNOWN, 2)  # no logs
    letters = [wire.decode_dead_letter(m.value or b"") for m in w.dead_letters()]
    assert {m.key for m in w.dead_letters()} == {w.topic(topics.RAW_SCHEDULER).encode()}
    assert [x["reason"].split(":")[0] for x in letters] == ["scheduler", "placement"]
    assert letters[0]["key"] == b"4243" and letters[0]["value"] == b"{not json"
    assert "job 4244: 1 of its 2 hosts are not in cables.csv (ghost-01)" in letters[1]["reason"]
    assert w.processor.counters["placements"] == 2


def test_a_scheduler_record_delivered_again_is_no_second_fact_but_a_change_is(
    tmp_path: Path, scenario: Scenario
) -> None:
    """At-least-once delivery: a worker restarted before its offset was committed reads the
    record again, and the store must not count the placement twice."""
    w = make_worker(tmp_path, scenario.fabric)
    a, b = scenario.fabric.hosts()[:2]
    record = _scontrol("4242", [a, b])
    ended = record.replace(b"JobState=RUNNING", b"JobState=COMPLETED")

    async def go() -> None:
        async with Agent(w) as agent:
            for value in (record, record, ended, ended):
                await agent.put(value, b"4242", topics.RAW_SCHEDULER)
            await agent.drain()

    run(go())
    placed = [f for f in decoded(w.facts()) if isinstance(f, JobPlacement)]
    assert [p.state for p in placed] == ["RUNNING", "COMPLETED"]
    view = saved_view(w, "4242")
    assert view.knows(placed[-1]) and not view.knows(placed[0])


class DeadLetters:
    """A replay sink that keeps the dead letters only."""

    def __init__(self) -> None:
        self.rows: list[DeadLetter] = []

    def write_dead_letters(self, rows: Any) -> None:
        self.rows.extend(rows)

    def __getattr__(self, name: str) -> Any:
        return lambda rows: None


def test_a_logs_env_dump_naming_an_uncabled_host_is_dead_lettered_as_the_replay_does(
    tmp_path: Path,
) -> None:
    """A job's own env dump places it like a scheduler record: a host `cables.csv` does not
    hold is a dead letter with the reason, the cabled one still places the job, and the worker
    says so for the same lines in the same words as the embedded replay."""
    cap = tmp_path / "cap"
    (cap / "logs" / "7").mkdir(parents=True)
    (cap / "cables.csv").write_text(
        "side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name\n"
        "gpu1,dcim.interface,mlx5_0,leaf1,dcim.interface,swp1\n"
        "gpu2,dcim.interface,mlx5_0,leaf1,dcim.interface,swp2\n"
    )
    # A node list, then the dump of a process on a host the plan lacks, ending the file (the
    # shipper's message): a job that hung right after printing its environment. The stamped
    # line dates them: a job whose logs show no time at all could place nothing in time.
    lines = [
        "[2026-05-12 09:00:00] starting job 7",
        "SLURM_JOB_ID=7",
        "SLURM_JOB_NODELIST=gpu1,ghost-01",
        "SLURMD_NODENAME=ghost-02",
    ]
    (cap / "logs" / "7" / "slurm-7.out").write_text("\n".join(lines) + "\n")
    capture = open_capture(cap)
    replayed = DeadLetters()
    report = replay(capture, cast(Sink, replayed))
    expected = [f"placement: {d.source} line {d.line_no}: {d.reason}" for d in replayed.rows]
    assert len(expected) == 2
    assert "line 3: job 7: 1 of its 2 hosts are not in cables.csv (ghost-01)" in expected[0]
    assert "line 2: job 7: 1 of its 1 hosts are not in cables.csv (ghost-02)" in expected[1]

    w = make_worker(tmp_path, capture.fabric)

    async def go() -> None:
        async with Agent(w) as agent:
            batch = wire.LogBatch("7", "logs/7/slurm-7.out", 1, tuple(lines), 2026)
            await agent.put_batches([batch])
            await agent.drain()

    run(go())
    letters = [wire.decode_dead_letter(m.value or b"") for m in w.dead_letters()]
    assert [x["reason"] for x in letters] == expected
    assert w.processor.counters["dead_letters"] == 2
    placed = [f for f in decoded(w.facts()) if isinstance(f, JobPlacement)]
    assert [[h.name for h in p.hosts] for p in placed] == [["gpu1", "ghost-01"], ["ghost-02"]]
    verdict = w.processor.correlator.verdict_of("7")
    assert verdict is not None
    assert [(v.state, v.hosts) for v in report.verdicts] == [(verdict.state, verdict.hosts)]


def test_a_job_that_ended_unseen_is_stored_ended_between_its_last_two_polls(
    tmp_path: Path, scenario: Scenario
) -> None:
    """The collector's word that Slurm forgot a running job between two polls: the job's
    latest placement is ENDED, with the bounds of its end, on the hosts it ran on."""
    w = make_worker(tmp_path, scenario.fabric)
    a, b = scenario.fabric.hosts()[:2]

    async def go() -> None:
        async with Agent(w) as agent:
            for value in (_scontrol("4242", [a, b]), _scontrol("4242", [a, b], gone_ns=9)):
                await agent.put(value, b"4242", topics.RAW_SCHEDULER)
            await agent.drain()

    run(go())
    running, ended = [f for f in decoded(w.facts()) if isinstance(f, JobPlacement)]
    assert (running.state, running.end_ns, running.last_seen_ns) == ("RUNNING", None, None)
    assert (ended.state, ended.last_seen_ns, ended.end_ns) == ("ENDED", 1, 9)
    assert ended.hosts == running.hosts and ended.origin == running.origin


def test_the_workers_give_a_kernel_log_the_host_its_shipper_named_in_the_source() -> None:
    """`railtrace collect logs` names a file `logs/<job>/<node>:<path>`; `dmesg -T` lines name
    no host, so the worker's parser takes the node from there, and keeps it once saved."""
    line = "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 79, GPU has fallen off the bus."
    batch = wire.LogBatch("j1", "logs/j1/gpu7:/var/log/dmesg.log", 1, (line,), 2024)
    named = SourceHosts(["gpu7", "gpu8"])
    parsers = JobParsers(named, UTC)
    (xid,) = parsers.parser(batch).feed(line, 1)
    assert isinstance(xid, XidEvent) and xid.host == "gpu7"
    restored = JobParsers.restore(named, UTC, orjson.loads(orjson.dumps(parsers.snapshot())))
    (again,) = restored.parser(batch).feed(line.replace("79", "48"), 2)
    assert isinstance(again, XidEvent) and again.host == "gpu7"


def test_the_workers_read_zoneless_stamps_in_the_site_zone_also_after_a_restore() -> None:
    line = "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 79, GPU has fallen off the bus."
    batch = wire.LogBatch("j1", "logs/j1/gpu7:/var/log/dmesg.log", 1, (line,), 2024)
    named, berlin = SourceHosts(["gpu7"]), ZoneInfo("Europe/Berlin")
    parsers = JobParsers(named, berlin)
    (xid,) = parsers.parser(batch).feed(line, 1)
    summer_utc = int(datetime(2024, 7, 31, 21, 14, 18, tzinfo=UTC).timestamp()) * 10**9
    assert xid.ts_ns == summer_utc  # Berlin is UTC+2 in July
    restored = JobParsers.restore(named, berlin, orjson.loads(orjson.dumps(parsers.snapshot())))
    # Another GPU: the same one lost again at the same time would be the same loss.
    (again,) = restored.parser(batch).feed(line.replace("00:05", "00:06"), 2)
    assert again.ts_ns == summer_utc


def test_a_verdict_judged_before_the_timer_rejudged_the_job_is_sent_as_the_job_is_now(
    tmp_path: Path, scenario: Scenario, hung: JobLogs
) -> None:
    """A batch judges its jobs, then waits on the broker for its facts before it sends the
    verdicts. The timer may run in that wait, re-judge a job on link events that arrived
    meanwhile and send the newer verdict; the batch's older one, sent after it, was then the
    job's last word at the sink (a streamed gpu-xid verdict kept stale candidates so)."""
    assert scenario.fault_link is not None and scenario.fault_at_ns is not None
    w = make_worker(tmp_path, scenario.fabric)
    down = _fault_down(scenario)
    judged: list[Verdict] = []

    async def go() -> None:
        async with Agent(w) as agent:
            await agent.put_batches(hung.batches())
            await agent.drain()
            older = w.processor.correlator.verdict_of(hung.job_id)
            assert older is not None
            judged.append(older)
            # Link events arrive and the timer re-judges and sends...
            w.processor.history.add(scenario.fault_link.link_id, down)
            await w.processor._reevaluate()
            # ...and the waiting batch now sends what it had judged.
            await w.processor._delivered(await w.processor._send_verdicts([older]))

    run(go())
    newer = w.processor.correlator.verdict_of(hung.job_id)
    assert newer is not None and newer != judged[0], "the timer changed nothing: proves nothing"
    assert newer.cause_link == scenario.fault_link
    last = list(decoded(w.verdicts()[-1:]))
    assert last == [newer]
