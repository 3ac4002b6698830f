"""The store logic both backends share: batching, dedup tokens, verdict versions, the queries.

A backend only supplies three primitives (run a statement, select into arrow, insert an arrow
block with a dedup token), so chDB and a ClickHouse server run the very same SQL.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self, TypeVar, cast

import orjson
import pyarrow as pa

from railtrace.store import migrations
from railtrace.store import rows as to_arrow
from railtrace.store.base import (
    JobActivity,
    JobSummary,
    LinkTotal,
    NodeSummary,
    SampleSeries,
    StoreError,
)
from railtrace.store.schema import (
    TABLES,
    TABLES_BY_NAME,
    Table,
    check_identifier,
    qualified,
)
from railtrace.store.verdict_codec import decode_verdict
from railtrace.streams import codec
from railtrace.streams.records import (
    CablingEvent,
    CauseKind,
    DeadLetter,
    JobFact,
    JobState,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    NodeEvent,
    Verdict,
)
from railtrace.topology.ends import CablingKind, Endpoint

log = logging.getLogger(__name__)

R = TypeVar("R")

# Verdicts are read through FINAL in a subquery, and filtered outside it, so that a filter on
# `state` sees only each job's newest row even before a merge has collapsed the old ones.
_JOBS_SQL = """\
SELECT job_id, state, cause_kind, link_id, node, confidence,
       toUnixTimestamp64Nano(stalled_at) AS stalled_at_ns,
       toUnixTimestamp64Nano(decided_at) AS decided_at_ns,
       toUnixTimestamp64Nano(updated_at) AS updated_at_ns,
       JSONExtract(payload, 'tied', 'Array(String)') AS tied
FROM (
    SELECT job_id, state, cause_kind, link_id, node, confidence, stalled_at, decided_at,
           updated_at, payload
    FROM {verdicts} FINAL
)
{where}
ORDER BY updated_at DESC, job_id
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

_VERDICT_SQL = "SELECT payload FROM {verdicts} FINAL WHERE job_id = {{job_id:String}}"

# A port's state is its latest event; ties in `ts` cannot occur for one port (see
# streams.telemetry.cabling.CablingWatch), and a duplicate row only repeats the same latest event.
_CABLING_SQL = """\
SELECT device, interface,
       argMax(kind, ts) AS last_kind, argMax(planned, ts) AS planned_end,
       argMax(seen, ts) AS seen_end, argMax(detail, ts) AS last_detail,
       toUnixTimestamp64Nano(max(ts)) AS ts_ns
FROM {cabling}
{where}
GROUP BY device, interface
HAVING last_kind != 'resolved'
ORDER BY device, interface
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

# One row per node: the state its newest event left, and the newest decision behind it.
_NODES_SQL = """\
SELECT node,
       argMax(quarantined, ts) AS now_quarantined,
       argMaxIf(sdc, ts, action = 'quarantine') AS last_sdc,
       argMaxIf(reason, ts, action != '') AS last_reason,
       countIf(action != '') AS decisions,
       toUnixTimestamp64Nano(maxIf(ts, action != '')) AS decided_at_ns,
       countIf(kind = 'xid') AS xids,
       toUnixTimestamp64Nano(max(ts)) AS last_event_ns
FROM (SELECT * FROM {events} FINAL)
{where}
GROUP BY node
{having}
ORDER BY node
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

_NODE_EVENTS_SQL = """\
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, node, kind, xid, pci, detail, quarantined, action,
       reason, sdc, line, source
FROM {events} FINAL
WHERE node = {{node:String}}
ORDER BY ts DESC, kind, pci
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

_JOB_FACTS_SQL = """\
SELECT kind, detail
FROM {facts} FINAL
WHERE job_id = {{job_id:String}} AND kind IN {{kinds:Array(String)}}
ORDER BY ts, origin_source, origin_line
LIMIT {{limit:UInt32}}"""

_LINK_EVENTS_SQL = """\
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, device, interface, link_id, kind, value, detail,
       series, span_s
FROM {events} FINAL
WHERE link_id IN {{links:Array(String)}}
  AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
  AND ts <= fromUnixTimestamp64Nano({{until:Int64}})
