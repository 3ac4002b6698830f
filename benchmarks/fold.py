"""Benchmark: the worker's per-message fold alone, per core, and what compiling it would give.

Run: .venv/bin/python benchmarks/fold.py [--nodes 288] [--rounds 6] [--split] [--cython]

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
  messages, streamed as the fold streams them (JSON parsing, decoding, the Normalizer's counter
  rates and link health); the rest of the fold is routing, batching and encoding. cProfile
  was tried first and misled: its cost per call doubled the share of the decoder, which is
  made of many small calls.
- `--cython` answers one of the issue's options: the same modules compiled by Cython 3 as they
  are (no type declarations), in a scratch copy of the package, run alternately with the source
  in separate processes. Cython comes with the dev extra (`make install`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streaming import cabled_switch_ports, message

REPO = Path(__file__).resolve().parent.parent
#: Messages folded before a batch's samples are encoded and dropped, as the stage does.
BATCH = 2_000
SAMPLE_NS = 10 * 1_000_000_000
T0_NS = 1_780_000_000 * 1_000_000_000
WARMUP_ROUNDS = 2
#: The package folders as setup.py maps them into `railtrace`.
ROOTS = {
    "": "railtrace",
    "topology": "topology",
    "streams": "streams",
    "api": "api",
    "proto": "proto",
}
#: The modules of the fold's hot path, compiled by `--cython`.
HOT = (
    "streams/telemetry/gnmic.py",
    "streams/telemetry/leaves.py",
    "streams/telemetry/values.py",
    "streams/telemetry/rates.py",
    "streams/telemetry/health.py",
    "streams/telemetry/health_state.py",
    "streams/pipeline.py",
    "streams/wire.py",
    "worker/device_states.py",
)


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
    doubled the share of the decoder, which is made of many small calls."""
    import orjson

    from railtrace.streams.pipeline import Normalizer, Output
    from railtrace.streams.telemetry import decode_message

    normalizers: dict[str, Normalizer] = {}

    def normalize(values: list[Any]) -> None:
        normalizer = normalizers.get(values[0].device)
        if normalizer is None:
            normalizer = normalizers[values[0].device] = Normalizer()
        out = Output()
        for v in values:
            normalizer.on_telemetry(v, out)

    for batch in warmup:
        for record in batch:
            normalize(decode_message(orjson.loads(record.value)))
    started = time.process_time()
    for value in raw:
        orjson.loads(value)
    parsed = time.process_time() - started
    started = time.process_time()
    for value in raw:
        decode_message(orjson.loads(value))
    decoded = time.process_time() - started
    started = time.process_time()
    for value in raw:
        normalize(decode_message(orjson.loads(value)))
    normalized = time.process_time() - started
    us = 1e6 / len(raw)
    print(f"  CPU us per message of 5 counters, by stage ({len(raw):,} messages):")
    print(f"    JSON parsing (orjson.loads)               {parsed * us:5.1f}")
    print(f"    gNMI decoding (decode_message)            {(decoded - parsed) * us:5.1f}")
    print(f"    Normalizer (counter rates, link health)   {(normalized - decoded) * us:5.1f}")
    print(f"    the rest: routing, batching, encoding     {(whole - normalized) * us:5.1f}")
    print(f"    the whole fold                            {whole * us:5.1f}")


def compiled_tree(scratch: Path) -> Path:
    """A copy of the package with the hot modules compiled by Cython in place."""
    from Cython.Build import cythonize
    from setuptools import Extension, setup

    if not (REPO / "proto" / "gen").is_dir():
        raise SystemExit("proto/gen is missing: run `make install` first")
    tree = scratch / "site"
    for sub, folder in ROOTS.items():
        shutil.copytree(
            REPO / folder,
            tree / "railtrace" / sub,
            ignore=shutil.ignore_patterns("__pycache__", "*.so"),
            dirs_exist_ok=True,
        )
    extensions = []
    for rel in HOT:
        source = tree / "railtrace" / rel
        name = "railtrace." + rel.removesuffix(".py").replace("/", ".")
        extensions.append(Extension(name, [str(source)]))
    here = Path.cwd()
    os.chdir(tree)  # setuptools reads the working folder's pyproject.toml, if any
    try:
        setup(
            name="railtrace-fold-bench",
            ext_modules=cythonize(extensions, language_level=3, quiet=True),
            script_args=["build_ext", "--inplace", "--parallel", str(os.cpu_count() or 1)],
        )
    finally:
        os.chdir(here)
    return tree


def child(tree: Path | None, args: argparse.Namespace) -> float:
    """One measurement in a fresh process, on the source or on the compiled copy."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)  # ahead of the editable install's finder
    cmd = [sys.executable, __file__, "--nodes", str(args.nodes), "--rounds", str(args.rounds)]
    if tree is not None:
        cmd.append("--compiled")
    done = subprocess.run([*cmd, "--child"], env=env, check=True, capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=288, help="reference design size")
    ap.add_argument("--rounds", type=int, default=6, help="timed samples of every switch port")
    ap.add_argument(
        "--split", action="store_true", help="time parsing, decoding and the Normalizer alone"
    )
    ap.add_argument("--cython", action="store_true", help="also run the Cython-compiled copy")
    ap.add_argument("--pairs", type=int, default=3, help="alternating runs with --cython")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compiled", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        from railtrace.streams.telemetry import leaves

        # The copy must really be the one imported, or the comparison compares nothing.
        if args.compiled != (not str(leaves.__file__).endswith(".py")):
            raise SystemExit(f"expected compiled={args.compiled}, imported {leaves.__file__}")
        print(measure(args.nodes, args.rounds, split=False))
        return
    if not args.cython:
        rate = measure(args.nodes, args.rounds, args.split)
        print(f"{args.nodes} nodes: {rate:,.0f} messages folded per CPU second")
        return
    with tempfile.TemporaryDirectory(prefix="rt-fold-cython-") as scratch:
        started = time.perf_counter()
        tree = compiled_tree(Path(scratch))
        print(f"hot modules compiled by Cython in {time.perf_counter() - started:.0f} s")
        for pair in range(args.pairs):
            source = child(None, args)
            cython = child(tree, args)
            print(
                f"run {pair + 1}: source {source:,.0f}, Cython {cython:,.0f} messages per CPU "
                f"second ({cython / source:.2f}x)"
            )


if __name__ == "__main__":
    main()
