"""Benchmark: the worker's per-message fold alone, per core.

Run: .venv/bin/python benchmarks/fold.py [--nodes 288] [--rounds 6] [--split]

Issue 20 asks for 50k port-samples per second per core through the worker's hot path (decode,
counter rates, link health, routing and encoding the output). The streaming benchmark measures
the whole worker with its broker; this one takes the broker away, so what is left is the code
railtrace owns: `DeviceStates.fold` (what the telemetry stage runs on each raw message) on
gnmic `json` messages of one port's counters, as `streaming.py` publishes them, with each
batch's link samples encoded for the wire as the stage sends them.

- The first two samples of every port are warm-up (baselines, no rates yet); the rate is read
  over the `--rounds` after them, in process CPU time, so other work on the machine slows the
  figure less than wall time would.
- `--split` gives each stage's cost as what it adds to the stages before it over the same
  messages, streamed as the fold streams them (JSON parsing, then the compiled walk and fold);
  the rest is the stage's own loop, batching and encoding. cProfile was tried first and
  misled: its cost per call doubled the share of code made of many small calls.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streaming import cabled_switch_ports, message

#: Messages folded before a batch's samples are encoded and dropped, as the stage does.
BATCH = 2_000
SAMPLE_NS = 10 * 1_000_000_000
T0_NS = 1_780_000_000 * 1_000_000_000
WARMUP_ROUNDS = 2


def measure(nodes: int, rounds: int, split: bool) -> float:
    """Messages folded per CPU second over `rounds` samples of every switch port."""
    from railtrace.gctuning import settle_heap
    from railtrace.streams import wire
    from railtrace.topology import build_fabric, rail_optimized
    from railtrace.topology.fabric import PortLinks
    from railtrace.topology.lldp import PlanIndex
    from railtrace.worker.device_states import BatchOutput, DeviceStates

    design = rail_optimized(nodes)
    fabric = build_fabric(design.plan)
    ports = cabled_switch_ports(fabric)
    states = DeviceStates(PortLinks(fabric), 8, PlanIndex.of(design.plan))
    settle_heap()

    def records(r: int) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(
                value=message(device, iface, T0_NS + r * SAMPLE_NS, r + 1),
                key=device.encode(),
                partition=0,
                offset=r * len(ports) + i,
                topic="raw",
            )
            for i, (device, iface) in enumerate(ports)
        ]

    def fold(batch: list[SimpleNamespace]) -> None:
        out = BatchOutput()
        for i, record in enumerate(batch):
            states.fold("gnmi", record, out)
            if i % BATCH == BATCH - 1 or i == len(batch) - 1:
                for rows in out.samples.values():
                    wire.encode_samples(rows)
                out = BatchOutput()

    warmup = [records(r) for r in range(WARMUP_ROUNDS)]
    for batch in warmup:
        fold(batch)
    timed = [records(r) for r in range(WARMUP_ROUNDS, WARMUP_ROUNDS + rounds)]
    count = rounds * len(ports)
    started = time.process_time()
    for batch in timed:
        fold(batch)
    elapsed = time.process_time() - started
    if split:
        print_split(elapsed, [record.value for batch in timed for record in batch], warmup)
    return count / elapsed


def print_split(whole: float, raw: list[bytes], warmup: list[list[SimpleNamespace]]) -> None:
    """The fold's CPU time per message split by stage, each stage's cost read as what it adds
    to the stages before it over the same messages, streamed as the fold streams them (what a
    stage makes dies young, as in the worker). A profiler's cost per call misled here: it
    doubled the share of the decoder, which is made of many small calls.

    The stages are the hot path's: JSON parsing, then the compiled pass that walks the
    message and folds each value into the rates and link health (`Normalizer.fold_message`,
    its samples made into wire rows and routed, the route asked once per port); the rest is
    `DeviceStates.fold`'s own work per message, batching and encoding."""
    from collections import defaultdict

    import orjson

    from railtrace.streams.pipeline import Normalizer
    from railtrace.streams.telemetry import DecodeStats

    normalizers: dict[str, Normalizer] = {}
    stats = DecodeStats()

    def route(device: str, interface: str) -> tuple[str, int]:
        return f"{device}:{interface}", 0

    def fold(message: dict[str, Any]) -> None:
        device = message["source"]
        normalizer = normalizers.get(device)
        if normalizer is None:
            normalizer = normalizers[device] = Normalizer()
        normalizer.fold_message(message, route, defaultdict(list), stats)

    for batch in warmup:
        for record in batch:
            fold(orjson.loads(record.value))
    started = time.process_time()
    for value in raw:
        orjson.loads(value)
    parsed = time.process_time() - started
    started = time.process_time()
    for value in raw:
        fold(orjson.loads(value))
    folded = time.process_time() - started
    us = 1e6 / len(raw)
    print(f"  CPU us per message of 5 counters, by stage ({len(raw):,} messages):")
    print(f"    JSON parsing (orjson.loads)                      {parsed * us:5.1f}")
    print(f"    walk, counter rates, link health, routing        {(folded - parsed) * us:5.1f}")
    print(f"    the rest: the stage's loop, batching, encoding   {(whole - folded) * us:5.1f}")
    print(f"    the whole fold                                   {whole * us:5.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=288, help="reference design size")
    ap.add_argument("--rounds", type=int, default=6, help="timed samples of every switch port")
    ap.add_argument(
        "--split", action="store_true", help="time JSON parsing and the compiled fold alone"
    )
    args = ap.parse_args()
    rate = measure(args.nodes, args.rounds, args.split)
    print(f"{args.nodes} nodes: {rate:,.0f} messages folded per CPU second")


if __name__ == "__main__":
    main()
