"""Benchmark: the store's rows per day and disk for 30 days of telemetry at a fabric's size.

Run: .venv/bin/python benchmarks/capacity.py [--nodes 12500] [--sample 10,1] [--measure-nodes 64]

Measures, then scales. A `--measure-nodes` simulated incident (13 minutes of telemetry at 10 s)
is replayed into a fresh chDB store, parts merged, and the store's own `system.parts` gives the
rows each stored series makes per sample and the bytes on disk per row of every table the
telemetry fills. The fabric of `--nodes` (the reference generator's rail-optimized design) gives
its switch ports; rows per day and disk for 30 days (the link samples' TTL) follow per sampling
interval. Compression depends on what the counters do: the simulator's rates have its jitter
and its fault, not a year of a real fabric's diurnal traffic, so the disk figures are an
estimate to be checked against a real store.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from streaming import cabled_switch_ports

from railtrace.replay import open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore
from railtrace.topology import build_fabric, rail_optimized

DAY_S = 86_400
TTL_DAYS = 30
#: Tables whose rows grow with the telemetry (the rest grow with jobs and incidents).
TELEMETRY_TABLES = ("link_samples", "link_fault_minutes")


@dataclass(frozen=True, slots=True)
class Measured:
    """What one replayed incident filled the store with."""

    #: table -> (rows, bytes on disk, uncompressed bytes), parts merged
    tables: dict[str, tuple[int, int, int]]
    #: link-sample series stored, the switch ports they are of, the most samples of one
    series: int
    ports: int
    most_samples: int


def measure(nodes: int) -> Measured:
    """Replay one `nodes`-node incident into a fresh chDB store and read what it holds."""
    work = Path(tempfile.mkdtemp(prefix="railtrace-capacity-"))
    try:
        write_capture(work / "cap", nodes, Fault.LINK_DOWN, 1)
        store = ChdbStore(work / "data")
        try:
            store.migrate()
            replay(open_capture(work / "cap"), store)
            for table in TELEMETRY_TABLES:
                store._execute(f"OPTIMIZE TABLE railtrace.{table} FINAL")
            parts = store.select(
                "SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS disk, "
                "sum(data_uncompressed_bytes) AS raw FROM system.parts "
                "WHERE active AND database = 'railtrace' GROUP BY table ORDER BY table"
            ).to_pylist()
            series = store.select(
                "SELECT count() AS n, uniqExact(device, interface) AS ports, "
                "max(c) AS most FROM (SELECT device, interface, metric, qualifier, count() AS c "
                "FROM railtrace.link_samples GROUP BY device, interface, metric, qualifier)"
            ).to_pylist()[0]
        finally:
            store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Measured(
        {p["table"]: (int(p["rows"]), int(p["disk"]), int(p["raw"])) for p in parts},
        int(series["n"]),
        int(series["ports"]),
        int(series["most"]),
    )


def _size(n_bytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{n_bytes / 2**10:,.1f} KiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=12_500)
    ap.add_argument("--sample", default="10,1", help="sampling intervals, s, comma separated")
    ap.add_argument("--measure-nodes", type=int, default=64)
    args = ap.parse_args()
    intervals = [float(s) for s in args.sample.split(",") if s.strip()]

    t = time.perf_counter()
    measured = measure(args.measure_nodes)
    took = time.perf_counter() - t
    per_port = measured.series / measured.ports
    print(
        f"measured on a {args.measure_nodes}-node incident in {took:.0f} s: "
        f"{measured.series:,} series on {measured.ports:,} ports ({per_port:.2f} per port), "
        f"up to {measured.most_samples} samples each"
    )
    for table in TELEMETRY_TABLES:
        rows, disk, raw = measured.tables.get(table, (0, 0, 0))
        if rows:
            print(
                f"  {table}: {rows:,} rows, {_size(disk)} on disk = {disk / rows:.2f} B/row "
                f"({raw / rows:.1f} B/row uncompressed, {raw / max(disk, 1):.1f}x)"
            )
    samples_rows, samples_disk, _ = measured.tables["link_samples"]
    bytes_per_row = samples_disk / samples_rows

    fabric = build_fabric(rail_optimized(args.nodes).plan)
    ports = len(cabled_switch_ports(fabric))
    print(
        f"\n{args.nodes:,}-node reference design: {len(fabric.links):,} cables, {ports:,} "
        f"switch ports, {ports * per_port:,.0f} stored series"
    )
    print(
        "| sampling | port-samples/s | link_samples rows/s | rows/day | disk/day | "
        f"disk for {TTL_DAYS} days |"
    )
    print("|---|---|---|---|---|---|")
    for every_s in intervals:
        port_rate = ports / every_s
        row_rate = ports * per_port / every_s
        rows_day = row_rate * DAY_S
        disk_day = rows_day * bytes_per_row
        print(
            f"| {every_s:g} s | {port_rate:,.0f} | {row_rate:,.0f} | {rows_day / 1e9:,.2f} G | "
            f"{_size(disk_day)} | {_size(disk_day * TTL_DAYS)} |"
        )


if __name__ == "__main__":
    main()
