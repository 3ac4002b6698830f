"""Benchmark: attribution accuracy over many simulated incidents.

Run: .venv/bin/python benchmarks/accuracy.py [--nodes 64] [--seeds 15] [--workers 2]
     [--watchdog 600]
For every fault kind (and `none`) and every seed: simulate, replay with the embedded core, and
score each job's verdict against the ground truth. Prints one row per fault kind.

- top-1: the stalled job's cause (link, or node for gpu-xid) is exactly the simulated one; for
  app-hang (a stall from outside the fabric), the job is seen stalled and nothing is blamed.
- top-3: the true culprit is among the first three candidates.
- false blames: a job that did not stall got a cause, or a stalled job was blamed on something
  that is not the culprit (for `none`, any blame at all).
- decided after fault / lead over watchdog: medians over the stalled jobs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.streams.records import CauseKind, JobState


def run_one(task: tuple[int, str, int, int]) -> dict[str, Any]:
    nodes, fault, seed, watchdog = task
    work = Path(tempfile.mkdtemp(prefix="railtrace-acc-"))
    try:
        truth = write_capture(work, nodes, Fault(fault), seed, watchdog_s=watchdog)
        report = replay(open_capture(work), DiscardSink())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {"fault": fault, "seed": seed, "jobs": []}
    for v in report.verdicts:
        want = truth["jobs"][v.job_id]
        culprit = (want["link"] or {}).get("id") if want["cause"] == "link" else want["node"]
        # A hang from outside the fabric is answered right only by naming nothing.
        outside = want["cause"] == "unknown"
        got = v.cause_link.link_id if v.cause_link else v.cause_node
        names = [c.link.link_id if c.link else c.node for c in v.candidates]
        out["jobs"].append(
            {
                "stalled_truth": want["state"] == "stalled",
                "stalled_seen": v.state == JobState.STALLED,
                "blamed": v.cause_kind != CauseKind.UNKNOWN,
                "top1": (got is None and v.state == JobState.STALLED)
                if outside
                else (got is not None and got == culprit),
                "top3": (got is None)
                if outside
                else (culprit is not None and culprit in names[:3]),
                "confidence": v.confidence,
                "after_fault_s": (v.decided_at_ns - truth["fault_at_ns"]) / 1e9
                if v.decided_at_ns and truth["fault_at_ns"]
                else None,
                "lead_s": (want["watchdog_at_ns"] - v.decided_at_ns) / 1e9
                if v.decided_at_ns and want["watchdog_at_ns"]
                else None,
            }
        )
    return out


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.0f}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--seeds", type=int, default=15)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--watchdog", type=int, default=600)
    args = ap.parse_args()
    tasks = [
        (args.nodes, str(f), s, args.watchdog) for f in Fault for s in range(1, args.seeds + 1)
    ]
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(run_one, tasks))
    rows: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        row = rows[r["fault"]]
        for j in r["jobs"]:
            if j["stalled_truth"]:
                row["top1"].append(j["top1"])
                row["top3"].append(j["top3"])
                row["state_ok"].append(j["stalled_seen"])
                row["conf_right" if j["top1"] else "conf_wrong"].append(j["confidence"])
                if j["after_fault_s"] is not None:
                    row["after"].append(j["after_fault_s"])
                    row["lead"].append(j["lead_s"])
                row["false"].append(j["blamed"] and not j["top1"])
            else:
                row["healthy"].append(True)
                row["false"].append(j["blamed"] or j["stalled_seen"])
    print(
        f"{len(results)} incidents at {args.nodes} nodes ({args.seeds} seeds per kind), "
        f"watchdog {args.watchdog} s, {time.perf_counter() - started:.0f} s wall"
    )
    head = (
        f"{'fault':<10} {'stalled':>7} {'top-1':>6} {'top-3':>6} {'healthy':>7} "
        f"{'false blames':>12} {'conf right':>10} {'conf wrong':>10} "
        f"{'decided after fault s':>21} {'lead over watchdog s':>20}"
    )
    print(head)
    totals = defaultdict(int)
    for fault in (str(f) for f in Fault):
        row = rows[fault]
        n = len(row["top1"])
        totals["stalled"] += n
        totals["top1"] += sum(row["top1"])
        totals["false"] += sum(row["false"])
        totals["jobs"] += len(row["false"])
        cr = f"{statistics.mean(row['conf_right']):.2f}" if row["conf_right"] else "-"
        cw = f"{statistics.mean(row['conf_wrong']):.2f}" if row["conf_wrong"] else "-"
        print(
            f"{fault:<10} {n:>7} {sum(row['top1']):>6} {sum(row['top3']):>6} "
            f"{len(row['healthy']):>7} {sum(row['false']):>12} {cr:>10} {cw:>10} "
            f"{_median(row['after']):>21} {_median(row['lead']):>20}"
        )
    acc = totals["top1"] / totals["stalled"] if totals["stalled"] else 0.0
    print(
        f"overall top-1 accuracy {totals['top1']}/{totals['stalled']} = {acc:.1%}; "
        f"false blames {totals['false']} of {totals['jobs']} job verdicts"
    )


if __name__ == "__main__":
    main()
