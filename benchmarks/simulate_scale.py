"""Benchmark: an incident on a 100k-GPU fabric, simulated and replayed end to end.

Run: .venv/bin/python benchmarks/simulate_scale.py [--nodes 12500] [--watchdog 10]
     [--sample 60] [--fault link-down] [--seed 1] [--keep DIR]

Runs the two commands a user runs, as separate processes: `railtrace simulate` writes the
capture (cables.csv, every switch's gNMI file, every rank's logs, the scheduler's view) of the
reference design at `--nodes`, then `railtrace replay --json` reads it back through the whole
core into an embedded store. Prints each one's wall time, CPU time and peak RSS, the capture's
size, and each job's verdict beside the simulator's truth. A short watchdog and a long sampling
interval keep the capture to a few GiB: at 12,500 nodes every one of the 500,896 switch ports
is written at each sample.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RAILTRACE = str(Path(sys.executable).with_name("railtrace"))


def run(argv: list[str], out: Path) -> tuple[float, float, float]:
    """Run `argv` with stdout to `out`; (wall s, CPU s, peak RSS GiB) of that process."""
    started = time.perf_counter()
    with out.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({status}); see {out}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20


def size_gib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**30


def graded(truth: dict[str, Any], verdicts: list[dict[str, Any]]) -> list[str]:
    """One line per job: what the simulator did to it and what the replay said."""
    said = {v["job_id"]: v for v in verdicts}
    lines = []
    for job_id, t in sorted(truth["jobs"].items()):
        v = said.get(job_id)
        if v is None:
            lines.append(f"  job {job_id}: {t['state']}, {t['ranks']:,} ranks: no verdict")
            continue
        cause = v.get("cause") or {}
        blamed = (cause.get("link") or {}).get("id") or cause.get("node") or "nothing"
        want = (t.get("link") or {}).get("id") or t.get("node") or "nothing"
        right = v["state"] == t["state"] and blamed == want
        lines.append(
            f"  job {job_id}: {t['ranks']:,} ranks, truth {t['state']} ({want}); replay "
            f"{v['state']}, blamed {blamed} at {cause.get('confidence', 0):.2f}: "
            f"{'right' if right else 'WRONG'}"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=12_500)
    ap.add_argument("--watchdog", type=int, default=10, help="PyTorch NCCL timeout, s")
    ap.add_argument("--sample", type=int, default=60, help="gNMI sample interval, s")
    ap.add_argument("--fault", default="link-down")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="write the capture and store here and keep them")
    args = ap.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="rt-bench-sim-"))
    capture, data = work / "capture", work / "data"
    for d in (capture, data):
        shutil.rmtree(d, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    try:
        sim = run(
            [
                *(RAILTRACE, "simulate", str(capture), "--nodes", str(args.nodes)),
                *("--fault", args.fault, "--seed", str(args.seed)),
                *("--watchdog", str(args.watchdog), "--sample-interval", str(args.sample)),
            ],
            work / "simulate.out",
        )
        gnmi = list((capture / "gnmi").iterdir())
        print(
            f"{args.nodes:,} nodes, {args.fault} (seed {args.seed}), watchdog "
            f"{args.watchdog} s, sampling {args.sample} s"
        )
        print(
            f"simulate: {sim[0]:,.0f} s wall, {sim[1]:,.0f} s CPU, peak RSS {sim[2]:.2f} GiB; "
            f"capture {size_gib(capture):.2f} GiB ({len(gnmi):,} switch files, "
            f"{size_gib(capture / 'gnmi'):.2f} GiB of gNMI)"
        )
        rep = run(
            [RAILTRACE, "replay", str(capture), "--data", str(data), "--json"],
            work / "replay.json",
        )
        print(
            f"replay: {rep[0]:,.0f} s wall, {rep[1]:,.0f} s CPU, peak RSS {rep[2]:.2f} GiB; "
            f"store {size_gib(data) * 1024:,.0f} MiB"
        )
        truth = json.loads((capture / "truth.json").read_text())
        verdicts = json.loads((work / "replay.json").read_text())
        print("\n".join(graded(truth, verdicts)))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
