"""The log collector benchmark: NCCL/PyTorch lines per second scraped into the spool."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from railtrace.streams.wire import decode_log_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collector_runs import (
    collect,
    cores,
    cpu_seconds,
    design,
    records,
    tail,
    wait_for,
    write_config,
)

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
