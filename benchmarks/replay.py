"""Benchmark: replay throughput, verdict latency and peak memory of the embedded core.

Run: .venv/bin/python benchmarks/replay.py [--nodes 64] [--fault link-down] [--seed 1]
     [--watchdog 600] [--sample 10] [--store]
Simulates one incident, then replays it in this one process (one core): first decoding every
gNMI file and log, then feeding the merged stream through the pipeline. With --store the output
goes into a fresh chDB store (batched inserts) instead of being dropped, and the insert time is
reported apart.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from railtrace.gctuning import settle_heap
from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.simulate import Fault, write_capture


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--fault", default="link-down", choices=[str(f) for f in Fault])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--watchdog", type=int, default=600)
    ap.add_argument("--sample", type=int, default=10, help="telemetry sampling interval, s")
    ap.add_argument("--store", action="store_true", help="write into a real chDB store")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="railtrace-bench-"))
    try:
        t = time.perf_counter()
        truth = write_capture(
            work / "cap",
            args.nodes,
            Fault(args.fault),
            args.seed,
            watchdog_s=args.watchdog,
            sample_s=args.sample,
        )
        sim_s = time.perf_counter() - t
        size = sum(p.stat().st_size for p in (work / "cap").rglob("*") if p.is_file())
        capture = open_capture(work / "cap")
        sink: object = DiscardSink()
        if args.store:
            from railtrace.store.chdb_store import ChdbStore

            sink = ChdbStore(work / "data")
            sink.migrate()
        settle_heap()  # as `railtrace replay` does
        t = time.perf_counter()
        report = replay(capture, sink)  # type: ignore[arg-type]
        total_s = time.perf_counter() - t
        if args.store:
            sink.close()  # type: ignore[attr-defined]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    core_s = report.decode_s + report.process_s
    lat = sorted(report.verdict_latency_s)
    stalled = [v for v in report.verdicts if v.state == "stalled"]
    print(
        f"incident: {args.nodes} nodes, fault {args.fault}, seed {args.seed}, "
        f"watchdog {args.watchdog} s, sampling {args.sample} s; "
        f"capture {size / 2**20:.0f} MiB written in {sim_s:.1f} s"
    )
    print(
        f"input: {report.telemetry_values:,} telemetry values, {report.log_lines:,} log lines "
        f"({report.facts:,} facts)"
    )
    print(
        f"decode (gNMI JSON + log parsing): {report.decode_s:.2f} s; "
        f"pipeline (rates, health, attribution): {report.process_s:.2f} s; "
        f"store writes: {report.store_s:.2f} s; wall total {total_s:.2f} s"
    )
    print(
        f"throughput, one core, decode+pipeline: "
        f"{report.telemetry_values / core_s:,.0f} telemetry values/s overall; "
        f"{(report.telemetry_values + report.facts) / report.process_s:,.0f} records/s "
        f"through the pipeline"
    )
    gnmi_s = report.decode_s - report.logs_s
    print(
        f"decode rates, one core: {report.telemetry_values / gnmi_s:,.0f} gNMI values/s; "
        f"{report.log_lines / report.logs_s:,.0f} log lines/s"
    )
    print(f"judgements: {report.evaluations:,} job evaluations")
    print(
        f"verdict changes: {len(lat)}; latency of the deciding step: "
        f"p50 {statistics.median(lat) * 1e3:.2f} ms, max {lat[-1] * 1e3:.2f} ms"
        if lat
        else "verdict changes: 0"
    )
    for v in stalled:
        want = truth["jobs"][v.job_id]
        cause = v.cause_link.link_id if v.cause_link else v.cause_node
        print(
            f"job {v.job_id}: {v.cause_kind} {cause} conf {v.confidence:.2f}; "
            f"decided {(v.decided_at_ns - truth['fault_at_ns']) / 1e9:.1f} s after the fault, "
            f"{(want['watchdog_at_ns'] - v.decided_at_ns) / 1e9:.0f} s before the watchdog"
        )
    print(f"peak RSS: {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
