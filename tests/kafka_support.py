"""The real Kafka broker behind one gate, and railtrace's streaming processes around it.

Tests that need the broker skip when none answers on this machine, and fail in CI (CI set;
tests/gates.py), where `make test` starts one (deploy/kafka/kafka.sh). Every test gets its own
topic prefix and consumer-group ids, so tests never see each other's records.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gates
import orjson

from railtrace.store import read_owner

BOOTSTRAP = os.environ.get("RAILTRACE_TEST_KAFKA", "127.0.0.1:9092")
ARTIFACTS = Path(
    os.environ.get(
        "RAILTRACE_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"
    )
)
RAILTRACE = str(Path(sys.executable).with_name("railtrace"))


def broker_answers(bootstrap: str = BOOTSTRAP) -> bool:
    host, port = bootstrap.split(",", maxsplit=1)[0].rsplit(":", 1)
    try:
        # A broker busy on a loaded machine may take seconds to answer: that is not "none".
        with socket.create_connection((host, int(port)), timeout=10) as s:
            body = struct.pack(">hhih", 18, 0, 1, 5) + b"probe"
            s.sendall(struct.pack(">i", len(body)) + body)
            return len(s.recv(4)) == 4
    except OSError:
        return False


def broker_is_ours() -> bool:
    """Whether the test broker is the one deploy/kafka/kafka.sh runs (on RAILTRACE_KAFKA_PORT),
    so that a test may stop and restart it."""
    return f"127.0.0.1:{os.environ.get('RAILTRACE_KAFKA_PORT', '9092')}" == BOOTSTRAP


KAFKA_SH = Path(__file__).resolve().parents[1] / "deploy" / "kafka" / "kafka.sh"


def run_kafka_sh(command: str) -> subprocess.CompletedProcess[str]:
    """deploy/kafka/kafka.sh `command` on the test broker, bounded, with what it printed (the
    broker's log when it fails), for tests that stop or restart the broker."""
    return subprocess.run(
        [str(KAFKA_SH), command], capture_output=True, text=True, timeout=300, check=False
    )


def require_broker() -> str:
    gates.require(
        "kafka",
        broker_answers,
        f"a Kafka broker at {BOOTSTRAP} (`make test` starts one; deploy/kafka/kafka.sh start)",
    )
    return BOOTSTRAP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Stack:
    """One isolated streaming deployment: its settings as environment variables, and where
    each process started with a port of its own serves /metrics and /healthz (by name)."""

    env: dict[str, str]
    api: str
    data: Path
    workdir: Path
    procs: list[subprocess.Popen[bytes]]
    probes: dict[str, str] = field(default_factory=dict)

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: PLW1510 - return codes are asserted
            [RAILTRACE, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def start(
        self, *args: str, name: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start `railtrace *args`, logging to `<name>.log`; `env` adds to the stack's."""
        log = (self.workdir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            [RAILTRACE, "--log-level", "INFO", *args],
            env=self.env | (env or {}),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def collector_settings(self, role_toml: str) -> Path:
        """A settings file for a `railtrace collect ...` process producing to this stack's
        topics, with `role_toml` (its own `[collect.<role>]` section) added."""
        path = self.workdir / "collect.toml"
        path.write_text(
            f"""
[kafka]
bootstrap_servers = "{BOOTSTRAP}"
topic_prefix = "{self.env["RAILTRACE_KAFKA__TOPIC_PREFIX"]}"

[collect]
spool_dir = "{self.workdir / "spool"}"

{role_toml}"""
        )
        return path

    def get(self, path: str) -> Any:
        """GET JSON from the sink's API with the read token its owner file hands this
        machine's CLI (none before the API is up: /readyz needs none)."""
        return orjson.loads(self.get_bytes(path))

    def own_probe(self, name: str, section: str) -> dict[str, str]:
        """The environment that gives process `name` a free port for its /metrics and
        /healthz (the `metrics_listen` of settings section `section`), noted in `probes`."""
        address = f"127.0.0.1:{free_port()}"
        self.probes[name] = f"http://{address}"
        return {f"RAILTRACE_{section}__METRICS_LISTEN": address}

    def probe(self, name: str, path: str) -> tuple[int, bytes]:
        """GET `path` (/metrics, /healthz) from process `name`'s own endpoint: the status,
        503 included, and the body."""
        try:
            with urllib.request.urlopen(self.probes[name] + path, timeout=10) as resp:
                return resp.status, bytes(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def get_bytes(self, path: str) -> bytes:
        owner = read_owner(self.data)
        request = urllib.request.Request(
            self.api + path, headers=owner.auth_headers() if owner else {}
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            return bytes(resp.read())

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                self.get("/readyz")
                return
            time.sleep(0.5)
        raise AssertionError(f"the sink's API never answered:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.workdir.glob("*.log"))
        )

    def troubles(self, per_log: int = 4) -> str:
        """The last warnings, errors and crashes of each process, short: what a failure's
        first lines should show, since CI keeps only the head and tail of a long failure."""
        marks = re.compile(r"^(warning|error|critical)\b|Traceback|crashed", re.IGNORECASE)
        out = []
        for p in sorted(self.workdir.glob("*.log")):
            lines = p.read_text(errors="replace").splitlines()
            hits = [line[:300] for line in lines if marks.search(line)][-per_log:]
            out.append(f"{p.stem}: " + (" | ".join(hits) if hits else "no warnings"))
        return "\n".join(out)

    def keep_logs(self, name: str) -> Path:
        """Copy the processes' whole logs to test-artifacts/<name>/, which outlives pytest's
        rotation of its temporary folders, for a failure that needs more than the tail."""
        kept = ARTIFACTS / name
        kept.mkdir(parents=True, exist_ok=True)
        for log in self.workdir.glob("*.log"):
            shutil.copyfile(log, kept / log.name)
        return kept


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 20) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@contextlib.contextmanager
def stack(tmp: Path, topology: Path, workers: int = 1, **settings: str) -> Iterator[Stack]:
    """Start `workers` processing workers and one sink serving the API; stop them after.
    `settings` are extra RAILTRACE_ environment variables."""
    run_id = uuid.uuid4().hex[:10]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env.update(
        RAILTRACE_KAFKA__BOOTSTRAP_SERVERS=BOOTSTRAP,
        RAILTRACE_KAFKA__TOPIC_PREFIX=f"t{run_id}",
        RAILTRACE_WORKER__APP_ID=f"a{run_id}",
        RAILTRACE_WORKER__DATA_DIR=str(tmp / "worker-state"),
        RAILTRACE_WORKER__TOPOLOGY_DIR=str(topology),
        RAILTRACE_WORKER__REEVALUATE_EVERY_S="0.5",
        RAILTRACE_STORE__DATA_DIR=str(tmp / "sink-data"),
        # Any free port, unless a process is given one (its probe is then known): processes
        # of one stack, or of tests running side by side, must not ask for the same.
        RAILTRACE_WORKER__METRICS_LISTEN="127.0.0.1:0",
        RAILTRACE_SINK__METRICS_LISTEN="127.0.0.1:0",
        COLUMNS="200",
        **settings,
    )
    s = Stack(env, f"http://127.0.0.1:{port}", tmp / "sink-data", tmp, [])
    try:
        for i in range(workers):
            s.start("worker", name=f"worker{i}", env=s.own_probe(f"worker{i}", "WORKER"))
        s.start(
            "sink", "--serve", "--port", str(port), name="sink", env=s.own_probe("sink", "SINK")
        )
        s.wait_ready()
        yield s
    finally:
        for proc in s.procs:
            stop(proc)


def group_offsets(group: str, topic_names: list[str]) -> tuple[int, int]:
    """(messages committed by consumer group `group`, messages in) over `topic_names`."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    async def offsets() -> tuple[int, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
        consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP)
        await admin.start()
        await consumer.start()
        try:
            tps = [
                TopicPartition(t, p)
                for t in topic_names
                for p in sorted(consumer.partitions_for_topic(t) or await _partitions(consumer, t))
            ]
            ends = await consumer.end_offsets(tps)
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
            done = sum(
                committed[tp].offset if tp in committed and committed[tp].offset >= 0 else 0
                for tp in tps
            )
            return done, sum(ends.values())
        finally:
            await consumer.stop()
            await admin.close()

    return asyncio.run(offsets())


def group_lag(group: str, topic_names: list[str]) -> int:
    """Messages of `topic_names` not yet committed by consumer group `group`."""
    done, total = group_offsets(group, topic_names)
    return total - done


async def _partitions(consumer: Any, topic: str) -> set[int]:
    await consumer._client.force_metadata_update()
    return consumer.partitions_for_topic(topic) or set()


async def read_topic(topic: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) on `topic` now, partition by partition, each in its order; empty
    when the topic does not exist (yet)."""
    return [(r.key or b"", r.value or b"") for r in await read_records(topic)]


async def read_records(topic: str) -> list[Any]:
    """Every record (aiokafka's ConsumerRecord: key, value, timestamp...) on `topic` now, as
    `read_topic` orders them."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in sorted(await _partitions(consumer, topic))]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        out: list[Any] = []
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                out += records
        return out
    finally:
        await consumer.stop()


def pipeline_lags(s: Stack) -> dict[str, tuple[int, int]]:
    """Per stage (telemetry, logs, sink): (messages its consumer group committed, messages in
    the topics it reads)."""
    prefix, app = s.env["RAILTRACE_KAFKA__TOPIC_PREFIX"], s.env["RAILTRACE_WORKER__APP_ID"]
    out = [
        f"{prefix}.{t}"
        for t in ("link-samples.v2", "link-events.v1", "job-facts.v1", "verdicts.v1")
    ]
    return {
        "telemetry": group_offsets(
            f"{app}-telemetry", [f"{prefix}.raw.gnmi.v1", f"{prefix}.raw.snmp.v1"]
        ),
        "logs": group_offsets(app, [f"{prefix}.raw.logs.v1", f"{prefix}.raw.scheduler.v1"]),
        "sink": group_offsets(f"{app}-sink", out),
    }


def wait_drained(s: Stack, timeout: float = 180) -> None:
    """Until the workers have consumed the raw topics and the sink everything they wrote."""
    deadline = time.monotonic() + timeout
    lags: dict[str, int] = {}
    while time.monotonic() < deadline:
        lags = {stage: total - done for stage, (done, total) in pipeline_lags(s).items()}
        if not any(lags.values()):
            return
        time.sleep(1)
    raise AssertionError(f"the pipeline did not drain in {timeout} s: lags {lags}\n{s.logs()}")


def streamed_verdicts(s: Stack, job_ids: list[str]) -> dict[str, Any]:
    """The API's verdict of each of `job_ids` it has one for."""
    got: dict[str, Any] = {}
    for job_id in job_ids:
        try:
            got[job_id] = s.get(f"/v1/jobs/{job_id}/verdict")
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
    return got


#: How long the pipeline may sit still (no consumer group committing anything) before the
#: verdicts it has stored are taken as its answer.
STILL_S = 90
#: The most any one wait takes, however busy the machine: inside pytest's own 600 s per test
#: (pyproject.toml), with room for the capture and the stack to be made first, so that a wait
#: that never ends fails with what differs rather than with pytest-timeout's stack dump.
CEILING_S = 450


def wait_for_verdicts(s: Stack, expected: dict[str, Any], name: str) -> dict[str, Any]:
    """Until the API serves exactly `expected` (job id -> verdict), failing the test with
    what differs once the pipeline has stopped moving without getting there.

    The deadline follows the pipeline, not the wall clock: while any stage still commits,
    the wait goes on (a fixed four minutes ran out on a busy machine with the workers
    still reading), and it ends STILL_S after the last commit. The failure's first line
    names the jobs and fields that differ (CI shows little more) and the whole process logs
    are kept in test-artifacts/`name`/."""
    start = moved = time.monotonic()
    got: dict[str, Any] = {}
    position: dict[str, tuple[int, int]] = {}
    probed = 0.0
    while True:
        now = time.monotonic()
        try:
            got = streamed_verdicts(s, sorted(expected))
        except urllib.error.HTTPError:
            raise  # the API answered, and not with a verdict or a 404
        except (TimeoutError, ConnectionError, urllib.error.URLError):
            pass  # the sink busy writing (its API shares the process): ask again
        else:
            if got == expected:
                return got
        if now - probed >= 5:
            probed = now
            latest = pipeline_lags(s)
            if latest != position:
                position, moved = latest, now
        if now - moved > STILL_S or now - start > CEILING_S:
            break
        time.sleep(1)
    lags = {stage: total - done for stage, (done, total) in position.items()}
    why = f"still for {STILL_S} s" if now - moved > STILL_S else f"still moving at {CEILING_S} s"
    diff = differences(got, expected)
    first = brief(diff)
    kept = s.keep_logs(name)
    raise AssertionError(
        f"{len(diff)} of {len(expected)} streamed verdicts differ after "
        f"{now - start:.0f} s, pipeline {why}, lags {lags}: {first}\n"
        f"{s.troubles()}\n{diff}\nwhole logs in {kept}\n{s.logs()}"
    )


def brief(diff: dict[str, Any]) -> str:
    """`differences` on one line: per job the fields that differ, with got->wanted values
    when they are short."""
    parts = []
    for job, d in diff.items():
        if not isinstance(d, dict):
            parts.append(f"{job}: {'missing' if d[0] is None else 'not expected'}")
            continue
        fields = [
            f"{k}={g!r}->{e!r}" if len(repr(g)) + len(repr(e)) < 60 else k
            for k, (g, e) in sorted(d.items())
        ]
        parts.append(f"{job}: {', '.join(fields)}")
    return "; ".join(parts)


def differences(got: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """Per job, the fields whose streamed value differs from the expected one: (got, want)."""
    out: dict[str, Any] = {}
    for job in sorted(set(got) | set(expected)):
        g, e = got.get(job), expected.get(job)
        if g == e:
            continue
        if not isinstance(g, dict) or not isinstance(e, dict):
            out[job] = (g, e)
            continue
        out[job] = {
            k: (g.get(k), e.get(k)) for k in sorted(set(g) | set(e)) if g.get(k) != e.get(k)
        }
    return out


def wait_members(group: str, count: int, timeout: float = 90) -> None:
    """Until consumer group `group` has `count` members with partitions assigned."""
    from aiokafka.admin import AIOKafkaAdminClient

    async def members() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
        await admin.start()
        try:
            described = await admin.describe_consumer_groups([group])
            for g in described:
                # (error_code, group_id, state, protocol_type, protocol, members, ...)
                for entry in getattr(g, "groups", []):
                    if entry[2] == "Stable":
                        return len(entry[5])
            return 0
        finally:
            await admin.close()

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if asyncio.run(members()) >= count:
            return
        time.sleep(1)
    raise AssertionError(f"consumer group {group} never had {count} stable members")
