"""Benchmark: what one collector process handles on one core, against the 288-node design.

Run:
    .venv/bin/python benchmarks/collectors.py gnmi [--duration 20] [--kafka HOST:PORT]
    .venv/bin/python benchmarks/collectors.py snmp [--interfaces 64]
    .venv/bin/python benchmarks/collectors.py logs [--lines 640000]
    .venv/bin/python benchmarks/collectors.py all

Each runs the real `railtrace collect <role>` process, pinned to one core, with its disk spool
(no broker unless `--kafka`: the spool takes everything, as while a broker is away), and reads
that process's own CPU time (user + system, all threads, from /proc) so that every figure is
also given per core-second:

- gnmi: a gNMI target (benchmarks/gnmi_target.py: a 64-port switch, 32 updates per
  port-sample) streams as fast as each client reads. The railtrace collector and a Go client
  (gnmic from the Go module proxy, or openconfig's gnmi_cli when the proxy does not serve
  gnmic) subscribe side by side, the Go client pinned to the other core and writing to a file.
  Counted over the same window: updates in the collector's spool, updates the Go client wrote,
  and each one's CPU time; the ratio railtrace / Go client is per core-second.
- snmp: in a private network namespace (unshare, needs root), net-snmp's snmpd serves IF-MIB
  for `--interfaces` veth interfaces and the collector polls it back to back under several
  target names (GETBULK walks of its 19 columns). PDUs are the agent's snmpInPkts.
- logs: NCCL/PyTorch-like lines are written into one node's rank files at once (the writer on
  the other core); the figure is lines from the first write until the scraper's offsets file
  says every line is delivered into the spool.

Each prints the headroom against the 288-node design at 1 s sampling and how many collector
processes a site needs, at 100% of a core each and at `--plan-utilization` (default 50%).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import _read as read_record
from railtrace.streams.wire import decode_log_batch

HERE = Path(__file__).resolve().parent
RAILTRACE = str(Path(sys.executable).with_name("railtrace"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, str(HERE))
from gnmi_target import (  # noqa: E402 - a sibling benchmark script
    NOTIFICATIONS_PER_PORT_SAMPLE,
    UPDATES_PER_PORT_SAMPLE,
)

Proc = subprocess.Popen[bytes]

# -- the design load ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Design:
    nodes: int
    switches: int
    ports: int  # switch ports: both ends of every switch-switch link, and leaf host ports


def design(nodes: int) -> Design:
    from railtrace.topology import build_fabric, rail_optimized
    from railtrace.topology.attrs import Role

    fabric = build_fabric(rail_optimized(nodes).plan)
    ends = [
        end.device
        for ref in fabric.links.values()
        for end in (ref.a, ref.b)
        if fabric.role(end.device) != Role.HOST
    ]
    return Design(nodes, len(set(ends)), len(ends))


def headroom(unit: str, per_core: float, load: float, utilization: float) -> None:
    """Print one process's capacity against `load` and the processes a site needs."""
    if per_core <= 0:
        print("  no throughput measured: no headroom figure")
        return
    print(
        f"    one process, one core: {per_core:,.0f} {unit} = {per_core / load:.2f}x the load; "
        f"processes for the site: {math.ceil(load / per_core)} at 100% of a core each, "
        f"{math.ceil(load / (per_core * utilization))} at {utilization:.0%}"
    )


# -- processes ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads (from /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cores() -> tuple[int, int]:
    """The core for the collector and the core for the other side (the same on one core)."""
    mine = sorted(os.sched_getaffinity(0))
    return mine[0], mine[-1]


def pinned(cpu: int) -> Callable[[], None]:
    def pin() -> None:
        os.sched_setaffinity(0, {cpu})

    return pin


def start(
    stack: contextlib.ExitStack,
    command: list[str],
    out: Path,
    cpu: int | None = None,
    env: dict[str, str] | None = None,
    err: Path | None = None,
) -> Proc:
    """A process with stdout (and stderr unless `err`) to `out`, stopped when `stack` closes."""
    with out.open("wb") as sink, (err or out).open("ab") as errors:
        proc = subprocess.Popen(
            command,
            stdout=sink,
            stderr=errors if err else subprocess.STDOUT,
            preexec_fn=None if cpu is None else pinned(cpu),  # noqa: PLW1509 - no threads here
            env=env,
            start_new_session=True,
        )
    stack.callback(stop, proc)
    return proc


