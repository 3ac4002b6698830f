"""The gNMI collector benchmark: updates/s decoded and spooled, beside a Go gNMI client."""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collector_runs import (
    HERE,
    Proc,
    acknowledged,
    appended,
    check_running,
    collect,
    cores,
    cpu_seconds,
    design,
    headroom,
    pinned,
    records,
    start,
    tail,
    wait_for,
    write_config,
)
from gnmi_target import (
    NOTIFICATIONS_PER_PORT_SAMPLE,
    UPDATES_PER_PORT_SAMPLE,
)

# -- gNMI ---------------------------------------------------------------------------------------


@dataclass
class Baseline:
    """A client run beside railtrace: its command, and what counts updates in its output."""

    name: str
    binary: str
    needle: bytes  # one occurrence per `per_needle` updates
    per_needle: float = 1.0

    def command(self, address: str) -> list[str]:
        if self.binary == sys.executable:  # the Python floor: gnmi_raw_reader.py
            return [self.binary, str(HERE / "gnmi_raw_reader.py"), address]
        if self.name.startswith("gnmic"):
            return [
                *(self.binary, "-a", address, "--insecure", "--format", "json", "subscribe"),
                *("--path", "/interfaces/interface/state/counters"),
                *("--path", "/interfaces/interface/ethernet/state/counters"),
                *("--mode", "stream", "--stream-mode", "sample", "--sample-interval", "1s"),
                *("--encoding", "proto"),
            ]
        return [
            *(self.binary, "-a", address, "-insecure", "-qt", "s"),
            *("-q", "interfaces/interface/state/counters", "-dt", "single", "-ts", "raw"),
        ]


def install(what: str) -> Baseline | None:
    script = HERE / "install-gnmic.sh"
    done = subprocess.run(
        ["bash", str(script), *([] if what == "gnmic" else [what])],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"  {what} not installed ({script.name}):")
        for line in done.stderr.strip().splitlines():
            print(f"    {line}")
        return None
    binary = done.stdout.strip()
    name = Path(binary).name.replace("-v", " v", 1)
    # gnmic's json format has one "Path" per update; gnmi_cli -dt single one line per update.
    return Baseline(name, binary, b'"Path"' if what == "gnmic" else b"\n")


def choose_baseline(choice: str) -> Baseline | None:
    if choice == "none":
        return None
    if choice in ("auto", "gnmic"):
        found = install("gnmic")
        if found is not None or choice == "gnmic":
            return found
        print("  falling back to openconfig's gnmi_cli as the Go baseline")
    return install("gnmi_cli")


#: grpcio reading raw bytes and nothing else: what no Python collector can go below.
FLOOR = Baseline(
    "grpcio read only",
    sys.executable,
    b"\n",
    UPDATES_PER_PORT_SAMPLE / NOTIFICATIONS_PER_PORT_SAMPLE,
)


def count_in(path: Path, start: int, end: int, needle: bytes) -> int:
    with path.open("rb") as f:
        f.seek(start)
        return f.read(end - start).count(needle)


@dataclass
class Side:
    """One client's figures over a measured window."""

    rate: float  # updates/s
    core: float  # cores the client's process used
    target_core: float  # cores the target used in the same window
    acked_rate: float | None = None  # updates/s acknowledged by Kafka (railtrace with --kafka)

    @property
    def per_core(self) -> float:
        return self.rate / self.core if self.core else 0.0


@dataclass
class GnmiResult:
    updates_per_s: float
    core: float
    per_core: float
    baseline_per_core: float | None


def start_target(stack: contextlib.ExitStack, tmp: Path, rate: float, cpu: int) -> tuple[Proc, str]:
    log = tmp / "target.log"
    command = [sys.executable, str(HERE / "gnmi_target.py"), "--rate", str(rate)]
    target = start(stack, command, log, cpu)
    wait_for("gNMI target", lambda: "listening " in tail(log), 20, target)
    return target, tail(log).split("listening ", 1)[1].split()[0]


