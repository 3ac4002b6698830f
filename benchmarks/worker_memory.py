"""Benchmark: the memory of a worker's telemetry state when it owns every switch of a fabric.

Run: .venv/bin/python benchmarks/worker_memory.py [--nodes 12500] [--rounds 3]

In one process, without Kafka: the fabric and its port-to-link index are built as the worker
builds them, then the telemetry stage's fold (`worker.device_states.DeviceStates`, the code
the worker runs on each raw message) takes `--rounds` samples of every switch port, each a
gnmic `json` message of the port's counters as `streaming.py` publishes them. Prints the peak
RSS after the fabric, after each round, and after a checkpoint of every device (what the worker
writes to the state topic), and the fold's rate. One worker owning all partitions is the worst
case: N workers each hold about 1/N of the devices. The broker client, the Faust app and the
correlator's jobs come on top.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streaming import cabled_switch_ports, message

from railtrace.gctuning import settle_heap
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.fabric import PortLinks
from railtrace.topology.lldp import PlanIndex
from railtrace.worker.device_states import BatchOutput, DeviceStates

#: Messages folded into one batch's output before it is dropped, as the stage sends a batch.
BATCH = 2_000
SAMPLE_NS = 10 * 1_000_000_000
T0_NS = 1_780_000_000 * 1_000_000_000


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=12_500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=64, help="link-samples partitions")
    args = ap.parse_args()

    t = time.perf_counter()
    design = rail_optimized(args.nodes)
    fabric = build_fabric(design.plan)
    ports = cabled_switch_ports(fabric)
    states = DeviceStates(PortLinks(fabric), args.partitions, PlanIndex.of(design.plan))
    settle_heap()  # as the worker does once it has started
    print(
        f"{args.nodes:,} nodes: {len(fabric.links):,} cables, {len(ports):,} switch ports on "
        f"{len({d for d, _ in ports}):,} switches; fabric built in "
        f"{time.perf_counter() - t:.1f} s, peak RSS {peak_mib():,.0f} MiB"
    )
    offset = 0
    for r in range(args.rounds):
        out = BatchOutput()
        started = time.perf_counter()
        for i, (device, interface) in enumerate(ports):
            raw = message(device, interface, T0_NS + r * SAMPLE_NS, r + 1)
            record = SimpleNamespace(
                value=raw, key=device.encode(), partition=0, offset=offset, topic="raw"
            )
            states.fold("gnmi", record, out)
            offset += 1
            if i % BATCH == BATCH - 1:
                out = BatchOutput()
        took = time.perf_counter() - started
        print(
            f"round {r + 1}: {len(ports) / took:,.0f} messages/s folded, "
            f"peak RSS {peak_mib():,.0f} MiB"
        )
    t = time.perf_counter()
    checkpoint = states.checkpoint()
    size = sum(len(value) for _, _, value in checkpoint)
    print(
        f"checkpoint of {len(checkpoint):,} devices: {size / 2**20:,.0f} MiB in "
        f"{time.perf_counter() - t:.1f} s; peak RSS {peak_mib():,.0f} MiB"
    )


if __name__ == "__main__":
    main()
