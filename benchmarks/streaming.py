"""Benchmark: how many raw gNMI messages per second worker processes turn into link samples,
per worker and per partition.

Run (with a broker up: deploy/kafka/kafka.sh start):
    .venv/bin/python benchmarks/streaming.py [--nodes 288] [--messages 200000]
        [--workers 1] [--partitions 4]
Publishes a backlog of one-port-sample gnmic `json` messages (the counters subtree of one
interface each, as switches send them) for every switch port of the reference design onto a
fresh raw gNMI topic with `--partitions` partitions, then starts `--workers` `railtrace worker`
processes in one consumer group and measures how fast they drain the backlog (the group's
committed offsets against the end offsets), which bounds the sustainable rate; compares it with
the design target (every port sampled once a second).

With several workers it also shows how the group divided the partitions (each member's share,
read from the group coordinator) and each partition's own drain rate: scaling out is only as
even as the switches' spread over partitions. The clock starts once every worker holds
partitions and has committed since, so a worker that started first and drained alone is not
counted as the group's pace.
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
from dataclasses import dataclass
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
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


@dataclass(frozen=True, slots=True)
class GroupState:
    """One look at the telemetry consumer group: what each partition has left and has
    committed, and which partitions each member holds (empty while it rebalances)."""

    at: float
    left: dict[int, int]
    committed: dict[int, int]
    members: dict[str, tuple[int, ...]]
    stable: bool


async def group_state(settings: KafkaSettings, group: str) -> GroupState:
    topic = topics.name(settings.topic_prefix, topics.RAW_GNMI)
    tps = [TopicPartition(topic, p) for p in range(settings.partitions)]
    admin = AIOKafkaAdminClient(**kafka.client_kwargs(settings))
    await admin.start()
    try:
        try:
            offsets = await admin.list_consumer_group_offsets(group, partitions=tps)
            described = await admin.describe_consumer_groups([group])
        except GroupCoordinatorNotAvailableError:
            offsets, described = {}, []  # the group has not formed yet: nothing consumed
        consumer = AIOKafkaConsumer(**kafka.client_kwargs(settings))
        await consumer.start()
        try:
            ends = await consumer.end_offsets(tps)
        finally:
            await consumer.stop()
    finally:
        await admin.close()
    committed = {tp.partition: max(0, offsets[tp].offset) if tp in offsets else 0 for tp in tps}
    members: dict[str, tuple[int, ...]] = {}
    stable = False
    for response in described:
        for g in response.groups:  # (error, id, state, protocol type, protocol, members, ...)
            stable = g[2] == "Stable"
            for member in g[5]:  # (member id, client id, host, metadata, assignment)
                held = ConsumerProtocolMemberAssignment.decode(member[4]) if member[4] else None
                members[member[0]] = tuple(
                    sorted(tp.partition for tp in held.partitions() if tp.topic == topic)
                    if held
                    else ()
                )
    return GroupState(
        time.monotonic(),
        {tp.partition: ends[tp] - committed[tp.partition] for tp in tps},
        committed,
        members,
        stable,
    )


def measure(settings: KafkaSettings, group: str, workers: int) -> list[GroupState]:
    """Look at the group every second until the backlog is drained (or 10 minutes pass); the
    first look returned is the clock's start: every worker holds partitions and each partition
    has committed since they were divided."""
    looks: list[GroupState] = []
    divided: GroupState | None = None
    began = time.monotonic()
    while True:
        time.sleep(1)
        look = asyncio.run(group_state(settings, group))
        if divided is None:
            if sum(look.left.values()) == 0:
                raise SystemExit("the backlog was drained before every worker held partitions")
            if look.at - began > 600:
                raise SystemExit(f"the group never had {workers} members holding partitions")
            holding = [m for m in look.members.values() if m]
            if look.stable and len(holding) == workers:
                divided = look
            continue
        if look.members != divided.members:  # divided again (a worker restarted): start over
            divided, looks = None, []
            continue
        # Every partition with work left has committed since the division (a partition no
        # switch hashes to never commits).
        if not looks and any(
            look.left[p] > 0 and look.committed[p] == divided.committed[p] for p in look.left
        ):
            continue
        looks.append(look)
        if sum(look.left.values()) == 0 or look.at - looks[0].at > 600:
            return looks


def report(looks: list[GroupState], ports: int, workers: int) -> None:
    first, last = looks[0], looks[-1]
    # Each partition's pace: from the start to the first look that found it drained.
    done_at = {
        p: next((lk.at for lk in looks if lk.left[p] == 0), last.at) for p in first.committed
    }
    drained = {p: last.committed[p] - first.committed[p] for p in first.committed}
    took = max(done_at.values()) - first.at
    total = sum(drained.values())
    who = "one worker" if workers == 1 else f"{workers} workers"
    print(
        f"{who} drained {total:,} messages in {took:.1f} s: {total / took:,.0f} messages/s "
        f"= {total / took / ports:.2f}x target"
    )
    if workers == 1 and len(first.committed) == 1:
        return
    for n, (member, held) in enumerate(sorted(first.members.items(), key=lambda m: m[1]), 1):
        mine = sum(drained[p] for p in held)
        span = max((done_at[p] for p in held), default=first.at) - first.at
        rate = f"{mine / span:,.0f} messages/s" if span > 0 else "nothing to drain"
        print(
            f"  worker {n} ({member[:24]}...): partitions {list(held)}, {mine:,} messages, {rate}"
        )
    for p in sorted(drained):
        span = done_at[p] - first.at
        rate = f"{drained[p] / span:,.0f}/s" if span > 0 else "-"
        print(f"  partition {p}: {drained[p]:,} messages in {span:.1f} s, {rate}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--nodes", type=int, default=288)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=1, help="worker processes in the group")
    ap.add_argument("--partitions", type=int, default=KafkaSettings().partitions)
    ap.add_argument(
        "--profile",
        metavar="OUT",
        help="record the (first) worker with py-spy into OUT (speedscope JSON)",
    )
    args = ap.parse_args()
    if args.workers < 1 or args.partitions < 1:
        ap.error("--workers and --partitions must be at least 1")
    run = uuid.uuid4().hex[:8]
    env = {
        **os.environ,
        "RAILTRACE_KAFKA__TOPIC_PREFIX": f"bench{run}",
        "RAILTRACE_KAFKA__PARTITIONS": str(args.partitions),
        "RAILTRACE_WORKER__APP_ID": f"bench{run}",
    }
    settings = KafkaSettings(topic_prefix=f"bench{run}", partitions=args.partitions)
    ports = switch_ports(args.nodes)
    print(
        f"design: {args.nodes} nodes, {len(ports):,} switch ports; target at 1 s sampling: "
        f"{len(ports):,} messages/s; {args.partitions} partitions, {args.workers} worker(s)"
    )
    rate = asyncio.run(publish(settings, ports, args.messages))
    print(f"backlog: {args.messages:,} messages published at {rate:,.0f}/s")
    with tempfile.TemporaryDirectory() as tmp:
        topo = Path(tmp) / "topo"
        topo.mkdir()
        (topo / "cables.csv").write_text(format_cables_csv(rail_optimized(args.nodes).plan))
        command = [
            str(Path(sys.executable).with_name("railtrace")),
            "worker",
            "--topology",
            str(topo),
        ]
        procs = []
        try:
            for n in range(args.workers):
                argv = command
                if args.profile and n == 0:
                    spy = str(Path(sys.executable).with_name("py-spy"))
                    argv = [spy, "record", "-f", "speedscope", "-o", args.profile, "--", *command]
                worker_env = env | {
                    "RAILTRACE_WORKER__DATA_DIR": str(Path(tmp) / f"state{n}"),
                    "RAILTRACE_WORKER__INSTANCE_ID": f"bench-worker-{n}",
                    "RAILTRACE_WORKER__METRICS_LISTEN": "127.0.0.1:0",
                }
                log = (Path(tmp) / f"worker{n}.log").open("wb")
                procs.append(
                    subprocess.Popen(
                        argv,
                        env=worker_env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
                log.close()  # the worker holds its own copy
            try:
                looks = measure(settings, f"bench{run}-telemetry", args.workers)
            except SystemExit:
                for n, proc in enumerate(procs):
                    if proc.poll() is not None:
                        tail = (Path(tmp) / f"worker{n}.log").read_text()[-2000:]
                        print(f"worker {n} exited with {proc.returncode}:\n{tail}")
                raise
            report(looks, len(ports), args.workers)
        finally:
            # py-spy writes its profile on SIGINT; the worker stops cleanly on either.
            for proc in procs:
                os.killpg(proc.pid, signal.SIGINT if args.profile else signal.SIGTERM)
            for proc in procs:
                proc.wait(30)


if __name__ == "__main__":
    main()
