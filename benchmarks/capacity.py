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
import tempfile
import time
from pathlib import Path

from railtrace.replay import open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.attrs import Role

DAY_S = 86_400
TTL_DAYS = 30
#: Tables whose rows grow with the telemetry (the rest grow with jobs and incidents).
TELEMETRY_TABLES = ("link_samples", "link_fault_minutes")


def switch_ports(nodes: int) -> tuple[int, int]:
    """(switch ports cabled, cables) of the `nodes`-node reference design."""
    fabric = build_fabric(rail_optimized(nodes).plan)
    ports = sum(
        1
        for ref in fabric.links.values()
        for end in (ref.a, ref.b)
        if fabric.role(end.device) != Role.HOST
    )
    return ports, len(fabric.links)


def measure(nodes: int) -> dict[str, tuple[int, int, int]]:
    """Per table: (rows, bytes on disk, uncompressed bytes) after replaying one incident; and
    under `_series` the stored series of link samples, `_ports` the switch ports sampled."""
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
    out = {p["table"]: (int(p["rows"]), int(p["disk"]), int(p["raw"])) for p in parts}
    out["_series"] = (int(series["n"]), int(series["most"]), 0)
    out["_ports"] = (int(series["ports"]), 0, 0)
    return out


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
    series, samples_per_series, _ = measured["_series"]
    sampled_ports = measured["_ports"][0]
    per_port = series / sampled_ports
    print(
        f"measured on a {args.measure_nodes}-node incident in {took:.0f} s: {series:,} series "
        f"on {sampled_ports:,} ports ({per_port:.2f} per port), up to {samples_per_series} "
        "samples each"
    )
    for table in TELEMETRY_TABLES:
        rows, disk, raw = measured.get(table, (0, 0, 0))
        if rows:
            print(
                f"  {table}: {rows:,} rows, {_size(disk)} on disk = {disk / rows:.2f} B/row "
                f"({raw / rows:.1f} B/row uncompressed, {raw / max(disk, 1):.1f}x)"
            )
    samples_rows, samples_disk, _ = measured["link_samples"]
    bytes_per_row = samples_disk / samples_rows

    ports, cables = switch_ports(args.nodes)
    print(
        f"\n{args.nodes:,}-node reference design: {cables:,} cables, {ports:,} switch ports, "
        f"{ports * per_port:,.0f} stored series"
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