def py_spy(pid: int, args: argparse.Namespace, cpu: int, log: Path) -> Proc:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [
                *(str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pid)),
                *("--duration", str(int(args.duration)), "--format", args.profile_format),
                *("--output", args.profile),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            preexec_fn=pinned(cpu),  # noqa: PLW1509
        )


def measure_gnmi(
    args: argparse.Namespace, tmp: Path, railtrace: bool, baseline: Baseline | None
) -> tuple[Side | None, Side | None]:
    """One window with the railtrace collector and/or the Go client subscribed."""
    mine, other = cores()
    spool = tmp / "spool" / "gnmi"
    out = tmp / "baseline.out"
    logs = (tmp / "collector.log", tmp / "baseline.err", tmp / "target.log")
    with contextlib.ExitStack() as stack:
        # The target gets the other core: the collector's core is its own.
        target, address = start_target(stack, tmp, args.rate, other)
        procs = {"target": target}
        if railtrace:
            section = "".join(
                f'[[collect.gnmi]]\nname = "sw-{i:02d}"\naddress = "{address}"\n'
                'profile = "openconfig"\nsample_interval_s = 1\ninsecure = true\n\n'
                for i in range(args.streams)
            )
            config = write_config(tmp / "railtrace.toml", args.kafka, section)
            procs["railtrace"] = collect(stack, config, "gnmi", mine)
        if baseline is not None:
            # Side by side the Go client shares the other core with the target; alone it gets
            # the collector's core.
            procs["baseline"] = start(
                stack, baseline.command(address), out, other if railtrace else mine, err=logs[1]
            )
        time.sleep(args.warmup)
        check_running(logs, *procs.values())
        spy = None
        if args.profile and railtrace:
            spy = py_spy(procs["railtrace"].pid, args, other, tmp / "py-spy.log")

        def snapshot() -> dict[str, float]:
            s = {"t": time.monotonic(), **{n: cpu_seconds(p.pid) for n, p in procs.items()}}
            if railtrace:
                s["seq"] = appended(spool)
                if args.kafka:
                    s["acked"] = acknowledged(spool)
            if baseline is not None:
                s["out"] = out.stat().st_size
            return s

        s0 = snapshot()
        time.sleep(args.duration)
        s1 = snapshot()
        if spy is not None:
            spy.wait(60)
    took = s1["t"] - s0["t"]
    target_core = (s1["target"] - s0["target"]) / took
    ours = theirs = None
    if railtrace:
        first, last = int(s0["seq"]), int(s1["seq"])
        updates = messages = 0
        for seq, message in records(spool):
            if first <= seq < last:
                messages += 1
                updates += len(orjson.loads(message.value).get("updates", ()))
        per_message = UPDATES_PER_PORT_SAMPLE / NOTIFICATIONS_PER_PORT_SAMPLE
        if messages != last - first:  # acknowledged records are gone: count by the structure
            updates = round((last - first) * per_message)
        ours = Side(updates / took, (s1["railtrace"] - s0["railtrace"]) / took, target_core)
        if args.kafka:
            ours.acked_rate = (s1["acked"] - s0["acked"]) * per_message / took
    if baseline is not None:
        got = count_in(out, int(s0["out"]), int(s1["out"]), baseline.needle) * baseline.per_needle
        theirs = Side(got / took, (s1["baseline"] - s0["baseline"]) / took, target_core)
    return ours, theirs


