"""A two-node job on the 64-node reference fabric, for the attribution tests that build their
facts and link events by hand rather than through the simulator."""

from __future__ import annotations

import functools

from railtrace.streams.attribution import Correlator
from railtrace.streams.records import (
    ChannelEdge,
    LogOrigin,
    NetDevice,
    NetDevices,
    RankInfo,
    Verdict,
)
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.fabric import Fabric

S = 1_000_000_000
T0 = 1_780_000_000 * S
JOB = "job1"
ORIGIN = LogOrigin("nccl.log", 1)
# Two nodes in different scalable units: their rail-0 hop crosses a spine.
HOST_A, HOST_B = "hgx-su01-32", "hgx-su02-01"
# HOST_A's rail-0 cable, the one the job's channel uses, seen from its leaf.
LEAF, LEAF_PORT = "leaf-su01-r0", "swp32"
HOST_LINK = f"{HOST_A}:mlx5_0--{LEAF}:{LEAF_PORT}"
# The trainer's cadence, and when its silence becomes overdue (3 intervals = 30 s, the floor).
EVERY_S = 10
OVERDUE_S = 30


@functools.cache
def fabric() -> Fabric:
    """Built once: correlators only read it."""
    return build_fabric(rail_optimized(64).plan)


def job_facts() -> list:
    """Two ranks, one ring hop between HOST_A and HOST_B over their mlx5_0."""
    devs = tuple(NetDevice(i, f"mlx5_{i}", 1, "RoCE") for i in range(8))
    return [
        NetDevices(T0, JOB, HOST_A, 100, devs, ORIGIN),
        NetDevices(T0, JOB, HOST_B, 200, devs, ORIGIN),
        RankInfo(T0, JOB, HOST_A, 100, "c1", 0, 2, 0, None, ORIGIN),
        RankInfo(T0, JOB, HOST_B, 200, "c1", 1, 2, 0, None, ORIGIN),
        ChannelEdge(T0, JOB, HOST_A, 100, "c1", 0, 0, 1, "send", "NET", 0, ORIGIN),
        ChannelEdge(T0, JOB, HOST_B, 200, "c1", 0, 0, 1, "receive", "NET", 0, ORIGIN),
    ]


def feed(corr: Correlator, records: list) -> list[Verdict]:
    """Observe `records` in time order; every verdict change on the way."""
    out: list[Verdict] = []
    for r in sorted(records, key=lambda r: r.ts_ns):
        out.extend(corr.observe(r))
    return out
