"""Benchmark: the verdict step for a 16k-GPU job on a 12,500-node fabric.

Run: .venv/bin/python benchmarks/verdict_scale.py [--nodes 12500] [--job-nodes 2000]

No simulator and no capture (13 minutes of telemetry at 12,500 nodes would not fit here): the
job's facts and the link events are written as the parsers and the link health would give
them, straight into one `Correlator`. The job runs on the first `--job-nodes` nodes, one rank
per GPU, and NCCL's ring channels are printed as at INFO: channel c runs over NIC c from each
host to the next. Then its fault: one host cable goes down, and a sample later every link its
traffic crossed reports the drop; at the watchdog every rank prints its collective timeout in
the same second. Each of those instants is folded and judged as the replay and the worker do
(`fold`, then `judge_pending`), and the wall time of each judgement is printed with the
verdict. The job's paths are worked out at its first judgement, which is timed apart.
"""

from __future__ import annotations

import argparse
import resource
import time

from railtrace.streams.attribution import Correlator
from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    NetDevice,
    NetDevices,
    RankInfo,
)
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.ends import Endpoint

S = 1_000_000_000
T0 = 1_780_000_000 * S
JOB = "7000001"
COMM = "c0ffee"
GPUS = 8
WATCHDOG_S = 600


def job_facts(hosts: list[str], rails: int) -> list:
    """What NCCL at INFO says of the job: its NICs, its ranks, its ring channels."""
    devices = tuple(NetDevice(i, f"mlx5_{i}", 1, "RoCE") for i in range(rails))
    ranks = len(hosts) * GPUS
    facts: list = []
    for h, host in enumerate(hosts):
        pid = 1000 + h
        origin = LogOrigin(f"{host}.log", 1)
        facts.append(NetDevices(T0, JOB, host, pid, devices, origin))
        for g in range(GPUS):
            rank = h * GPUS + g
            facts.append(RankInfo(T0, JOB, host, pid, COMM, rank, ranks, g, None, origin))
            # Channel g leaves the host on NIC g towards the next host's GPU g.
            nxt = ((h + 1) % len(hosts)) * GPUS + g
            facts.append(
                ChannelEdge(
                    T0, JOB, host, pid, COMM, g, rank, nxt, "send", "NET", g % rails, origin
                )
            )
    return facts


def timeouts(hosts: list[str], at_ns: int) -> list[CollectiveTimeout]:
    """Every rank's watchdog line, all in the same second."""
    return [
        CollectiveTimeout(
            at_ns,
            JOB,
            host,
            h * GPUS + g,
            42,
            "ALLREDUCE",
            WATCHDOG_S * 1000,
            WATCHDOG_S * 1000,
            at_ns - WATCHDOG_S * S,
            LogOrigin(f"{host}.log", 100 + g),
        )
        for h, host in enumerate(hosts)
        for g in range(GPUS)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=12_500)
    ap.add_argument("--job-nodes", type=int, default=2_000)
    args = ap.parse_args()

    t = time.perf_counter()
    design = rail_optimized(args.nodes)
    fabric = build_fabric(design.plan)
    hosts = design.hosts[: args.job_nodes]
    print(
        f"{args.nodes:,}-node fabric ({len(fabric.links):,} cables) built in "
        f"{time.perf_counter() - t:.1f} s; job on {len(hosts):,} nodes, "
        f"{len(hosts) * GPUS:,} GPUs"
    )
    corr = Correlator(fabric)

    def instant(label: str, records: list) -> None:
        started = time.perf_counter()
        for record in records:
            corr.fold(record)
        folded = time.perf_counter() - started
        verdicts = corr.judge_pending()
        judged = time.perf_counter() - started - folded
        v = verdicts[-1] if verdicts else None
        said = (
            f"{v.state} {v.cause_kind} "
            f"{v.cause_link.link_id if v.cause_link else v.cause_node or ''} "
            f"conf {v.confidence:.2f}, {len(v.candidates)} listed"
            if v is not None
            else "verdict unchanged"
        )
        print(
            f"{label}: {len(records):,} records folded in {folded * 1e3:,.0f} ms, judged in "
            f"{judged * 1e3:,.0f} ms ({len(verdicts)} changed); {said}"
        )

    instant("job start (NICs, ranks, ring channels)", job_facts(hosts, design.rails))
    started = time.perf_counter()
    weights = corr.job_links(JOB)
    print(
        f"the job's paths: {len(weights):,} links, worked out in "
        f"{(time.perf_counter() - started) * 1e3:,.0f} ms"
    )

    nic = Endpoint(hosts[len(hosts) // 2], "mlx5_3")
    culprit = fabric.links[fabric.link_at[nic]]
    leaf = culprit.b if culprit.a == nic else culprit.a
    fault_ns = T0 + 1_000 * S
    down = LinkEvent(fault_ns, leaf.device, leaf.interface, LinkEventKind.DOWN, 0.0, "oper down")
    instant("the cable goes down", [down])
    drop_ns = fault_ns + 10 * S
    drops = []
    for lid in sorted(weights):
        ref = fabric.links[lid]
        for end in (ref.a, ref.b):
            if end.device not in fabric.host_nics:
                drops.append(
                    LinkEvent(
                        drop_ns,
                        end.device,
                        end.interface,
                        LinkEventKind.TRAFFIC_DROP,
                        0.0,
                        "in_octets fell",
                        "in_octets",
                        10.0,
                    )
                )
    instant("every link of the job reports its drop", drops)
    instant("every rank's watchdog line", timeouts(hosts, fault_ns + WATCHDOG_S * S))
    print(f"the culprit: {culprit.link_id}")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
