"""Benchmarks of the live path: a worker and a sink (serving the API) against the real broker.

Run (with a broker up: deploy/kafka/kafka.sh start):
    .venv/bin/python benchmarks/live.py latency [--hangs 30]
    .venv/bin/python benchmarks/live.py recovery [--kills 20] [--nodes 288] [--dynamic]

latency: a simulated 64-node link-down incident is streamed once; then, `--hangs` times, the
same job's logs are published under a fresh job id up to each file's first watchdog-timeout
line, and once that job's verdict is in the store the remaining lines go out. Measured: from
the broker's acknowledgement of those last lines to the job's final verdict readable through
the API.

recovery: every switch port of the reference design sends a counters message once a second,
timestamped with the wall clock, while a tail of the link-samples topic tracks how far behind
the pipeline's output is. `--kills` times: wait until the output is current, `kill -9` the
worker, start a new one at once, and time until the output holds input sent after the kill
and is current again (behind by less than 2 s). Workers use a stable `worker.instance_id`
(Kafka static membership) unless `--dynamic` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from railtrace import kafka
from railtrace.api.schemas import VerdictOut
from railtrace.kafka import topics
from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.replay.publish import log_batches
from railtrace.settings import KafkaSettings
from railtrace.simulate import Fault, write_capture
from railtrace.store import read_owner
from railtrace.streams import wire
from railtrace.topology import rail_optimized
from railtrace.topology.cabling import format_cables_csv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streaming import message, switch_ports  # a sibling benchmark script

RAILTRACE = str(Path(sys.executable).with_name("railtrace"))
CURRENT_S = 2.0


@dataclasses.dataclass
class Deployment:
    """A worker and a sink on their own topic prefix, logging into `workdir`."""

    env: dict[str, str]
    workdir: Path
    api: str
    procs: dict[str, subprocess.Popen[bytes]] = dataclasses.field(default_factory=dict)

    def start(self, name: str, *args: str) -> None:
        log = (self.workdir / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            [RAILTRACE, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        proc.wait(30)

    def get(self, path: str) -> Any:
        """GET with the read token the sink's owner file hands this machine's CLI."""
        owner = read_owner(Path(self.env["RAILTRACE_STORE__DATA_DIR"]))
        request = urllib.request.Request(
            self.api + path, headers=owner.auth_headers() if owner else {}
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            return orjson.loads(resp.read())

    def verdict(self, job_id: str) -> Any:
        try:
            return self.get(f"/v1/jobs/{job_id}/verdict")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise


@contextlib.contextmanager
def deployment(topology: Path, static: bool, serve: bool) -> Iterator[Deployment]:
    run = uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix="railtrace-live-"))
    port = 18000 + int(run[:4], 16) % 1000
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env.update(
        RAILTRACE_KAFKA__TOPIC_PREFIX=f"live{run}",
        RAILTRACE_WORKER__APP_ID=f"live{run}",
        RAILTRACE_WORKER__DATA_DIR=str(work / "worker"),
        RAILTRACE_WORKER__TOPOLOGY_DIR=str(topology),
        RAILTRACE_STORE__DATA_DIR=str(work / "store"),
    )
    if static:
        env["RAILTRACE_WORKER__INSTANCE_ID"] = f"bench-{run}"
    d = Deployment(env, work, f"http://127.0.0.1:{port}")
    try:
        d.start("worker", "worker")
        if serve:
            d.start("sink", "sink", "--serve", "--port", str(port))
            deadline = time.monotonic() + 120
            while True:
                with contextlib.suppress(OSError):
                    d.get("/readyz")
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"the sink never answered; logs in {work}")
                time.sleep(0.5)
        yield d
    finally:
        for name in list(d.procs):
            d.kill(name, signal.SIGTERM)


def _quantiles(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    p99 = values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]
    return (
        f"median {statistics.median(values):.2f} s, p95 {p95:.2f} s, p99 {p99:.2f} s, "
        f"max {values[-1]:.2f} s over {len(values)}"
    )


# -- hang to verdict --------------------------------------------------------------------------


def _wait(check: Any, timeout: float, what: str, poll: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(poll)
    raise SystemExit(f"timed out waiting for {what}")


def latency(hangs: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="railtrace-lat-"))
    cap = work / "cap"
    write_capture(cap, 64, Fault.LINK_DOWN, 7, watchdog_s=120)
    capture = open_capture(cap)
    (expected,) = [v for v in replay(capture, DiscardSink()).verdicts if v.stalled_at_ns]
    want = VerdictOut.from_record(expected).model_dump(mode="json")
    before, hang = _split_at_watchdog(
        b for b in log_batches(capture) if b.job_id == expected.job_id
    )
    print(
        f"incident: job {expected.job_id}: {sum(len(b.lines) for b in before):,} log lines, "
        f"then {sum(len(b.lines) for b in hang):,} from the first watchdog timeout on "
        f"({len(hang)} messages)"
    )
    with deployment(cap, static=False, serve=True) as d:
        settings = KafkaSettings(topic_prefix=d.env["RAILTRACE_KAFKA__TOPIC_PREFIX"])
        done = subprocess.run(
            [RAILTRACE, "replay", str(cap), "--kafka"], env=d.env, capture_output=True, check=False
        )
        if done.returncode:
            raise SystemExit(done.stderr.decode())
        _wait(lambda: d.verdict(expected.job_id) == want, 300, "the streamed verdict", 0.5)
        took = asyncio.run(_hangs(d, settings, before, hang, want, hangs))
    print(f"last hang line acknowledged -> final verdict in the store: {_quantiles(took)}")


def _split_at_watchdog(
    batches: Iterable[wire.LogBatch],
) -> tuple[list[wire.LogBatch], list[wire.LogBatch]]:
    """Each file's lines before its first watchdog-timeout line, and the rest."""
    before, hang = [], []
    for b in batches:
        k = next(
            (i for i, line in enumerate(b.lines) if "Watchdog caught collective" in line),
            len(b.lines),
        )
        if k:
            before.append(dataclasses.replace(b, lines=b.lines[:k]))
        if k < len(b.lines):
            hang.append(
                dataclasses.replace(b, first_line_no=b.first_line_no + k, lines=b.lines[k:])
            )
    return before, hang