ORDER BY ts, device, interface, kind, series
LIMIT {{limit:UInt32}}"""

# Bucketed by integer division of the nanosecond time, which runs the same on every
# ClickHouse version; (device, interface) lead the sort key, so only the ports' granules are
# read. `ends` pairs them, since the two IN lists alone would also admit cross pairs.
# One row per series with its buckets as arrays: handing thousands of bucket rows to Python
# one by one cost twice what the query did.
_LINK_SERIES_SQL = """\
SELECT device, interface, metric, qualifier,
       arrayMap(p -> p.1, points) AS ts_ns, arrayMap(p -> p.2, points) AS mean,
       arrayMap(p -> p.3, points) AS peak
FROM (
    SELECT device, interface, metric, qualifier,
           arraySort(groupArray((bucket_ns, mean, peak))) AS points
    FROM (
        SELECT device, interface, metric, qualifier,
               intDiv(toUnixTimestamp64Nano(ts), {{step:Int64}}) * {{step:Int64}} AS bucket_ns,
               avg(rate) AS mean, max(rate) AS peak
        FROM {samples}
        WHERE device IN {{devices:Array(String)}} AND interface IN {{interfaces:Array(String)}}
          AND concat(device, ':', interface) IN {{ends:Array(String)}}
          AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
          AND ts < fromUnixTimestamp64Nano({{until:Int64}})
          {metric_filter}
        GROUP BY device, interface, metric, qualifier, bucket_ns
        ORDER BY device, interface, metric, qualifier, bucket_ns
        LIMIT {{limit:UInt32}}
    )
    GROUP BY device, interface, metric, qualifier
)
ORDER BY device, interface, metric, qualifier"""

# From the sparse per-minute rollup, so whole minutes: those starting in [since rounded
# down to its minute, until).
_WORST_LINKS_SQL = """\
SELECT link_id, sum(total) AS total, max(peak_rate) AS peak_rate,
       toUInt64(sum(samples)) AS samples
FROM {rollup}
WHERE metric = {{metric:String}}
  AND minute >= toStartOfMinute(toDateTime(fromUnixTimestamp64Nano({{since:Int64}})))
  AND minute < toDateTime(fromUnixTimestamp64Nano({{until:Int64}}))
GROUP BY link_id
HAVING total > 0
ORDER BY total DESC, link_id
LIMIT {{limit:UInt32}}"""

_JOB_ACTIVITY_SQL = """\
SELECT job_id, toUnixTimestamp64Nano(min(ts)) AS first_ns,
       toUnixTimestamp64Nano(max(ts)) AS last_ns, toUInt64(count()) AS facts
FROM {facts}
GROUP BY job_id
ORDER BY last_ns DESC, job_id
LIMIT {{limit:UInt32}}"""

# Rows physically stored per table (before merges collapse repeats): cheap on any size, for
# monitoring; exact counts are `count()`.
_PARTS_SQL = """\
SELECT table, toUInt64(sum(rows)) AS n
FROM system.parts
WHERE database = {database:String} AND active
GROUP BY table"""

# Seconds from a stall to its verdict, for the verdicts updated in the last day.
_DELAYS_SQL = """\
SELECT quantilesExact(0.5, 0.95)(
         (toUnixTimestamp64Nano(decided_at) - toUnixTimestamp64Nano(stalled_at)) / 1e9
       ) AS q,
       count() AS n
FROM (SELECT stalled_at, decided_at, updated_at FROM {verdicts} FINAL)
WHERE stalled_at IS NOT NULL AND decided_at IS NOT NULL
  AND updated_at >= now64(9) - INTERVAL 1 DAY"""

_PING_SQL = "SELECT name FROM system.tables WHERE database = {database:String}"


class _VersionClock:
    """Strictly increasing nanosecond timestamps: the version of each verdict row, so that of
    two verdicts written in the same nanosecond (or batch) the later one still wins."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> list[int]:
        with self._lock:
            first = max(time.time_ns(), self._last + 1)
            self._last = first + n - 1
        return list(range(first, first + n))


