"""The SNMP collector benchmark: interfaces and PDUs per second against a local snmpd."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collector_runs import (
    HERE,
    Proc,
    appended,
    check_running,
    collect,
    cores,
    cpu_seconds,
    design,
    free_port,
    headroom,
    records,
    start,
    wait_for,
    write_config,
)

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
        ["unshare", "--net", "--", sys.executable, str(HERE / "collectors.py"), "snmp", *own],
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