def report_gnmi(
    args: argparse.Namespace,
    baseline: Baseline | None,
    ours: Side,
    theirs: Side | None,
    floor: Side | None = None,
) -> GnmiResult:
    pace = f"{args.rate:,.0f} port-samples/s" if args.rate else "as fast as read"
    how = "alone" if theirs is None else "one at a time" if args.one_at_a_time else "side by side"
    print(
        f"  target: a 64-port switch, {UPDATES_PER_PORT_SAMPLE} updates per port-sample in "
        f"{NOTIFICATIONS_PER_PORT_SAMPLE} notifications (PROTO), {pace}; {args.streams} "
        f"stream(s) to railtrace; railtrace {how}; {args.duration:.0f} s windows after "
        f"{args.warmup:.0f} s of warm-up"
    )
    print(f"  {'':36}{'updates/s':>11}{'cores used':>12}{'updates/core-s':>16}{'target':>8}")
    rows = [("railtrace collect gnmi (to spool)", ours)]
    if baseline is not None and theirs is not None:
        rows.append((baseline.name + " (to a file)", theirs))
    if floor is not None:
        rows.append((FLOOR.name + " (Python floor)", floor))
    for name, side in rows:
        print(
            f"  {name:36}{side.rate:>11,.0f}{side.core:>12.2f}{side.per_core:>16,.0f}"
            f"{side.target_core:>8.2f}"
        )
    if ours.acked_rate is not None:
        print(f"  {'  acknowledged by Kafka':36}{ours.acked_rate:>11,.0f}")
    if baseline is not None and theirs is not None and theirs.per_core:
        short = baseline.name.split()[0]
        print(
            f"  ratio railtrace / {short}: {ours.per_core / theirs.per_core:.3f} per "
            f"core-second, {ours.rate / theirs.rate:.3f} in updates/s"
        )
        if floor is not None and floor.per_core:
            print(
                f"  ratio {FLOOR.name} / {short}: {floor.per_core / theirs.per_core:.3f} per "
                f"core-second; railtrace / {FLOOR.name}: {ours.per_core / floor.per_core:.3f}"
            )
        if theirs.core < 0.9:
            print(
                f"  ({short} used less than its core: the target's pace limited it, so its "
                "per-core figure is a lower bound and the ratio an upper bound)"
            )
    load = design(args.nodes)
    site = load.ports * UPDATES_PER_PORT_SAMPLE
    print(
        f"  {load.nodes}-node design: {load.switches} switches, {load.ports:,} ports; at 1 s "
        f"sampling {load.ports:,} port-samples/s x {UPDATES_PER_PORT_SAMPLE} = {site:,} "
        f"updates/s ({load.ports * NOTIFICATIONS_PER_PORT_SAMPLE:,} notifications/s)"
    )
    headroom("updates/s", ours.per_core, site, args.plan_utilization)
    switch = 64 * UPDATES_PER_PORT_SAMPLE
    if ours.per_core:
        print(
            f"    a 64-port switch at 1 s = {switch:,} updates/s: {ours.per_core / switch:.0f} "
            f"switches per process at 100% of a core, "
            f"{ours.per_core * args.plan_utilization / switch:.0f} at {args.plan_utilization:.0%}"
        )
    return GnmiResult(
        ours.rate, ours.core, ours.per_core, theirs.per_core if theirs is not None else None
    )


def bench_gnmi(args: argparse.Namespace) -> GnmiResult:
    where = f"to Kafka at {args.kafka}" if args.kafka else "spool only, no broker"
    print(f"\n== gNMI: one `railtrace collect gnmi` process ({where})")
    baseline = choose_baseline(args.baseline)
    theirs = None
    with tempfile.TemporaryDirectory(prefix="rt-bench-gnmi-") as tmp:
        ours, theirs = measure_gnmi(args, Path(tmp), True, None if args.one_at_a_time else baseline)
    if args.one_at_a_time and baseline is not None:
        with tempfile.TemporaryDirectory(prefix="rt-bench-gnmi-") as tmp:
            _, theirs = measure_gnmi(args, Path(tmp), False, baseline)
    floor = None
    if args.floor:  # alone on the collector's core, as the one-at-a-time runs are
        with tempfile.TemporaryDirectory(prefix="rt-bench-gnmi-") as tmp:
            _, floor = measure_gnmi(args, Path(tmp), False, FLOOR)
    if args.kafka:
        drop_topics(args.kafka, f"bench{os.getpid()}")
    assert ours is not None
    return report_gnmi(args, baseline, ours, theirs, floor)


def drop_topics(bootstrap: str, prefix: str) -> None:
    """Delete the raw topics this run's collector created on the broker."""
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    async def drop() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            mine = [t for t in await admin.list_topics() if t.startswith(prefix + ".")]
            if mine:
                await admin.delete_topics(mine)
        finally:
            await admin.close()

    asyncio.run(drop())
