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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect_gnmi_bench import bench_gnmi
from collect_logs_bench import bench_logs
from collect_snmp_bench import bench_snmp

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
    gnmi.add_argument(
        "--floor",
        action="store_true",
        help="also measure grpcio reading the same stream as raw bytes and nothing else (one "
        "at a time): the floor below which no Python collector's cost per update can go",
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