class SqlStore(ABC):
    """A `Store` over ClickHouse SQL; subclasses connect it to chDB or to a server."""

    def __init__(self, database: str, batch_rows: int) -> None:
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
        self.database = check_identifier(database)
        self._batch_rows = batch_rows
        self._clock = _VersionClock()

    @abstractmethod
    def _execute(self, sql: str) -> None:
        """Run a statement that returns nothing."""

    @abstractmethod
    def _insert(self, table: Table, data: pa.Table, token: str) -> None:
        """Insert one block into `table` with `insert_deduplication_token = token`."""

    @abstractmethod
    def select(self, sql: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        """Run a read-only query (`{name:Type}` placeholders bound from `params`); the result
        has strings as `string` columns. Table names must be database-qualified."""

    @abstractmethod
    def close(self) -> None: ...

    def _name(self, table: str) -> str:
        return qualified(self.database, table)

    def migrate(self) -> list[migrations.Migration]:
        applied = migrations.apply(self)
        log.info(
            "schema migrated",
            extra={"database": self.database, "applied": [m.version for m in applied]},
        )
        return applied

    def applied_versions(self) -> dict[int, str]:
        """Migration version -> when it was applied (UTC), from the ledger."""
        ledger = qualified(self.database, migrations.LEDGER)
        rows = self.select(
            f"SELECT version, toString(applied_at) AS at FROM {ledger} FINAL ORDER BY version"
        ).to_pylist()
        return {int(r["version"]): str(r["at"]) for r in rows}

    def migration_status(self) -> list[migrations.Status]:
        try:
            done = self.applied_versions()
        except Exception:  # no database or ledger yet: nothing applied
            done = {}
        return migrations.status(done)

    def write_link_samples(self, rows: Sequence[tuple[LinkSample, str]]) -> None:
        self._write("link_samples", rows, to_arrow.link_samples)

    def write_link_events(self, rows: Sequence[tuple[LinkEvent, str]]) -> None:
        self._write("link_events", rows, to_arrow.link_events)

    def write_cabling_events(self, rows: Sequence[CablingEvent]) -> None:
        self._write("cabling_events", rows, to_arrow.cabling_events)

    def write_node_events(self, rows: Sequence[NodeEvent]) -> None:
        self._write("node_events", rows, to_arrow.node_events)

    def write_job_facts(self, rows: Sequence[JobFact]) -> None:
        self._write("job_facts", rows, to_arrow.job_facts)

    def write_verdicts(
        self, rows: Sequence[Verdict], versions: Sequence[int] | None = None
    ) -> None:
        if versions is None:
            self._write("verdicts", rows, lambda b: to_arrow.verdicts(b, self._clock.take(len(b))))
            return
        if len(versions) != len(rows):
            raise ValueError("one version per verdict")
        pairs = list(zip(rows, versions, strict=True))
        self._write(
            "verdicts", pairs, lambda b: to_arrow.verdicts([v for v, _ in b], [n for _, n in b])
        )

    def write_dead_letters(self, rows: Sequence[DeadLetter]) -> None:
        self._write("dead_letters", rows, to_arrow.dead_letters)

    def _write(
        self, name: str, rows: Sequence[R], build: Callable[[Sequence[R]], pa.Table]
    ) -> None:
        """Insert in blocks of `batch_rows`; the blocks are cut the same way on a retry, so
        their dedup tokens match and the retried blocks are dropped."""
        table = TABLES_BY_NAME[name]
        for start in range(0, len(rows), self._batch_rows):
            began = time.perf_counter()
            data = build(rows[start : start + self._batch_rows])
            self._insert(table, data, to_arrow.dedup_token(data))
            log.debug(
                "rows written",
                extra={
                    "table": name,
                    "rows": data.num_rows,
                    "seconds": round(time.perf_counter() - began, 4),
                },
            )

    def list_jobs(
        self, state: JobState | None = None, limit: int = 100, offset: int = 0
    ) -> list[JobSummary]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        where = ""
        if state is not None:
            where, params["state"] = "WHERE state = {state:String}", state.value
        sql = _JOBS_SQL.format(verdicts=self._name("verdicts"), where=where)
        return [
            JobSummary(
                job_id=r["job_id"],
                state=JobState(r["state"]),
                stalled_at_ns=r["stalled_at_ns"],
                decided_at_ns=r["decided_at_ns"],
                cause_kind=CauseKind(r["cause_kind"]),
                link_id=r["link_id"] or None,
                node=r["node"] or None,
                confidence=r["confidence"],
                updated_at_ns=r["updated_at_ns"],
                tied=tuple(r["tied"]),
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def get_verdict(self, job_id: str) -> Verdict | None:
        sql = _VERDICT_SQL.format(verdicts=self._name("verdicts"))
        payloads = self.select(sql, {"job_id": job_id}).column("payload").to_pylist()
        return decode_verdict(payloads[0]) if payloads else None

    def cabling_differences(
        self, device: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[CablingEvent]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        where = ""
        if device is not None:
            where, params["device"] = "WHERE device = {device:String}", device
        sql = _CABLING_SQL.format(cabling=self._name("cabling_events"), where=where)
        return [
            CablingEvent(
                r["ts_ns"],
                r["device"],
                r["interface"],
                CablingKind(r["last_kind"]),
                _endpoint(r["planned_end"]),
                _endpoint(r["seen_end"]),
                r["last_detail"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def list_nodes(
        self, quarantined: bool | None = None, limit: int = 100, offset: int = 0
    ) -> list[NodeSummary]:
        return self._nodes(None, quarantined, limit, offset)

    def node_summary(self, node: str) -> NodeSummary | None:
        """One node's state, None when it has no node events."""
        found = self._nodes(node, None, 1, 0)
        return found[0] if found else None

    def _nodes(
        self, node: str | None, quarantined: bool | None, limit: int, offset: int
    ) -> list[NodeSummary]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        where = having = ""
        if node is not None:
            where, params["node"] = "WHERE node = {node:String}", node
        if quarantined is not None:
            having, params["q"] = "HAVING now_quarantined = {q:Bool}", quarantined
        sql = _NODES_SQL.format(events=self._name("node_events"), where=where, having=having)
        return [
            NodeSummary(
                node=r["node"],
                quarantined=bool(r["now_quarantined"]),
                sdc_suspect=bool(r["now_quarantined"] and r["last_sdc"]),
                reason=r["last_reason"] if r["decisions"] else None,
                decided_at_ns=r["decided_at_ns"] if r["decisions"] else None,
                xids=r["xids"],
                last_event_ns=r["last_event_ns"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def node_events(self, node: str, limit: int = 100, offset: int = 0) -> list[NodeEvent]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        sql = _NODE_EVENTS_SQL.format(events=self._name("node_events"))
        rows = self.select(sql, {"node": node, "limit": limit, "offset": offset}).to_pylist()
        return [
            NodeEvent(
                r["ts_ns"],
                r["node"],
                r["kind"],
                r["xid"],
                r["pci"],
                r["detail"],
                bool(r["quarantined"]),
                r["action"],
                r["reason"],
                bool(r["sdc"]),
                r["line"],
                r["source"],
            )
            for r in rows
        ]

    def job_facts_of(
        self, job_id: str, kinds: Sequence[str] | None = None, limit: int = 100_000
    ) -> list[JobFact]:
        """The job's facts (of `kinds`, default all), in the order they happened. A row that
        no longer decodes (a record type changed since) is logged and left out rather than
        failing the read."""
        sql = _JOB_FACTS_SQL.format(facts=self._name("job_facts"))
        wanted = list(to_arrow.FACT_TYPES) if kinds is None else list(kinds)
        params = {"job_id": job_id, "kinds": wanted, "limit": limit}
        out: list[JobFact] = []
        for r in self.select(sql, params).to_pylist():
            cls = to_arrow.FACT_TYPES[r["kind"]]
            try:
                raw = {**orjson.loads(r["detail"]), "t": cls.__name__}
                out.append(cast(JobFact, codec.decode(raw, cls)))
            except (codec.CodecError, orjson.JSONDecodeError) as exc:
                log.error(
                    "stored job fact unreadable",
                    extra={"job": job_id, "kind": r["kind"], "reason": str(exc)},
                )
        return out

    def link_events_between(
        self, link_ids: Sequence[str], since_ns: int, until_ns: int, limit: int = 10_000
    ) -> list[tuple[LinkEvent, str]]:
        """Events of these links in [since_ns, until_ns], oldest first, with their link id."""
        if not link_ids:
            return []
        sql = _LINK_EVENTS_SQL.format(events=self._name("link_events"))
        params = {"links": list(link_ids), "since": since_ns, "until": until_ns, "limit": limit}
        return [
            (
                LinkEvent(
                    r["ts_ns"],
                    r["device"],
                    r["interface"],
                    LinkEventKind(r["kind"]),
                    r["value"],
                    r["detail"],
                    r["series"],
                    r["span_s"],
                ),
                r["link_id"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def link_series(
        self,
        ends: Sequence[Endpoint],
        since_ns: int,
        until_ns: int,
        step_ns: int,
        metrics: Sequence[str] | None = None,
        limit: int = 200_000,
    ) -> list[SampleSeries]:
        if not ends:
            return []
        if step_ns <= 0:
            raise ValueError(f"step must be positive, got {step_ns} ns")
        metric_filter = "" if metrics is None else "AND metric IN {metrics:Array(String)}"
        sql = _LINK_SERIES_SQL.format(
            samples=self._name("link_samples"), metric_filter=metric_filter
        )
        params: dict[str, Any] = {
            "devices": sorted({e.device for e in ends}),
            "interfaces": sorted({e.interface for e in ends}),
            "ends": sorted(f"{e.device}:{e.interface}" for e in ends),
            "since": since_ns,
            "until": until_ns,
            "step": step_ns,
            "limit": limit,
        }
        if metrics is not None:
            params["metrics"] = list(metrics)
        return [
            SampleSeries(
                r["device"],
                r["interface"],
                r["metric"],
                r["qualifier"],
                r["ts_ns"],
                r["mean"],
                r["peak"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def worst_links(
        self, metric: str, since_ns: int, until_ns: int, limit: int = 10
    ) -> list[LinkTotal]:
        sql = _WORST_LINKS_SQL.format(rollup=self._name("link_fault_minutes"))
        params = {"metric": metric, "since": since_ns, "until": until_ns, "limit": limit}
        return [
            LinkTotal(r["link_id"], r["total"], r["peak_rate"], r["samples"])
            for r in self.select(sql, params).to_pylist()
        ]

    def job_activity(self, limit: int = 200) -> list[JobActivity]:
        sql = _JOB_ACTIVITY_SQL.format(facts=self._name("job_facts"))
        rows = self.select(sql, {"limit": limit}).to_pylist()
        return [JobActivity(r["job_id"], r["first_ns"], r["last_ns"], r["facts"]) for r in rows]

    def stored_rows(self) -> dict[str, int]:
        rows = self.select(_PARTS_SQL, {"database": self.database}).to_pylist()
        found = {str(r["table"]): int(r["n"]) for r in rows}
        return {t.name: found.get(t.name, 0) for t in TABLES}

    def verdict_delays(self) -> tuple[float, float, int] | None:
        result = self.select(_DELAYS_SQL.format(verdicts=self._name("verdicts"))).to_pylist()
        if not result or not result[0]["n"]:
            return None
        p50, p95 = result[0]["q"]
        return float(p50), float(p95), int(result[0]["n"])

    def count(self, table: str) -> int:
        spec = TABLES_BY_NAME.get(table)
        if spec is None:
            raise ValueError(f"no table {table!r}; tables are {sorted(TABLES_BY_NAME)}")
        final = " FINAL" if spec.replacing else ""
        result = self.select(f"SELECT count() AS n FROM {self._name(table)}{final}")
        return int(result["n"][0].as_py())

    def ping(self) -> None:
        try:
            found = self.select(_PING_SQL, {"database": self.database}).column("name").to_pylist()
        except Exception as exc:
            raise StoreError(f"store does not answer: {exc}") from exc
        missing = sorted({t.name for t in TABLES} - set(found))
        if missing:
            raise StoreError(f"database {self.database} lacks tables {missing}; run migrate")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _endpoint(text: str) -> Endpoint | None:
    """`device:interface` as the cabling table stores it; device names hold no colon."""
    if not text:
        return None
    device, _, interface = text.partition(":")
    return Endpoint(device, interface)