async def _hangs(
    d: Deployment,
    settings: KafkaSettings,
    before: list[wire.LogBatch],
    hang: list[wire.LogBatch],
    want: dict[str, Any],
    hangs: int,
) -> list[float]:
    producer = AIOKafkaProducer(**kafka.producer_kwargs(settings))
    await producer.start()
    topic = topics.name(settings.topic_prefix, topics.RAW_LOGS)
    took = []
    try:
        for i in range(hangs):
            job = f"lat{i:04d}"

            def mine(batches: list[wire.LogBatch], job: str = job) -> list[wire.LogBatch]:
                return [
                    dataclasses.replace(b, job_id=job, source=b.source.replace(want["job_id"], job))
                    for b in batches
                ]

            final = {**want, "job_id": job}

            async def send(which: list[wire.LogBatch], job: str = job) -> None:
                futures = [
                    await producer.send(topic, wire.encode_log_batch(b), key=job.encode())
                    for b in which
                ]
                await asyncio.gather(*futures)

            await send(mine(before))
            first = await asyncio.to_thread(_wait, lambda j=job: d.verdict(j), 120, job)
            if first == final:
                raise SystemExit("the verdict was final before the watchdog lines")
            await send(mine(hang))
            t0 = time.perf_counter()
            await asyncio.to_thread(_wait, lambda j=job, f=final: d.verdict(j) == f, 120, job)
            took.append(time.perf_counter() - t0)
    finally:
        await producer.stop()
    return took


# -- recovery after kill -9 -------------------------------------------------------------------


