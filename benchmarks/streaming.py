"""Benchmark: how many raw gNMI messages per second one worker process turns into link samples.

Run (with a broker up: deploy/kafka/kafka.sh start):
    .venv/bin/python benchmarks/streaming.py [--nodes 288] [--messages 200000]
Publishes a backlog of one-port-sample gnmic `json` messages (the counters subtree of one
interface each, as switches send them) for every switch port of the reference design onto a
fresh raw gNMI topic, then starts one `railtrace worker` and measures how fast it drains the
backlog (its consumer group's committed offsets against the end offsets), which bounds the
sustainable rate; compares it with the design target (every port sampled once a second).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import GroupCoordinatorNotAvailableError

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.settings import KafkaSettings
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.attrs import Role
from railtrace.topology.cabling import format_cables_csv
from railtrace.topology.fabric import Fabric


def switch_ports(nodes: int) -> list[tuple[str, str]]:
    return cabled_switch_ports(build_fabric(rail_optimized(nodes).plan))


def cabled_switch_ports(fabric: Fabric) -> list[tuple[str, str]]:
    """(switch, interface) of every cabled switch port: what a switch samples."""
    return sorted(
        (end.device, end.interface)
        for ref in fabric.links.values()
        for end in (ref.a, ref.b)
        if fabric.role(end.device) != Role.HOST
    )


def message(device: str, iface: str, ts: int, n: int) -> bytes:
    c = str(n * 45_000_000_000)
    return orjson.dumps(
        {
            "source": f"{device}:9339",
            "subscription-name": "port-counters",
            "timestamp": ts,
            "prefix": f"interfaces/interface[name={iface}]",
            "updates": [
                {
                    "Path": "state/counters",
                    "values": {
                        "state/counters": {
                            "in-octets": c,
                            "out-octets": c,
                            "in-errors": "0",
                            "in-discards": "0",
                            "out-discards": "0",
                        }
                    },
                }
            ],
        }
    )


async def publish(settings: KafkaSettings, ports: list[tuple[str, str]], total: int) -> float:
    await kafka.ensure_topics(settings)
    producer = AIOKafkaProducer(
        **kafka.producer_kwargs(settings), linger_ms=20, max_batch_size=1024 * 1024
    )
    await producer.start()
    topic = topics.name(settings.topic_prefix, topics.RAW_GNMI)
    started = time.perf_counter()
    ts0 = 1_780_000_000 * 10**9
    try:
        for i in range(total):
            device, iface = ports[i % len(ports)]
            second = i // len(ports)
            await producer.send(
                topic, message(device, iface, ts0 + second * 10**9, second), key=device.encode()
            )
        await producer.flush()
    finally:
        await producer.stop()
    return total / (time.perf_counter() - started)


async def lag(settings: KafkaSettings, group: str) -> int:
    admin = AIOKafkaAdminClient(**kafka.client_kwargs(settings))
    await admin.start()
    try:
        topic = topics.name(settings.topic_prefix, topics.RAW_GNMI)
        tps = [TopicPartition(topic, p) for p in range(settings.partitions)]
        try:
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
        except GroupCoordinatorNotAvailableError:
            committed = {}  # the group has not formed yet: nothing consumed
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(**kafka.client_kwargs(settings))
        await consumer.start()
        try:
            ends = await consumer.end_offsets(tps)
        finally:
            await consumer.stop()
        return sum(
            ends[tp] - max(0, committed.get(tp).offset if committed.get(tp) else 0) for tp in tps
        )
    finally:
        await admin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=288)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument(
        "--profile", metavar="OUT", help="record the worker with py-spy into OUT (speedscope JSON)"
    )
    args = ap.parse_args()
    run = uuid.uuid4().hex[:8]
    env = {
        **os.environ,
        "RAILTRACE_KAFKA__TOPIC_PREFIX": f"bench{run}",
        "RAILTRACE_WORKER__APP_ID": f"bench{run}",
    }
    settings = KafkaSettings(topic_prefix=f"bench{run}")
    ports = switch_ports(args.nodes)
    print(
        f"design: {args.nodes} nodes, {len(ports):,} switch ports; target at 1 s sampling: "
        f"{len(ports):,} messages/s"
    )
    rate = asyncio.run(publish(settings, ports, args.messages))
    print(f"backlog: {args.messages:,} messages published at {rate:,.0f}/s")
    with tempfile.TemporaryDirectory() as tmp:
        topo = Path(tmp) / "topo"
        topo.mkdir()
        (topo / "cables.csv").write_text(format_cables_csv(rail_optimized(args.nodes).plan))
        env["RAILTRACE_WORKER__DATA_DIR"] = str(Path(tmp) / "state")
        command = [
            str(Path(sys.executable).with_name("railtrace")),
            "worker",
            "--topology",
            str(topo),
        ]
        if args.profile:
            spy = str(Path(sys.executable).with_name("py-spy"))
            command = [spy, "record", "-f", "speedscope", "-o", args.profile, "--", *command]
        worker = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            started, first = None, None
            samples = []
            while True:
                time.sleep(1)
                left = asyncio.run(lag(settings, f"bench{run}-telemetry"))
                now = time.monotonic()
                if left < args.messages and started is None:
                    started, first = now, left
                samples.append((now, left))
                if left == 0 or (started and now - started > 600):
                    break
            assert started is not None and first is not None
            took = samples[-1][0] - started
            drained = first - samples[-1][1]
            print(
                f"one worker drained {drained:,} messages in {took:.1f} s: "
                f"{drained / took:,.0f} messages/s = {drained / took / len(ports):.2f}x target"
            )
        finally:
            # py-spy writes its profile on SIGINT; the worker stops cleanly on either.
            os.killpg(worker.pid, signal.SIGINT if args.profile else signal.SIGTERM)
            worker.wait(30)


if __name__ == "__main__":
    main()