def stop(proc: Proc, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)


def label(proc: Proc) -> str:
    args = proc.args
    return str(args[0]) if isinstance(args, list) else str(args)


def wait_for(what: str, ready: Callable[[], bool], timeout_s: float, *procs: Proc) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        for p in procs:
            if p.poll() is not None:
                raise SystemExit(f"{what}: {label(p)} exited with {p.returncode}")
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not ready after {timeout_s:.0f} s")
        time.sleep(0.1)


def check_running(logs: tuple[Path, ...], *procs: Proc) -> None:
    for p in procs:
        if p.poll() is not None:
            text = "".join(tail(log) for log in logs)
            raise SystemExit(f"{label(p)} exited with {p.returncode}:\n{text}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_config(path: Path, bootstrap: str | None, role_section: str) -> Path:
    """A settings file for `railtrace --config`: Kafka, the spool, and the role's section.
    Without a bootstrap, an address where nothing listens: delivery backs off and spools."""
    bootstrap = bootstrap or f"127.0.0.1:{free_port()}"
    path.write_text(
        f'[kafka]\nbootstrap_servers = "{bootstrap}"\ntopic_prefix = "bench{os.getpid()}"\n\n'
        f'[collect]\nspool_dir = "{path.parent / "spool"}"\nspool_max_bytes = {8 << 30}\n\n'
        f"{role_section}"
    )
    return path


def collect(stack: contextlib.ExitStack, config: Path, role: str, cpu: int, *opts: str) -> Proc:
    return start(
        stack,
        [RAILTRACE, *opts, "--config", str(config), "collect", role],
        config.parent / "collector.log",
        cpu,
    )


def tail(path: Path, chars: int = 1500) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-chars:]
    return ""


# -- the spool, read from outside ---------------------------------------------------------------


def appended(folder: Path) -> int:
    """Records appended to a live spool so far (its next sequence number)."""
    segments = sorted(folder.glob("*.seg"))
    if not segments:
        return 0
    return _count(segments[-1].read_bytes(), int(segments[-1].stem))


def acknowledged(folder: Path) -> int:
    """Records the broker acknowledged (up to the spool's cursor), counted from the start."""
    for _ in range(5):
        try:
            segment, offset = (int(x) for x in (folder / "cursor").read_text().split())
            return _count((folder / f"{segment:020d}.seg").read_bytes()[:offset], segment)
        except (OSError, ValueError):
            time.sleep(0.05)  # the cursor moved on and its segment went: read again
    return 0


def _count(data: bytes, first: int) -> int:
    at, n = 0, first
    while (got := read_record(data, at)) is not None:
        seq, _, at = got
        n = seq + 1
    return n


def records(folder: Path) -> Iterator[tuple[int, Outgoing]]:
    """Every record left in a stopped collector's spool, in order."""
    for segment in sorted(folder.glob("*.seg")):
        data = segment.read_bytes()
        at = 0
        while (got := read_record(data, at)) is not None:
            seq, message, at = got
            yield seq, message


# -- gNMI ---------------------------------------------------------------------------------------


@dataclass
class Baseline:
    """The Go client run beside railtrace: its command, and what counts updates in its output."""

    name: str
    binary: str
    needle: bytes  # one occurrence per update

    def command(self, address: str) -> list[str]:
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
        got = count_in(out, int(s0["out"]), int(s1["out"]), baseline.needle)
        theirs = Side(got / took, (s1["baseline"] - s0["baseline"]) / took, target_core)
    return ours, theirs