class Load:
    """Every port's counters once a second (wall-clock timestamps) and a tail of the samples."""

    def __init__(self, settings: KafkaSettings, ports: list[tuple[str, str]]) -> None:
        self.settings = settings
        self.ports = ports
        self.newest_ns = 0
        self.rounds = 0

    async def publish(self, stop: asyncio.Event) -> None:
        producer = AIOKafkaProducer(
            **kafka.producer_kwargs(self.settings), linger_ms=20, max_batch_size=1024 * 1024
        )
        await producer.start()
        topic = topics.name(self.settings.topic_prefix, topics.RAW_GNMI)
        try:
            while not stop.is_set():
                started = time.monotonic()
                ts = time.time_ns()
                self.rounds += 1
                for device, iface in self.ports:
                    await producer.send(
                        topic, message(device, iface, ts, self.rounds), key=device.encode()
                    )
                await producer.flush()
                await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        finally:
            await producer.stop()

    async def tail(self, stop: asyncio.Event) -> None:
        consumer = AIOKafkaConsumer(
            topics.name(self.settings.topic_prefix, topics.LINK_SAMPLES),
            auto_offset_reset="latest",
            **kafka.client_kwargs(self.settings),
        )
        await consumer.start()
        try:
            while not stop.is_set():
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    for r in records:
                        rows = orjson.loads(r.value or b"[]")
                        if rows:
                            self.newest_ns = max(self.newest_ns, *(row[0] for row in rows))
        finally:
            await consumer.stop()

    def behind_s(self) -> float:
        return (time.time_ns() - self.newest_ns) / 1e9 if self.newest_ns else float("inf")


async def _recover(d: Deployment, load: Load, kills: int) -> list[float]:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(load.publish(stop)), asyncio.create_task(load.tail(stop))]
    took: list[float] = []
    try:
        for n in range(kills):
            current_since = None
            deadline = time.monotonic() + 300
            while current_since is None or time.monotonic() - current_since < 5:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the pipeline never caught up; logs in {d.workdir}")
                if load.behind_s() < CURRENT_S:
                    current_since = current_since or time.monotonic()
                else:
                    current_since = None
                await asyncio.sleep(0.1)
            t0, killed_ns = time.monotonic(), time.time_ns()
            await asyncio.to_thread(d.kill, "worker")
            d.start("worker", "worker")
            # Recovered: the output holds input sent after the kill, and is current again.
            while load.newest_ns < killed_ns or load.behind_s() >= CURRENT_S:
                if time.monotonic() - t0 > 300:
                    raise SystemExit(f"no recovery in 300 s; logs in {d.workdir}")
                await asyncio.sleep(0.05)
            took.append(time.monotonic() - t0)
            print(f"kill {n + 1}: current again after {took[-1]:.2f} s", flush=True)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    return took


def recovery(kills: int, nodes: int, static: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="railtrace-rec-"))
    (work / "cables.csv").write_text(format_cables_csv(rail_optimized(nodes).plan))
    ports = switch_ports(nodes)
    print(f"load: {len(ports):,} switch ports of the {nodes}-node design, each once a second")
    with deployment(work, static=static, serve=False) as d:
        settings = KafkaSettings(topic_prefix=d.env["RAILTRACE_KAFKA__TOPIC_PREFIX"])
        asyncio.run(kafka.ensure_topics(settings))
        took = asyncio.run(_recover(d, Load(settings, ports), kills))
    membership = "static membership" if static else "dynamic membership"
    print(f"kill -9 -> output current again ({membership}): {_quantiles(took)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--hangs", type=int, default=30)
    rec = sub.add_parser("recovery")
    rec.add_argument("--kills", type=int, default=20)
    rec.add_argument("--nodes", type=int, default=288)
    rec.add_argument("--dynamic", action="store_true")
    args = ap.parse_args()
    if args.what == "latency":
        latency(args.hangs)
    else:
        recovery(args.kills, args.nodes, static=not args.dynamic)


if __name__ == "__main__":
    main()
