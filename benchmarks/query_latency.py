"""Benchmark: API query latency over 100 million link samples, and the batched writer's rows/s.

Run:
    .venv/bin/python benchmarks/query_latency.py --data /tmp/rt-bench-100m       # load, measure
    .venv/bin/python benchmarks/query_latency.py --rows 2000000 --endpoints verdict --fresh
    .venv/bin/python benchmarks/query_latency.py --data /tmp/rt-bench-100m --skip-load \\
        --skip-writer --skip-sql                       # only the HTTP part, on a loaded directory

The requirement: with 10 concurrent clients, p99 <= 100 ms for a job's verdict and for a
link's one-hour history, p99 <= 1 s for the fabric-wide top-k worst links over an hour, on a
store holding 100 million link-sample rows; and the rows/s of the batched writer. Phases:

1. load: an embedded chDB store in `--data`, schema applied by the project's migrations, then
   `--rows` link samples made server-side by `INSERT ... SELECT ... FROM numbers()` in the
   shape railtrace stores for the reference fabric (every switch port, the metrics of its
   platform, 10 s apart; see query_latency_data.py), and through the store's own write methods
   link events, a few thousand verdicts and the NCCL log facts of a few hundred of those jobs
   (what a link's blast radius is rebuilt from). Prints rows/s, size on disk and parts.
   That shape is 12,288 series, 106 million rows a day: 100 million rows are 22.6 hours of
   the 64-node fabric, not a week (`--days 7` loads the week: 743 million rows).
2. writer: the store's batched write path (`write_link_samples`, the call the sink and the
   replay make: Python records -> arrow -> dedup token -> insert) into a scratch database of
   the same chDB instance, at the store's `batch_rows` and at a sink-sized call.
3. SQL only: the store methods and queries behind the endpoints, in this process, with
   `--sql-clients` threads, so the store's share is known apart from HTTP; beside them
   variants of the queries and, with `--alt-layout`, copies of the samples in other layouts.
   First a check that the store answers concurrent callers correctly (each gets its own job).
4. HTTP: `railtrace serve` on the directory as a subprocess (topology from the fabric's
   cables.csv; a read token from `railtrace token create` when that command exists) and
   `--clients` concurrent clients, each on its own keep-alive connection, per endpoint, after
   a warm-up (and, for the link endpoint, `--link-prime` requests that fill its path cache).

The URL paths are at the top of this file, so a change in the API is a one-line change here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import json
import math
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from railtrace.settings import Settings, load_settings
from railtrace.store import open_store
from railtrace.store.chdb_store import ChdbStore
from railtrace.store.columns import qualified
from railtrace.store.sql_store import Store
from railtrace.topology import Fabric
from railtrace.topology.attrs import Role
from railtrace.topology.ends import Endpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query_latency_data as data

# -- the API contract (change here when the routes change) --------------------------------------

VERDICT_PATH = "/v1/jobs/{job_id}/verdict"
LINK_PATH = "/v1/links/{link_id}"  # ?since=&until= (ISO-8601 UTC)
WORST_PATH = "/v1/links"  # ?since=&until=&metric=&limit=
READY_PATH = "/readyz"
PATHS = {"verdict": VERDICT_PATH, "link": LINK_PATH, "worst": WORST_PATH}

#: p99 goals of the requirement, seconds.
GOALS = {"verdict": 0.100, "link": 0.100, "worst": 1.0}

MANIFEST = "railtrace-bench.json"
DATABASE = "railtrace"
WRITER_DATABASE = "railtrace_writer_bench"

#: Other layouts of the same samples, copied into BENCH_DATABASE by --alt-layout and timed with
#: the same queries. `hour-first` reorders the table so an hour of one metric is contiguous;
#: `fine-granules` keeps the order with 1,024-row granules instead of 8,192 (a series holds
#: 8,640 rows a day, so an hour of it is read as a whole granule of about a day);
#: `projection` keeps the table's order and adds a projection in that order (ClickHouse picks
#: whichever reads less; ReplacingMergeTree needs deduplicate_merge_projection_mode for it).
ALT_LAYOUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hour-first": (
        "link_samples_by_hour",
        (
            "CREATE TABLE {table} AS {source} ENGINE = ReplacingMergeTree "
            "PARTITION BY toYYYYMMDD(ts) "
            "ORDER BY (metric, qualifier, toStartOfHour(ts), device, interface, ts)",
        ),
    ),
    "fine-granules": (
        "link_samples_fine",
        (
            "CREATE TABLE {table} AS {source} ENGINE = ReplacingMergeTree "
            "PARTITION BY toYYYYMMDD(ts) ORDER BY (device, interface, metric, qualifier, ts) "
            "SETTINGS index_granularity = 1024",
        ),
    ),
    "projection": (
        "link_samples_projected",
        (
            "CREATE TABLE {table} AS {source}",
            "ALTER TABLE {table} MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild'",
            "ALTER TABLE {table} ADD PROJECTION by_metric_hour "
            "(SELECT * ORDER BY metric, qualifier, toStartOfHour(ts), link_id)",
        ),
    ),
}

err = Console(stderr=True)

# -- measured figures ---------------------------------------------------------------------------


@dataclass(slots=True)
class Latency:
    """Latencies of one kind of request under `clients` concurrent clients."""

    name: str
    clients: int
    seconds: float
    samples: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    bytes: int = 0
    goal_s: float | None = None
    server_cpu_s: float | None = None
    load_avg: float = 0.0  # of the machine, 1 min, as the measurement ended

    def pct(self, p: float) -> float:
        """Nearest-rank percentile (p in 0..100), seconds."""
        if not self.samples:
            return math.nan
        ordered = sorted(self.samples)
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

    @property
    def met(self) -> bool | None:
        if self.goal_s is None or not self.samples:
            return None
        return self.errors == 0 and self.pct(99) <= self.goal_s

    def line(self) -> str:
        if not self.samples:
            return f"  {self.name:<56} no successful request ({self._status_text()})"
        verdict = ""
        if self.goal_s is not None:
            mark = "MET" if self.met else "MISSED"
            verdict = f"  goal p99 <= {self.goal_s * 1000:,.0f} ms: {mark}"
        cpu = ""
        if self.server_cpu_s is not None:
            cpu = f", server {self.server_cpu_s / len(self.samples) * 1000:.1f} ms CPU/req"
        errors = f", {self.errors} failed ({self._status_text()})" if self.errors else ""
        return (
            f"  {self.name:<56} n={len(self.samples):>6,}  p50 {self.pct(50) * 1000:8.1f} ms"
            f"  p99 {self.pct(99) * 1000:8.1f} ms  max {max(self.samples) * 1000:8.1f} ms"
            f"  {len(self.samples) / self.seconds:7.1f} req/s  load {self.load_avg:.1f}{cpu}"
            f"{errors}{verdict}"
        )

    def _status_text(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items())) or "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "clients": self.clients,
            "requests": len(self.samples),
            "failed": self.errors,
            "statuses": dict(self.statuses),
            "p50_ms": self.pct(50) * 1000,
            "p99_ms": self.pct(99) * 1000,
            "max_ms": max(self.samples, default=math.nan) * 1000,
            "per_s": len(self.samples) / self.seconds,
            "goal_p99_ms": None if self.goal_s is None else self.goal_s * 1000,
            "load_avg_1m": self.load_avg,
            "met": self.met,
            "server_cpu_ms_per_request": (
                None
                if self.server_cpu_s is None or not self.samples
                else self.server_cpu_s / len(self.samples) * 1000
            ),
        }


@dataclass(slots=True)
class Manifest:
    """What was loaded into a data directory, so `--skip-load` measures the same data."""

    nodes: int
    seed: int
    bad_links: list[str]
    series: int
    steps: int
    step_s: int
    end_ns: int
    rows: int
    verdicts: int
    link_events: int
    job_facts: int
    load_s: float
    load_rows_per_s: float
    loaded_at: str

    @property
    def span(self) -> data.Span:
        return data.Span(self.steps, self.step_s, self.end_ns)


# -- helpers ------------------------------------------------------------------------------------


def progress() -> Progress:
    """The CLI's progress bar (rich, on stderr, gone when done)."""
    return Progress(
        TextColumn("{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def open_chdb(settings: Settings, path: Path, database: str = DATABASE) -> Store:
    """Open the embedded store as the CLI does (`open_store` from the settings), on `path`.

    The loader runs SQL of its own beside the store's methods (`Store.select`); a ClickHouse
    server URL in the settings is refused, as this benchmark is about the embedded store."""
    if settings.store.clickhouse_url:
        raise SystemExit("store.clickhouse_url is set: this benchmark measures embedded chDB")
    store_settings = settings.store.model_copy(update={"data_dir": path, "database": database})
    return open_store(store_settings)


def iso(ns: int) -> str:
    return datetime.fromtimestamp(ns // data.NS, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def random_window(rng: random.Random, span: data.Span, window_s: int) -> tuple[int, int]:
    """A window of `window_s` seconds at a random whole second inside the loaded span."""
    room = max(0, span.steps * span.step_s - window_s)
    since = span.start_ns + rng.randrange(room + 1) * data.NS
    return since, since + window_s * data.NS


def parts_of(store: Store, database: str, table: str) -> dict[str, float]:
    """Active parts of a table: count, rows and bytes (system.parts)."""
    row = store.select(
        "SELECT count() AS parts, sum(rows) AS rows, sum(bytes_on_disk) AS disk, "
        "sum(data_compressed_bytes) AS compressed, sum(data_uncompressed_bytes) AS raw, "
        "uniqExact(partition) AS partitions "
        "FROM system.parts WHERE database = {db:String} AND table = {t:String} AND active",
        {"db": database, "t": table},
    ).to_pylist()[0]
    return {k: float(v or 0) for k, v in row.items()}


def wait_for_merges(store: Store, database: str, limit_s: float) -> float:
    """Wait (up to `limit_s`) until no merge has run on the database for 5 s: queries on a
    store that has run for a while meet merged parts, not the parts of a fresh bulk load.
    (Merges are scheduled a moment after an insert, hence the quiet period.)"""
    began = time.perf_counter()
    quiet_since = began
    while time.perf_counter() - began < limit_s:
        running = store.select(
            "SELECT count() AS n FROM system.merges WHERE database = {db:String}",
            {"db": database},
        )["n"][0].as_py()
        now = time.perf_counter()
        if running:
            quiet_since = now
        elif now - quiet_since >= 5:
            break
        time.sleep(0.5)
    return time.perf_counter() - began


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- phase 1: load ------------------------------------------------------------------------------


def load(args: argparse.Namespace, settings: Settings, fabric: Fabric) -> Manifest:
    """Apply the schema, load the samples server-side, write verdicts and events through the
    store, and leave a manifest for later runs on the same directory."""
    bad = data.bad_links(fabric, args.bad_links, args.seed)
    series = data.build_series(fabric, bad, args.seed)
    span = data.span_for(args.rows, args.days, len(series), args.step_s)
    rows = span.steps * len(series)
    print("\n== load: link samples, server-side (INSERT ... SELECT FROM numbers())")
    print(
        f"  fabric: {args.nodes} nodes, {len(fabric.links):,} cables, "
        f"{len(data.switch_ports(fabric)):,} switch ports, {len(series):,} series "
        f"({len(series) * 86400 // args.step_s:,} rows per day at {args.step_s} s)"
    )
    print(
        f"  span: {span.steps:,} steps of {args.step_s} s = {span.hours:.1f} h, "
        f"{iso(span.start_ns)} .. {iso(span.end_ns)}; {rows:,} rows; "
        f"{len(bad)} bad links: {', '.join(bad[:3])}, ..."
    )
    store = open_chdb(settings, args.data)
    try:
        applied = store.migrate()
        print(f"  schema: migrations {[m.version for m in applied]} applied")
        data.create_series_table(store, series)
        began = time.perf_counter()
        with progress() as bar:
            task = bar.add_task("samples", total=rows)
            for first, steps in data.chunks(span, len(series), args.chunk_rows):
                store._execute(data.insert_sql(DATABASE, span, len(series), first, steps))
                bar.advance(task, steps * len(series))
        load_s = time.perf_counter() - began
        print(
            f"  loaded {rows:,} rows in {load_s:.1f} s: {rows / load_s:,.0f} rows/s "
            f"(peak RSS of this process {peak_rss_mib():,.0f} MiB)"
        )
        loaded_parts = parts_of(store, DATABASE, "link_samples")["parts"]
        waited = wait_for_merges(store, DATABASE, args.merge_wait_s)
        p = parts_of(store, DATABASE, "link_samples")
        print(
            f"  on disk: {p['disk'] / 2**20:,.1f} MiB in {p['parts']:.0f} parts over "
            f"{p['partitions']:.0f} daily partitions ({p['disk'] / max(rows, 1):.2f} B/row; "
            f"{p['raw'] / 2**20:,.0f} MiB uncompressed); {loaded_parts:.0f} parts as loaded, "
            f"then {waited:.0f} s until merges were quiet"
        )
        events = data.link_events(fabric, bad, span, args.events_per_link_hour, args.seed)
        verdicts = data.verdicts(fabric, bad, args.verdicts, span, args.seed)
        placed = sorted(
            random.Random(args.seed).sample(
                [v.job_id for v in verdicts], min(args.jobs_with_facts, len(verdicts))
            )
        )
        facts = data.job_facts(args.nodes, placed, span, args.seed)
        began = time.perf_counter()
        store.write_link_events(events)
        store.write_verdicts(verdicts)
        store.write_job_facts(facts)
        print(
            f"  through the store: {len(events):,} link events, {len(verdicts):,} verdicts "
            f"({sum(v.cause_link is not None for v in verdicts):,} on a link), {len(facts):,} "
            f"job facts of {len(placed)} of those jobs (parsed from simulated NCCL logs) "
            f"in {time.perf_counter() - began:.1f} s"
        )
    finally:
        store.close()
    manifest = Manifest(
        nodes=args.nodes,
        seed=args.seed,
        bad_links=bad,
        series=len(series),
        steps=span.steps,
        step_s=span.step_s,
        end_ns=span.end_ns,
        rows=rows,
        verdicts=len(verdicts),
        link_events=len(events),
        job_facts=len(facts),
        load_s=load_s,
        load_rows_per_s=rows / load_s,
        loaded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    (args.data / MANIFEST).write_text(json.dumps(asdict(manifest), indent=2) + "\n")
    print(f"  data directory: {args.data} ({dir_bytes(args.data) / 2**20:,.0f} MiB in all)")
    return manifest


def read_manifest(path: Path) -> Manifest:
    try:
        raw = json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        raise SystemExit(
            f"{path} holds no {MANIFEST}: load it first (without --skip-load)"
        ) from None
    return Manifest(**raw)


# -- phase 2: the batched writer ----------------------------------------------------------------


def writer(args: argparse.Namespace, settings: Settings, fabric: Fabric) -> list[dict[str, Any]]:
    """rows/s of `write_link_samples` into a scratch database of the same chDB instance, at
    each call size of `--writer-calls` (the sink hands over what a Kafka batch holds; the
    replay hands over `batch_rows`). Building the records is not timed; everything the store
    does with them is (arrow columns, dedup digest, insert)."""
    series = data.build_series(fabric, [], args.seed)
    rows = data.writer_rows(series, args.writer_rows, int(data.END.timestamp()) * data.NS, 10)
    store = open_chdb(settings, args.data, WRITER_DATABASE)
    out = []
    print(f"\n== batched writer: store.write_link_samples, {len(rows):,} rows per run")
    print(f"  store batch_rows = {settings.store.batch_rows:,} (rows per insert)")
    try:
        store.migrate()
        for call in args.writer_calls:
            store._execute(f"TRUNCATE TABLE {qualified(WRITER_DATABASE, 'link_samples')}")
            began = time.perf_counter()
            cpu = time.process_time()
            for start in range(0, len(rows), call):
                store.write_link_samples(rows[start : start + call])
            took = time.perf_counter() - began
            cpu_s = time.process_time() - cpu
            stored = store.count("link_samples")
            figure = {
                "rows_per_call": call,
                "calls": math.ceil(len(rows) / call),
                "rows": len(rows),
                "seconds": took,
                "rows_per_s": len(rows) / took,
                "cpu_s": cpu_s,
                "stored": stored,
            }
            out.append(figure)
            print(
                f"  {call:>7,} rows per call ({figure['calls']:,} calls): {took:6.2f} s = "
                f"{len(rows) / took:>9,.0f} rows/s, {cpu_s / took:.2f} cores of this process; "
                f"{stored:,} rows stored"
            )
    finally:
        with contextlib.suppress(Exception):
            store._execute(f"DROP DATABASE IF EXISTS {WRITER_DATABASE} SYNC")
        store.close()
    return out


# -- phase 3: SQL only --------------------------------------------------------------------------

# One link's samples: both ends by (device, interface), the table's key prefix. The link id
# column is not in the key, so `WHERE link_id = ...` reads every granule of the window's days
# (measured below as "by link_id column").
HISTORY_SQL = """\
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, device, interface, metric, qualifier, rate, interval_s
FROM {table}
WHERE (device, interface) IN (({{a_dev:String}}, {{a_if:String}}),
                              ({{b_dev:String}}, {{b_if:String}}))
  AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
  AND ts < fromUnixTimestamp64Nano({{until:Int64}})
ORDER BY ts, device, interface, metric, qualifier"""

HISTORY_BY_LINK_ID_SQL = """\
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, device, interface, metric, qualifier, rate, interval_s
FROM {table}
WHERE link_id = {{link:String}}
  AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
  AND ts < fromUnixTimestamp64Nano({{until:Int64}})
ORDER BY ts, device, interface, metric, qualifier"""

# The top-k straight from the samples: errors summed over the window per link (both ends),
# worst first. (store.worst_links, when the store has it, may read a rollup instead.)
WORST_SQL = """\
SELECT link_id, sum(rate * interval_s) AS total, max(rate) AS peak_rate, count() AS samples
FROM {table}{final}
WHERE metric = {{metric:String}} AND link_id != ''
  AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
  AND ts < fromUnixTimestamp64Nano({{until:Int64}})
GROUP BY link_id
HAVING total > 0
ORDER BY total DESC, link_id
LIMIT {{limit:UInt32}}"""

# The same top-k grouped by switch port (LowCardinality keys) instead of the link id string,
# the ports' totals summed per link in Python from the fabric the API holds: the link id
# column (about 45 bytes a row) is then never read.
WORST_BY_PORT_SQL = """\
SELECT device, interface, sum(rate * interval_s) AS total, max(rate) AS peak_rate,
       count() AS samples
FROM {table}
WHERE metric = {{metric:String}}
  AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
  AND ts < fromUnixTimestamp64Nano({{until:Int64}})
GROUP BY device, interface"""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What requests are drawn from: links (with their ends), job ids, the loaded span."""

    fabric: Fabric
    links: list[str]
    jobs: list[str]
    span: data.Span
    window_s: int
    metric: str
    limit: int


def history_params(inputs: Inputs, rng: random.Random) -> dict[str, Any]:
    lid = rng.choice(inputs.links)
    ref = inputs.fabric.links[lid]
    since, until = random_window(rng, inputs.span, inputs.window_s)
    return {
        "link": lid,
        "a_dev": ref.a.device,
        "a_if": ref.a.interface,
        "b_dev": ref.b.device,
        "b_if": ref.b.interface,
        "since": since,
        "until": until,
    }


#: (name, goal key or None for a component, one request returning the rows it got back).
SqlRequest = tuple[str, str | None, Callable[[random.Random], int]]


def sql_requests(store: Store, inputs: Inputs, alt: dict[str, str]) -> list[SqlRequest]:
    """Every SQL-level measurement: the store methods the link endpoints call (`link_series`,
    `worst_links`, `job_activity`), beside them the raw queries of this file, and variants
    that show what the layout costs. Each request returns the rows it got back, so one that
    silently finds nothing shows."""
    samples = qualified(DATABASE, "link_samples")
    step_ns = max(1, math.ceil(inputs.window_s / 360)) * data.NS  # the endpoint's default step

    def verdict(rng: random.Random) -> int:
        return int(store.get_verdict(rng.choice(inputs.jobs)) is not None)

    def raw_samples(sql: str) -> Callable[[random.Random], int]:
        def run(rng: random.Random) -> int:
            return int(store.select(sql, history_params(inputs, rng)).num_rows)

        return run

    def series(rng: random.Random) -> int:
        p = history_params(inputs, rng)
        ref = inputs.fabric.links[p["link"]]
        return sum(
            len(s.ts_ns) for s in store.link_series([ref.a, ref.b], p["since"], p["until"], step_ns)
        )

    def events(rng: random.Random) -> int:
        p = history_params(inputs, rng)
        return len(store.link_events_between([p["link"]], p["since"], p["until"], limit=1000))

    def jobs(rng: random.Random) -> int:
        return len(store.list_jobs(limit=1000)) + len(store.job_activity(limit=200))

    def history(rng: random.Random) -> int:
        return series(rng) + events(rng) + jobs(rng)

    def worst(table: str, final: str) -> Callable[[random.Random], int]:
        sql = WORST_SQL.format(table=table, final=final)

        def run(rng: random.Random) -> int:
            since, until = random_window(rng, inputs.span, inputs.window_s)
            params = {"metric": inputs.metric, "since": since, "until": until}
            return int(store.select(sql, {**params, "limit": inputs.limit}).num_rows)

        return run

    def worst_store(rng: random.Random) -> int:
        since, until = random_window(rng, inputs.span, inputs.window_s)
        return len(store.worst_links(inputs.metric, since, until, inputs.limit))

    def worst_by_port(rng: random.Random) -> int:
        since, until = random_window(rng, inputs.span, inputs.window_s)
        params = {"metric": inputs.metric, "since": since, "until": until}
        ports = store.select(WORST_BY_PORT_SQL.format(table=samples), params).to_pylist()
        totals: dict[str, float] = {}
        for row in ports:
            lid = inputs.fabric.link_at.get(Endpoint(row["device"], row["interface"]))
            if lid:
                totals[lid] = totals.get(lid, 0.0) + row["total"]
        top = [kv for kv in totals.items() if kv[1] > 0]
        return len(heapq.nsmallest(inputs.limit, top, key=lambda kv: (-kv[1], kv[0])))

    out: list[SqlRequest] = [
        ("verdict: store.get_verdict", "verdict", verdict),
        ("link: samples (store.link_series)", None, series),
        (
            "link: samples, raw rows by (device, interface)",
            None,
            raw_samples(HISTORY_SQL.format(table=samples)),
        ),
        (
            "link: samples, raw rows by link_id column",
            None,
            raw_samples(HISTORY_BY_LINK_ID_SQL.format(table=samples)),
        ),
        ("link: events (store.link_events_between)", None, events),
        ("link: jobs (list_jobs + job_activity)", None, jobs),
        ("link history: the three reads above, in turn", "link", history),
    ]
    out += [
        ("worst links: store.worst_links", "worst", worst_store),
        ("worst links: WORST_SQL", "worst", worst(samples, "")),
        ("worst links: by port, links summed in Python", "worst", worst_by_port),
        ("worst links: WORST_SQL with FINAL", "worst", worst(samples, " FINAL")),
    ]
    for layout, table in alt.items():
        out += [
            (
                f"{layout} layout: link samples, raw rows",
                None,
                raw_samples(HISTORY_SQL.format(table=table)),
            ),
            (f"{layout} layout: worst links WORST_SQL", "worst", worst(table, "")),
        ]
    return out


def run_threads(
    name: str, clients: int, seconds: float, warmup: float, request: Callable[[random.Random], int]
) -> Latency:
    """`clients` threads issue `request` back to back for `warmup` + `seconds`; only requests
    started after the warm-up count."""
    result = Latency(name, clients, seconds)
    lock = threading.Lock()
    start = time.perf_counter()
    warm_until, deadline = start + warmup, start + warmup + seconds
    empty = 0

    def client(i: int) -> None:
        nonlocal empty
        rng = random.Random(1000 + i)
        mine: list[float] = []
        failed = nothing = 0
        while (t0 := time.perf_counter()) < deadline:
            try:
                n = request(rng)
            except Exception as exc:
                failed += 1
                if failed == 1:
                    err.print(f"[red]{name}: {exc}[/]")
                with lock:
                    result.statuses[type(exc).__name__] += 1
                continue
            if t0 >= warm_until:
                mine.append(time.perf_counter() - t0)
                nothing += n == 0
        with lock:
            result.samples.extend(mine)
            result.errors += failed
            empty += nothing

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if result.samples and empty == len(result.samples):
        err.print(f"[yellow]{name}: every request returned no rows[/]")
    result.load_avg = os.getloadavg()[0]
    return result


def alt_layout(store: Store, layout: str) -> str:
    """Copy the samples into the other layout (server-side) and say what it cost; returns the
    copy's table name."""
    name, statements = ALT_LAYOUTS[layout]
    table = qualified(data.BENCH_DATABASE, name)
    source = qualified(DATABASE, "link_samples")
    store._execute(f"CREATE DATABASE IF NOT EXISTS {data.BENCH_DATABASE}")
    store._execute(f"DROP TABLE IF EXISTS {table} SYNC")
    for sql in statements:
        store._execute(sql.format(table=table, source=source))
    began = time.perf_counter()
    store._execute(
        f"INSERT INTO {table} SETTINGS min_insert_block_size_rows = 10000000, "
        f"min_insert_block_size_bytes = 0 SELECT * FROM {source}"
    )
    took = time.perf_counter() - began
    p = parts_of(store, data.BENCH_DATABASE, name)
    projected = store.select(
        "SELECT sum(bytes_on_disk) AS b FROM system.projection_parts "
        "WHERE database = {db:String} AND table = {t:String} AND active",
        {"db": data.BENCH_DATABASE, "t": name},
    )["b"][0].as_py()
    extra = f", of which projection {float(projected) / 2**20:,.1f} MiB" if projected else ""
    print(
        f"  {layout} layout: copied {p['rows']:,.0f} rows into {table} in {took:.1f} s "
        f"({p['rows'] / took:,.0f} rows/s; {p['disk'] / 2**20:,.1f} MiB on disk{extra}; "
        f"{p['parts']:.0f} parts)"
    )
    return table


def race_check(store: Store, jobs: list[str], clients: int, seconds: float) -> str:
    """`clients` threads ask the store for random verdicts and check each answer is the
    verdict of the job asked for (chDB once mixed up concurrent queries' parameters)."""
    tally: Counter[str] = Counter()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(i: int) -> None:
        rng = random.Random(3000 + i)
        mine: Counter[str] = Counter()
        while time.perf_counter() < deadline:
            job = rng.choice(jobs)
            try:
                found = store.get_verdict(job)
            except Exception as exc:
                text = str(exc)
                mine["UNKNOWN_QUERY_PARAMETER" if "UNKNOWN_QUERY_PARAMETER" in text else text] += 1
                continue
            mine["ok" if found is not None and found.job_id == job else "wrong job"] += 1
        with lock:
            tally.update(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(tally.values())
    parts = ", ".join(f"{k}: {v:,}" for k, v in tally.most_common())
    return f"{total:,} get_verdict calls from {clients} threads: {parts}"


def sql_phase(
    args: argparse.Namespace, settings: Settings, manifest: Manifest, fabric: Fabric
) -> tuple[list[str], list[Latency], str | None]:
    """Time the queries in-process; returns the job ids (for the HTTP phase), the figures and
    the result of the race check."""
    if settings.store.clickhouse_url:
        raise SystemExit("store.clickhouse_url is set: this benchmark measures embedded chDB")
    store = ChdbStore(args.data, DATABASE, settings.store.batch_rows)
    results: list[Latency] = []
    race = None
    try:
        jobs = store.select(
            f"SELECT job_id FROM {qualified(DATABASE, 'verdicts')} ORDER BY job_id"
        )["job_id"].to_pylist()
        if args.skip_sql:
            return jobs, results, race
        p = parts_of(store, DATABASE, "link_samples")
        print(
            f"\n== SQL only: the store in this process, {manifest.rows:,} samples in "
            f"{p['parts']:.0f} parts; random links and {args.window_s} s windows"
        )
        applied = [m.version for m in store.migration_status() if m.applied_at]
        print(f"  schema: migrations {applied} applied")
        race = race_check(store, jobs, max(args.sql_clients), args.race_seconds)
        print(f"  concurrent answers: {race}")
        alt = {layout: alt_layout(store, layout) for layout in args.alt_layout}
        inputs = Inputs(
            fabric,
            sorted(fabric.links),
            jobs,
            manifest.span,
            args.window_s,
            args.metric,
            args.limit,
        )
        for name, goal, request in sql_requests(store, inputs, alt):
            if args.sql_filter and not any(f in name for f in args.sql_filter):
                continue
            for clients in args.sql_clients:
                label = f"{name} [{clients}]"
                err.print(f"  measuring {label} ...")
                r = run_threads(label, clients, args.sql_seconds, args.warmup, request)
                r.goal_s = None if goal is None else GOALS[goal]
                results.append(r)
                print(r.line(), flush=True)
    finally:
        store.close()
    return jobs, results, race


# -- phase 4: HTTP ------------------------------------------------------------------------------


def railtrace_exe() -> str:
    return str(Path(sys.executable).with_name("railtrace"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def make_token(env: dict[str, str]) -> str | None:
    """A read token from `railtrace token create`, its last line of stdout; None (requests then
    go without Authorization) when the command is missing or fails, saying why."""
    cmd = [railtrace_exe(), "token", "create", "--name", "bench", "--scope", "read"]
    try:
        done = subprocess.run(
            cmd, check=False, env=env, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"  token: `{' '.join(cmd[1:])}` could not run ({exc}); sending no Authorization")
        return None
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        if "No such command" in done.stderr:
            print("  token: this railtrace has no `token` command yet; sending no Authorization")
        else:
            print(
                f"  token: `{' '.join(cmd[1:])}` exited {done.returncode} ({' / '.join(why)}); "
                "sending no Authorization"
            )
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        print("  token: `railtrace token create` printed nothing; sending no Authorization")
        return None
    print(f"  token: created a read token named 'bench' ({lines[-1][:10]}...)")
    return lines[-1]


@contextlib.contextmanager
def serving(
    args: argparse.Namespace, env: dict[str, str], log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`railtrace serve` on the data directory until the block ends (SIGTERM: it closes the
    store and removes its owner file on that)."""
    port = args.port or free_port()
    cmd = [railtrace_exe(), "serve", "--data", str(args.data), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        began = time.perf_counter()
        while True:
            if proc.poll() is not None:
                raise SystemExit(
                    f"railtrace serve exited {proc.returncode}:\n{log.read_text()[-2000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + READY_PATH, timeout=2).status_code == 200:
                    break
            if time.perf_counter() - began > 120:
                raise SystemExit(f"railtrace serve not ready after 120 s; see {log}")
            time.sleep(0.2)
        print(f"  serve: {url}, ready in {time.perf_counter() - began:.1f} s (pid {proc.pid})")
        yield url, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/PID/stat), all threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: (path, query, the job id the answer must be about or None).
Request = tuple[str, dict[str, str], str | None]


def http_requests(inputs: Inputs) -> dict[str, Callable[[random.Random], Request]]:
    """One request per endpoint, drawn at random."""

    def verdict(rng: random.Random) -> Request:
        job = rng.choice(inputs.jobs)
        return VERDICT_PATH.format(job_id=quote(job, safe="")), {}, job

    def link(rng: random.Random) -> Request:
        lid = rng.choice(inputs.links)
        since, until = random_window(rng, inputs.span, inputs.window_s)
        query = {"since": iso(since), "until": iso(until)}
        return LINK_PATH.format(link_id=quote(lid, safe=":/")), query, None

    def worst(rng: random.Random) -> Request:
        since, until = random_window(rng, inputs.span, inputs.window_s)
        query = {
            "since": iso(since),
            "until": iso(until),
            "metric": inputs.metric,
            "limit": str(inputs.limit),
        }
        return WORST_PATH, query, None

    return {"verdict": verdict, "link": link, "worst": worst}


async def run_clients(
    name: str,
    url: str,
    headers: dict[str, str],
    clients: int,
    seconds: float,
    warmup: float,
    request: Callable[[random.Random], Request],
) -> Latency:
    """`clients` HTTP clients, each its own keep-alive connection, back to back. A verdict
    about another job than the one asked for counts as failed ("200 wrong job")."""
    result = Latency(name, clients, seconds)
    start = time.perf_counter()
    warm_until, deadline = start + warmup, start + warmup + seconds

    async def client(i: int) -> None:
        rng = random.Random(2000 + i)
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(
            base_url=url, headers=headers, limits=limits, timeout=60
        ) as http:
            while (t0 := time.perf_counter()) < deadline:
                path, params, job = request(rng)
                try:
                    resp = await http.get(path, params=params)
                except httpx.HTTPError as exc:
                    if time.perf_counter() >= warm_until:
                        result.errors += 1
                        result.statuses[type(exc).__name__] += 1
                    continue
                took = time.perf_counter() - t0
                if t0 < warm_until:
                    continue
                status = str(resp.status_code)
                if resp.status_code == 200 and job is not None and answer_job(resp) != job:
                    status = "200 wrong job"
                result.statuses[status] += 1
                if status == "200":
                    result.samples.append(took)
                    result.bytes += len(resp.content)
                else:
                    result.errors += 1

    await asyncio.gather(*(client(i) for i in range(clients)))
    result.load_avg = os.getloadavg()[0]
    return result


def answer_job(resp: httpx.Response) -> str | None:
    try:
        doc = resp.json()
    except ValueError:
        return None
    return doc.get("job_id") if isinstance(doc, dict) else None


def probe(url: str, headers: dict[str, str], request: Request) -> tuple[int, str, float]:
    """One request before the clients start: its status, the start of its body, its time (for
    the link endpoint, with the API's per-job path cache still cold)."""
    path, params, _ = request
    began = time.perf_counter()
    resp = httpx.get(url + path, params=params, headers=headers, timeout=120)
    return resp.status_code, resp.text[:200], time.perf_counter() - began


def prime_links(url: str, headers: dict[str, str], inputs: Inputs, requests: int) -> float:
    """Ask for one link's history with windows ending at `requests` points spread evenly over
    the span, one after the other: every job that any window can meet gets its paths built
    once, as a long-running API has them, instead of by ten clients at once."""
    began = time.perf_counter()
    span = inputs.span
    with httpx.Client(base_url=url, headers=headers, timeout=300) as http:
        for i in range(requests):
            until = span.start_ns + (span.end_ns - span.start_ns) * (i + 1) // requests
            since = max(span.start_ns, until - inputs.window_s * data.NS)
            lid = inputs.links[i % len(inputs.links)]
            http.get(
                LINK_PATH.format(link_id=quote(lid, safe=":/")),
                params={"since": iso(since), "until": iso(until)},
            )
    return time.perf_counter() - began


def http_phase(
    args: argparse.Namespace, manifest: Manifest, fabric: Fabric, jobs: list[str], cables: str
) -> list[Latency]:
    results: list[Latency] = []
    inputs = Inputs(
        fabric, sorted(fabric.links), jobs, manifest.span, args.window_s, args.metric, args.limit
    )
    makers = http_requests(inputs)
    print(
        f"\n== HTTP: railtrace serve, {args.clients} concurrent clients, "
        f"{args.seconds:.0f} s per endpoint after {args.warmup:.0f} s warm-up"
    )
    with tempfile.TemporaryDirectory(prefix="rt-bench-http-") as tmp:
        topo = Path(tmp) / "topology"
        topo.mkdir()
        (topo / "cables.csv").write_text(cables)
        env = {
            **os.environ,
            "RAILTRACE_API__TOPOLOGY_DIR": str(topo),
            "RAILTRACE_API__TOKENS_FILE": str(Path(tmp) / "tokens.json"),
            "RAILTRACE_STORE__DATA_DIR": str(args.data),
        }
        token = make_token(env)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        log = args.data.parent / f"{args.data.name}-serve.log"
        with serving(args, env, log) as (url, proc):
            for endpoint in args.endpoints:
                rng = random.Random(7)
                status, body, took = probe(url, headers, makers[endpoint](rng))
                print(f"  {endpoint}: first request {status} in {took * 1000:,.0f} ms")
                if status != 200:
                    hint = {
                        401: "unauthorized: is the token accepted?",
                        403: "forbidden: does a read token reach this route?",
                        404: "not found: is the route there yet? (or the drawn item missing)",
                    }.get(status, "")
                    print(f"    {hint} {body!r}")
                if status == 404 and '"Not Found"' in body:
                    print(f"    no such route: {endpoint} skipped")
                    continue
                if endpoint == "link" and args.link_prime:
                    took = prime_links(url, headers, inputs, args.link_prime)
                    print(
                        f"  link: {args.link_prime} sequential requests across the span first, "
                        f"to fill the API's per-job path cache: {took:.1f} s"
                    )
                err.print(f"  measuring {endpoint} over HTTP ...")
                cpu0 = cpu_seconds(proc.pid)
                r = asyncio.run(
                    run_clients(
                        f"{endpoint}: GET {PATHS[endpoint]}",
                        url,
                        headers,
                        args.clients,
                        args.seconds,
                        args.warmup,
                        makers[endpoint],
                    )
                )
                r.server_cpu_s = cpu_seconds(proc.pid) - cpu0
                r.goal_s = GOALS[endpoint]
                results.append(r)
                print(r.line(), flush=True)
        print(f"  serve log: {log}")
    return results


# -- main ---------------------------------------------------------------------------------------


def csv_ints(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=Path(tempfile.gettempdir()) / "railtrace-query-bench",
        help="chDB data directory to load into or reuse",
    )
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--rows", type=int, default=100_000_000, help="link-sample rows to load")
    size.add_argument("--days", type=float, help="load this many days instead of --rows")
    ap.add_argument("--skip-load", action="store_true", help="reuse a loaded --data directory")
    ap.add_argument("--fresh", action="store_true", help="delete a previous benchmark --data")
    ap.add_argument("--nodes", type=int, default=64, help="reference fabric size (default 64)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--step-s", type=int, default=10, help="sampling interval, s")
    ap.add_argument("--bad-links", type=int, default=10, help="links with error bursts")
    ap.add_argument("--chunk-rows", type=int, default=10_000_000, help="rows per INSERT")
    ap.add_argument("--verdicts", type=int, default=5000)
    ap.add_argument("--events-per-link-hour", type=float, default=1.0)
    ap.add_argument(
        "--jobs-with-facts",
        type=int,
        default=300,
        help="jobs given NCCL log facts (what a link's blast radius is rebuilt from)",
    )
    ap.add_argument(
        "--merge-wait-s", type=float, default=300, help="wait this long for merges after loading"
    )
    ap.add_argument("--skip-writer", action="store_true")
    ap.add_argument("--writer-rows", type=int, default=2_000_000, help="rows per writer run")
    ap.add_argument(
        "--writer-calls",
        type=csv_ints,
        default=[50_000, 2_000],
        help="rows per write_link_samples call, one run each (default 50000,2000)",
    )
    ap.add_argument("--skip-sql", action="store_true")
    ap.add_argument(
        "--sql-clients", type=csv_ints, default=[10], help="threads for SQL only, e.g. 1,10"
    )
    ap.add_argument("--sql-seconds", type=float, default=15, help="measured seconds per query")
    ap.add_argument(
        "--race-seconds", type=float, default=5, help="seconds of the concurrent-answers check"
    )
    ap.add_argument(
        "--sql-filter",
        type=lambda text: [x for x in text.split(",") if x],
        default=[],
        help="only the SQL measurements whose name holds one of these (comma-separated)",
    )
    ap.add_argument(
        "--alt-layout",
        type=lambda text: [x.strip() for x in text.split(",") if x.strip()],
        default=[],
        help=f"also copy the samples into other layouts ({','.join(ALT_LAYOUTS)}) and time "
        "the queries there",
    )
    ap.add_argument(
        "--endpoints",
        default="verdict,link,worst",
        help="HTTP endpoints to measure: verdict,link,worst (empty: none)",
    )
    ap.add_argument("--clients", type=int, default=10, help="concurrent HTTP clients")
    ap.add_argument("--seconds", type=float, default=30, help="measured seconds per endpoint")
    ap.add_argument("--warmup", type=float, default=3, help="unmeasured seconds first")
    ap.add_argument(
        "--link-prime",
        type=int,
        default=12,
        help="sequential link requests spread over the span before measuring, so the API's "
        "per-job path cache is full as in a running API (0: measure from cold)",
    )
    ap.add_argument("--port", type=int, default=0, help="API port (default: a free one)")
    ap.add_argument("--window-s", type=int, default=3600, help="history / top-k window")
    ap.add_argument("--metric", default="in_errors", help="top-k metric")
    ap.add_argument("--limit", type=int, default=10, help="top-k size")
    ap.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON")
    return ap


def prepare_dir(args: argparse.Namespace) -> None:
    """Refuse to load over earlier data (dedup would drop identical blocks silently) unless
    --fresh, and only ever delete a directory this benchmark made."""
    path: Path = args.data
    if path.exists() and any(path.iterdir()):
        if not args.fresh:
            raise SystemExit(
                f"{path} is not empty: pass --skip-load to reuse it or --fresh to reload"
            )
        if not (path / MANIFEST).exists() and not (path / "metadata").is_dir():
            raise SystemExit(f"{path} does not look like a benchmark directory; not deleting it")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    # Measured: 2.7 B/row on disk; ask for 10 B/row of room for merges and the alt copy.
    need = (args.rows if args.days is None else args.days * 86400 / args.step_s * 12288) * 10
    print(f"  free disk at {path}: {free / 2**30:,.1f} GiB (want {need / 2**30:,.1f} GiB)")
    if free < need:
        raise SystemExit("not enough free disk for this load; use fewer --rows")


def main() -> None:
    args = parser().parse_args()
    args.data = args.data.resolve()
    args.endpoints = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    unknown = set(args.endpoints) - set(GOALS)
    if unknown:
        raise SystemExit(f"unknown endpoints {sorted(unknown)}; choose from {sorted(GOALS)}")
    settings = load_settings()
    print(
        f"railtrace query-latency benchmark: {os.cpu_count()} cores, data {args.data}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    if args.skip_load:
        manifest = read_manifest(args.data)
        fabric, cables = data.reference(manifest.nodes)
        print(
            f"  reusing {manifest.rows:,} rows loaded {manifest.loaded_at} "
            f"({manifest.load_rows_per_s:,.0f} rows/s then), "
            f"{iso(manifest.span.start_ns)} .. {iso(manifest.span.end_ns)}"
        )
    else:
        prepare_dir(args)
        fabric, cables = data.reference(args.nodes)
        manifest = load(args, settings, fabric)
    host_links = sum(
        1
        for ref in fabric.links.values()
        if Role.HOST in (fabric.role(ref.a.device), fabric.role(ref.b.device))
    )
    print(
        f"  links: {len(fabric.links):,} ({host_links:,} host links with one switch end, "
        f"{len(fabric.links) - host_links:,} switch-switch links with two)"
    )
    writer_figures = [] if args.skip_writer else writer(args, settings, fabric)
    jobs, sql, race = sql_phase(args, settings, manifest, fabric)
    http = http_phase(args, manifest, fabric, jobs, cables) if args.endpoints else []
    if args.json:
        doc = {
            "manifest": asdict(manifest),
            "writer": writer_figures,
            "race_check": race,
            "sql_only": [r.to_json() for r in sql],
            "http": [r.to_json() for r in http],
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