def report_gnmi(
    args: argparse.Namespace, baseline: Baseline | None, ours: Side, theirs: Side | None
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
    if args.kafka:
        drop_topics(args.kafka, f"bench{os.getpid()}")
    assert ours is not None
    return report_gnmi(args, baseline, ours, theirs)


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


# -- SNMP ---------------------------------------------------------------------------------------

COMMUNITY = "railtrace-bench"
SNMP_IN_PKTS = "1.3.6.1.2.1.11.1.0"
IF_NUMBER = "1.3.6.1.2.1.2.1.0"
IN_NETNS = "RAILTRACE_BENCH_NETNS"


def net_snmp(name: str) -> str | None:
    for folder in ("/usr/sbin", "/usr/bin"):
        if (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    return shutil.which(name)


def snmp_env(tmp: Path) -> dict[str, str]:
    # No MIB files (Debian has none): net-snmp must not look for them nor write outside tmp.
    return {
        **os.environ,
        "MIBS": "",
        "MIBDIRS": str(tmp),
        "SNMP_PERSISTENT_DIR": str(tmp / "persist"),
        "SNMPCONFPATH": str(tmp),
    }


def snmpget(tmp: Path, port: int, oid: str) -> int | None:
    binary = net_snmp("snmpget")
    assert binary is not None
    done = subprocess.run(
        [binary, "-v2c", "-c", COMMUNITY, "-t", "1", "-r", "1", "-Oqv", f"127.0.0.1:{port}", oid],
        env=snmp_env(tmp),
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    try:
        return int(done.stdout.split()[0])
    except (IndexError, ValueError):
        return None


def bench_snmp(args: argparse.Namespace) -> float:
    """Runs itself again inside a private network namespace, for the veth interfaces."""
    if os.environ.get(IN_NETNS) == "1":
        return measure_snmp(args)
    print("\n== SNMP: one `railtrace collect snmp` process")
    if net_snmp("snmpd") is None or net_snmp("snmpget") is None:
        print("  net-snmp's snmpd/snmpget are not installed (make system-deps): skipped")
        return 0.0
    if args.host_interfaces or os.geteuid() != 0 or not shutil.which("unshare"):
        print("  polling the host's own interfaces (no private network namespace)")
        return measure_snmp(args)
    print(
        f"  in a private network namespace (unshare --net) with {args.interfaces} veth interfaces"
    )
    own = ["--interfaces", str(args.interfaces), "--targets", str(args.targets)]
    own += ["--duration", str(args.duration), "--warmup", str(args.warmup)]
    own += ["--max-repetitions", str(args.max_repetitions), "--nodes", str(args.nodes)]
    own += ["--plan-utilization", str(args.plan_utilization)]
    done = subprocess.run(
        ["unshare", "--net", "--", sys.executable, __file__, "snmp", *own],
        env={**os.environ, IN_NETNS: "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stdout, end="")
    if done.returncode != 0:
        print(done.stderr[-3000:], end="")
        return 0.0
    result = [x for x in done.stdout.splitlines() if x.startswith("  result: ")]
    return float(result[0].split()[1]) if result else 0.0


def make_interfaces(n: int) -> None:
    """n veth interfaces swp1..swpN (pairs), up, in this (private) network namespace."""
    lines = ["link set lo up"]
    lines += [f"link add swp{k + 1} type veth peer name swp{k + 2}" for k in range(0, n, 2)]
    lines += [f"link set swp{i} up" for i in range(1, n + 1)]
    subprocess.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", text=True, check=True)


def start_snmpd(stack: contextlib.ExitStack, tmp: Path, cpu: int) -> tuple[Proc, int]:
    snmpd = net_snmp("snmpd")
    assert snmpd is not None
    (tmp / "persist").mkdir()
    conf = tmp / "snmpd.conf"
    conf.write_text(f"rocommunity {COMMUNITY} 127.0.0.1\nsysName bench-agent\n")
    port = free_port()
    command = [snmpd, "-f", "-Lo", "-C", "-c", str(conf), f"udp:127.0.0.1:{port}"]
    agent = start(stack, command, tmp / "snmpd.log", cpu, snmp_env(tmp))
    wait_for("snmpd", lambda: snmpget(tmp, port, IF_NUMBER) is not None, 20, agent)
    return agent, port


def measure_snmp(args: argparse.Namespace) -> float:
    if os.environ.get(IN_NETNS) == "1":
        make_interfaces(args.interfaces + args.interfaces % 2)
    mine, other = cores()
    with tempfile.TemporaryDirectory(prefix="rt-bench-snmp-") as tmp_name:
        tmp = Path(tmp_name)
        spool = tmp / "spool" / "snmp"
        with contextlib.ExitStack() as stack:
            agent, port = start_snmpd(stack, tmp, other)
            interfaces = snmpget(tmp, port, IF_NUMBER) or 0
            section = "".join(
                f'[[collect.snmp.targets]]\nname = "sw-{i:02d}"\nhost = "127.0.0.1"\n'
                f'port = {port}\nversion = "2c"\ncommunity = "{COMMUNITY}"\n'
                f"interval_s = 0.001\nmax_repetitions = {args.max_repetitions}\n\n"
                for i in range(args.targets)
            )
            collector = collect(
                stack, write_config(tmp / "railtrace.toml", None, section), "snmp", mine
            )
            time.sleep(args.warmup)
            check_running((tmp / "collector.log",), collector)

            def snapshot() -> tuple[float, int, int, float, float]:
                pkts = snmpget(tmp, port, SNMP_IN_PKTS) or 0
                cpu, agent_cpu = cpu_seconds(collector.pid), cpu_seconds(agent.pid)
                return time.monotonic(), appended(spool), pkts, cpu, agent_cpu

            s0 = snapshot()
            time.sleep(args.duration)
            s1 = snapshot()
        sample = next((orjson.loads(m.value) for _, m in records(spool)), None)
    took, polls, pdus = s1[0] - s0[0], s1[1] - s0[1], s1[2] - s0[2] - 1  # less our own GET
    core, agent_core = (s1[3] - s0[3]) / took, (s1[4] - s0[4]) / took
    named = len(sample["ifnames"]) if sample else 0
    varbinds = len(sample["varbinds"]) + 2 * named if sample else 0  # + ifName, ifDescr
    ifaces = polls * named / took
    per_core = ifaces / core if core else 0.0
    cpu_ms = 1000 * core * took / max(pdus, 1)
    poll_ms = 1000 * core * took / max(polls, 1)
    print(
        f"  agent: net-snmp snmpd, {interfaces} interfaces in IF-MIB ({named} named in a poll, "
        f"{varbinds:,} varbinds); {args.targets} target names polled back to back, GETBULK "
        f"max-repetitions {args.max_repetitions}; window {took:.1f} s"
    )
    print(
        f"  polls/s {polls / took:,.1f}, interfaces/s {ifaces:,.0f}, PDUs/s {pdus / took:,.0f} "
        f"({pdus / max(polls, 1):.1f} GETBULK requests per poll)"
    )
    print(
        f"  collector {core:.2f} core, agent {agent_core:.2f} core; collector CPU per PDU "
        f"{cpu_ms:.2f} ms, per poll {poll_ms:.0f} ms ({1000 * poll_ms / max(varbinds, 1):.0f} us "
        f"per varbind); {per_core:,.0f} interfaces per core-second"
    )
    load = design(args.nodes)
    print(f"  {load.nodes}-node design, every switch port ({load.ports:,}) polled:")
    for interval in (1, 30, 60):
        print(f"  - every {interval} s: {load.ports / interval:,.0f} interfaces/s")
        headroom("interfaces/s", per_core, load.ports / interval, args.plan_utilization)
    print(f"  result: {per_core:.1f} interfaces per core-second")
    return per_core


# -- logs ---------------------------------------------------------------------------------------

BLOCK_LINES = 2000


def log_lines(rank: int, host: str, count: int) -> bytes:
    """NCCL INFO and training-progress lines as ranks print them (the shapes of
    railtrace.simulate's logs); none is a hang or error line."""
    pid = 41000 + rank
    gpu = rank % 8
    head = f"{host}:{pid}:{pid + 7} [{gpu}] NCCL INFO"
    shapes: list[Callable[[int], str]] = [
        lambda i: (
            f"{head} Channel {i % 32:02d}/0 : {rank}[{gpu}] -> {rank + 8}[{gpu}] [send] "
            f"via NET/IB/{gpu}/GDRDMA"
        ),
        lambda i: (
            f"{head} Channel {i % 32:02d}/0 : {rank}[{gpu}] -> {rank + 1}[{(gpu + 1) % 8}]"
            " via P2P/CUMEM/read"
        ),
        lambda i: (
            f"{head} comm 0x7f{i:08x} rank {rank} nranks 2304 cudaDev {gpu} nvmlDev {gpu} "
            f"busId 18000 commId 0x{i * 7919:x} - Init COMPLETE"
        ),
        lambda i: (
            f"{head} NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB "
            f"eth0:10.1.{rank % 250}.{i % 250}<0>"
        ),
        lambda i: (
            f" [2026-11-29 12:{i // 60 % 60:02d}:{i % 60:02d}] iteration {i:8d}/  100000 | "
            f"elapsed time per iteration (ms): {950 + i % 40}.3 | lm loss: 3.1{i % 1000:03d}E+00 |"
        ),
    ]
    return "".join(shapes[i % len(shapes)](i) + "\n" for i in range(count)).encode()


def delivered_lines(state: Path) -> int:
    """Lines the scraper recorded as handed to delivery, over all files (its offsets file)."""
    try:
        doc = orjson.loads(state.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return 0
    return sum(int(e["line_no"]) for e in doc.get("files", ()))


@dataclass
class LogsWindow:
    lines: int
    line_bytes: float
    write_s: float
    took: float
    core: float
    spooled: int


def write_lines(files: list[Path], blocks: list[bytes], total: int, rate: float) -> float:
    handles = [f.open("ab") for f in files]
    t0 = time.monotonic()
    written = 0
    while written < total:
        for h, block in zip(handles, blocks, strict=True):
            h.write(block)
            h.flush()
        written += BLOCK_LINES * len(files)
        if rate and (ahead := written / rate - (time.monotonic() - t0)) > 0:
            time.sleep(ahead)
    for h in handles:
        h.close()
    return time.monotonic() - t0


def measure_logs(args: argparse.Namespace, tmp: Path) -> LogsWindow:
    mine, other = cores()
    job = tmp / "jobs" / "4861301"
    job.mkdir(parents=True)
    files = [job / f"rank{r}.log" for r in range(args.files)]
    for f in files:
        f.touch()
    state = tmp / "offsets.json"
    section = f'[collect.logs]\npaths = ["{job.parent}/{{job_id}}/*.log"]\nstate_file = "{state}"\n'
    if args.poll_interval_ms:
        section += f"poll_interval_ms = {args.poll_interval_ms}\n"
    blocks = [log_lines(r, f"gpu-{r // 8:03d}", BLOCK_LINES) for r in range(args.files)]
    total = max(1, args.lines // (BLOCK_LINES * args.files)) * BLOCK_LINES * args.files
    before = os.sched_getaffinity(0)
    log = tmp / "collector.log"
    with contextlib.ExitStack() as stack:
        config = write_config(tmp / "railtrace.toml", None, section)
        collector = collect(stack, config, "logs", mine, "--log-level", "info")

        def adopted() -> bool:
            return bool(tail(log, 1 << 20).count("following log file ") >= args.files)

        wait_for("log scraper", adopted, 20, collector)
        os.sched_setaffinity(0, {other})
        stack.callback(os.sched_setaffinity, 0, before)
        t0, cpu0 = time.monotonic(), cpu_seconds(collector.pid)
        write_s = write_lines(files, blocks, total, args.rate)
        deadline = time.monotonic() + 120
        while (done := delivered_lines(state)) < total:
            if time.monotonic() > deadline or collector.poll() is not None:
                raise SystemExit(f"scraper delivered {done:,} of {total:,} lines:\n{tail(log)}")
            time.sleep(0.02)
        t1, cpu1 = time.monotonic(), cpu_seconds(collector.pid)
    spooled = sum(len(decode_log_batch(m.value).lines) for _, m in records(tmp / "spool" / "logs"))
    size = sum(len(b) for b in blocks) / (BLOCK_LINES * args.files)
    return LogsWindow(total, size, write_s, t1 - t0, (cpu1 - cpu0) / (t1 - t0), spooled)


def bench_logs(args: argparse.Namespace) -> float:
    print("\n== logs: one `railtrace collect logs` process")
    with tempfile.TemporaryDirectory(prefix="rt-bench-logs-") as tmp:
        w = measure_logs(args, Path(tmp))
    rate = w.lines / w.took
    per_core = rate / w.core if w.core else 0.0
    paced = ", paced" if args.rate else ""
    print(
        f"  {w.lines:,} lines ({w.line_bytes:.0f} bytes on average) into {args.files} rank "
        f"files, written in {w.write_s:.2f} s ({w.lines / w.write_s:,.0f} lines/s{paced}); "
        f"all delivered into the spool after {w.took:.2f} s (the spool holds {w.spooled:,})"
    )
    print(
        f"  scraped end to end: {rate:,.0f} lines/s, collector {w.core:.2f} core, "
        f"{per_core:,.0f} lines per core-second"
    )
    load = design(args.nodes)
    burst = 8 * args.init_lines
    print(
        f"  load: one scraper per GPU node ({load.nodes} processes at {load.nodes} nodes) for "
        f"its 8 ranks; training prints a few lines per rank per minute, the peak is "
        f"NCCL_DEBUG=INFO at communicator init, assumed {args.init_lines:,} lines per rank"
    )
    if per_core:
        print(
            f"    a node's init burst of {burst:,} lines takes {burst / per_core * 1000:,.0f} ms "
            f"of one core ({per_core / burst:.1f}x headroom were it all written in one second)"
        )
    return per_core


# -- main ---------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="what", required=True)
    gnmi = sub.add_parser("gnmi", help="gNMI updates/s, side by side with a Go client")
    gnmi.add_argument("--duration", type=float, default=20.0, help="measured seconds")
    gnmi.add_argument("--warmup", type=float, default=5.0)
    gnmi.add_argument(
        "--baseline",
        choices=("auto", "gnmic", "gnmi_cli", "none"),
        default="auto",
        help="the Go client beside railtrace (auto: gnmic, else gnmi_cli)",
    )
    gnmi.add_argument(
        "--one-at-a-time",
        action="store_true",
        help="measure railtrace, then the Go client, each alone with the target",
    )
    gnmi.add_argument("--streams", type=int, default=1, help="Subscribe streams of railtrace")
    gnmi.add_argument(
        "--rate", type=float, default=0.0, help="port-samples/s per stream (0: as fast as read)"
    )
    gnmi.add_argument("--kafka", metavar="BOOTSTRAP", help="deliver to this broker too")
    gnmi.add_argument("--profile", metavar="OUT", help="record the collector with py-spy")
    gnmi.add_argument("--profile-format", default="speedscope", choices=("speedscope", "raw"))

    snmp = sub.add_parser("snmp", help="SNMP interfaces/s and PDUs/s against a local snmpd")
    snmp.add_argument("--duration", type=float, default=20.0, help="measured seconds")
    snmp.add_argument("--warmup", type=float, default=3.0)
    snmp.add_argument("--interfaces", type=int, default=64, help="veth interfaces of the agent")
    snmp.add_argument("--targets", type=int, default=4, help="target names polled at once")
    snmp.add_argument("--max-repetitions", type=int, default=25)
    snmp.add_argument("--host-interfaces", action="store_true", help="no network namespace")

    logs = sub.add_parser("logs", help="log lines/s scraped into the spool")
    logs.add_argument("--files", type=int, default=8, help="rank log files (8: one node)")
    logs.add_argument("--lines", type=int, default=640_000)
    logs.add_argument("--rate", type=float, default=0.0, help="lines/s written (0: at once)")
    logs.add_argument(
        "--poll-interval-ms", type=int, help="the scraper's poll interval (default: its own)"
    )
    logs.add_argument(
        "--init-lines", type=int, default=2000, help="assumed NCCL INFO lines per rank at init"
    )

    every = sub.add_parser("all", help="gnmi, snmp and logs with their defaults")
    for p in (gnmi, snmp, logs, every):
        p.add_argument("--nodes", type=int, default=288, help="design size (default 288)")
        p.add_argument(
            "--plan-utilization",
            type=float,
            default=0.5,
            help="share of a core a collector is planned to use (default 0.5)",
        )
    return ap


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    runs = {"gnmi": bench_gnmi, "snmp": bench_snmp, "logs": bench_logs}
    if args.what != "all":
        runs[args.what](args)
        return
    common = ["--nodes", str(args.nodes), "--plan-utilization", str(args.plan_utilization)]
    gnmi = bench_gnmi(ap.parse_args(["gnmi", *common]))
    snmp = bench_snmp(ap.parse_args(["snmp", *common]))
    logs = bench_logs(ap.parse_args(["logs", *common]))
    print("\n== summary: per core-second of one collector process")
    print(f"  gnmi {gnmi.per_core:>12,.0f} updates")
    if gnmi.baseline_per_core:
        print(f"       {gnmi.baseline_per_core:>12,.0f} updates (the Go client)")
    print(f"  snmp {snmp:>12,.0f} interfaces")
    print(f"  logs {logs:>12,.0f} lines")


if __name__ == "__main__":
    main()
