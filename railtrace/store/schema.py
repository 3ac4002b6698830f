"""The ClickHouse schema, declared once as data.

Everything else is derived from `TABLES`: the DDL that `migrate()` runs, the committed
`deploy/clickhouse/schema.sql` for operators (`python -m railtrace.store.schema`), the arrow
schema and the column list of every insert. Declaring it once is what keeps the embedded chDB
store, a ClickHouse server and the file an operator applies from drifting apart.

Retention counts from `inserted_at`, never from the event time: railtrace replays captures
that are months old, and a TTL on the event time would delete such a replay as it lands.
"""

from __future__ import annotations

import sys

import pyarrow as pa

from railtrace.store.columns import GIVEN, Column, Table, View, check_identifier, quote
from railtrace.store.rows import as_json, endpoint_text, fact_comm, fact_kind, fact_rank
from railtrace.store.verdict_codec import encode_verdict
from railtrace.streams.records import (
    FAULT_COUNTERS,
    CablingEvent,
    DeadLetter,
    JobFact,
    LinkEvent,
    LinkSample,
    NodeEvent,
    Verdict,
)

#: Blocks remembered per table for dropping a retried identical insert (see `dedup_token`).
DEDUP_WINDOW = 1000

DEFAULT_DATABASE = "railtrace"

_TS = "DateTime64(9, 'UTC')"
_TS_ARROW = pa.timestamp("ns", tz="UTC")


def _given_link_id() -> Column:
    """The cable a telemetry row's interface belongs to: the writer looks it up in the
    fabric, since the record itself names only the device and interface."""
    return Column(
        "link_id", "String", pa.string(), comment="cable id; empty when unknown", source=GIVEN
    )


def _inserted_at() -> Column:
    return Column(
        "inserted_at",
        "DateTime",
        None,
        default="now()",
        comment="arrival time; every TTL counts from here, not from the event time",
    )


def _settings(*, drop_parts: bool) -> tuple[tuple[str, str], ...]:
    base = (("non_replicated_deduplication_window", str(DEDUP_WINDOW)),)
    return (*base, ("ttl_only_drop_parts", "1")) if drop_parts else base


# Every row has an identity, so every table is a ReplacingMergeTree: a row delivered twice by the
# at-least-once streaming path collapses into one. Merges never cross partitions, so the big
# tables are partitioned by *event* time (a duplicate has the same event time, so the same
# partition), and expire row by row from inserted_at; small ones are not partitioned.
TABLES: tuple[Table, ...] = (
    Table(
        name="link_samples",
        comment="per-second counter rates and gauge readings per interface; kept 30 days",
        columns=(
            Column("ts", _TS, _TS_ARROW, codec="DoubleDelta, ZSTD(1)", source="ts_ns"),
            Column("device", "LowCardinality(String)", pa.string()),
            Column("interface", "LowCardinality(String)", pa.string()),
            _given_link_id(),
            Column("metric", "LowCardinality(String)", pa.string()),
            Column("qualifier", "LowCardinality(String)", pa.string()),
            Column("rate", "Float64", pa.float64(), codec="Gorilla, ZSTD(1)"),
            Column("interval_s", "Float64", pa.float64()),
            _inserted_at(),
        ),
        engine="ReplacingMergeTree",
        partition_by="toYYYYMMDD(ts)",
        order_by=("device", "interface", "metric", "qualifier", "ts"),
        ttl="inserted_at + INTERVAL 30 DAY",
        settings=_settings(drop_parts=False),
        record=LinkSample,
    ),
    Table(
        name="link_events",
        comment=(
            "link anomalies and state changes; one row per (device, interface, kind, ts, series)"
        ),
        columns=(
            Column("ts", _TS, _TS_ARROW, source="ts_ns"),
            Column("device", "LowCardinality(String)", pa.string()),
            Column("interface", "LowCardinality(String)", pa.string()),
            _given_link_id(),
            Column("kind", "LowCardinality(String)", pa.string()),
            Column("value", "Float64", pa.float64()),
            Column("detail", "String", pa.string()),
            _inserted_at(),
            Column(
                "series",
                "LowCardinality(String)",
                pa.string(),
                comment="the counter, direction or lane it is about; empty when the port has one",
            ),
            Column(
                "span_s",
                "Float64",
                pa.float64(),
                comment="how long before ts it may have begun: the sampling interval of a rate",
            ),
        ),
        engine="ReplacingMergeTree",
        # `series` last: migration 4 added it to an existing key, which only appends.
        order_by=("device", "interface", "kind", "ts", "series"),
        ttl="inserted_at + INTERVAL 12 MONTH",
        settings=_settings(drop_parts=False),
        record=LinkEvent,
    ),
    Table(
        name="cabling_events",
        comment="ports whose LLDP neighbour differs from cables.csv, and when that stopped",
        columns=(
            Column("ts", _TS, _TS_ARROW, source="ts_ns"),
            Column("device", "LowCardinality(String)", pa.string()),
            Column("interface", "LowCardinality(String)", pa.string()),
            Column("kind", "LowCardinality(String)", pa.string()),
            Column(
                "planned",
                "String",
                pa.string(),
                comment="device:interface; empty if none",
                source=lambda e: endpoint_text(e.planned),
            ),
            Column(
                "seen",
                "String",
                pa.string(),
                comment="device:interface; empty if none",
                source=lambda e: endpoint_text(e.seen),
            ),
            Column("detail", "String", pa.string()),
            _inserted_at(),
        ),
        engine="ReplacingMergeTree",
        order_by=("device", "interface", "ts", "kind"),
        ttl="inserted_at + INTERVAL 12 MONTH",
        settings=_settings(drop_parts=False),
        record=CablingEvent,
    ),
    Table(
        name="node_events",
        comment="GPU Xids and quarantine decisions per node, from `railtrace collect xid`",
        columns=(
            Column("ts", _TS, _TS_ARROW, source="ts_ns"),
            Column("node", "LowCardinality(String)", pa.string()),
            Column("kind", "LowCardinality(String)", pa.string(), comment="xid or release"),
            Column("xid", "Nullable(Int32)", pa.int32()),
            Column("pci", "String", pa.string()),
            Column("detail", "String", pa.string()),
            Column("quarantined", "Bool", pa.bool_(), comment="the node's state after it"),
            Column(
                "action",
                "LowCardinality(String)",
                pa.string(),
                comment="quarantine or release when the event changed the state, else empty",
            ),
            Column("reason", "String", pa.string()),
            Column("sdc", "Bool", pa.bool_(), comment="suspected silent data corruption"),
            Column("line", "String", pa.string(), comment="the kernel line as read"),
            Column("source", "String", pa.string()),
            _inserted_at(),
        ),
        engine="ReplacingMergeTree",
        order_by=("node", "ts", "kind", "pci"),
        ttl="inserted_at + INTERVAL 12 MONTH",
        settings=_settings(drop_parts=False),
        record=NodeEvent,
    ),
    Table(
        name="job_facts",
        comment="facts parsed from NCCL, PyTorch and kernel logs, with the line they came from",
        columns=(
            Column("ts", _TS, _TS_ARROW, source="ts_ns"),
            Column("job_id", "String", pa.string()),
            Column("kind", "LowCardinality(String)", pa.string(), source=fact_kind),
            Column(
                "host",
                "LowCardinality(String)",
                pa.string(),
                comment="empty when unknown",
                source=lambda f: f.host or "",
            ),
            Column("rank", "Nullable(Int32)", pa.int32(), source=fact_rank),
            Column(
                "comm_id",
                "String",
                pa.string(),
                comment="empty when not per communicator",
                source=fact_comm,
            ),
            Column(
                "detail", "String", pa.string(), comment="the whole record as JSON", source=as_json
            ),
            Column("origin_source", "String", pa.string(), source="origin.source"),
            Column("origin_line", "UInt64", pa.uint64(), source="origin.line_no"),
            _inserted_at(),
        ),
        engine="ReplacingMergeTree",
        partition_by="toYYYYMM(ts)",
        order_by=("job_id", "origin_source", "origin_line", "kind"),
        ttl="inserted_at + INTERVAL 12 MONTH",
        settings=_settings(drop_parts=False),
        record=JobFact,
    ),
    Table(
        name="verdicts",
        comment="the current verdict of each job; read with FINAL for one row per job",
        columns=(
            Column("job_id", "String", pa.string()),
            Column("state", "LowCardinality(String)", pa.string()),
            Column("stalled_at", f"Nullable({_TS})", _TS_ARROW, source="stalled_at_ns"),
            Column("decided_at", f"Nullable({_TS})", _TS_ARROW, source="decided_at_ns"),
            Column("cause_kind", "LowCardinality(String)", pa.string()),
            Column(
                "link_id",
                "String",
                pa.string(),
                comment="empty unless the cause is a link",
                source=lambda v: v.cause_link.link_id if v.cause_link else "",
            ),
            Column(
                "node",
                "String",
                pa.string(),
                comment="empty unless the cause is a node",
                source=lambda v: v.cause_node or "",
            ),
            Column("confidence", "Float64", pa.float64()),
            Column(
                "payload",
                "String",
                pa.string(),
                comment="the full verdict as JSON",
                source=encode_verdict,
            ),
            Column(
                "updated_at", _TS, _TS_ARROW, comment="version: the newest row wins", source=GIVEN
            ),
            _inserted_at(),
        ),
        engine="ReplacingMergeTree(updated_at)",
        order_by=("job_id",),
        ttl="inserted_at + INTERVAL 12 MONTH",
        settings=_settings(drop_parts=False),
        record=Verdict,
    ),
    Table(
        name="dead_letters",
        comment="input that could not be used, with the reason; kept 12 months",
        columns=(
            Column("ts", _TS, None, default="now64(9, 'UTC')", comment="time of receipt"),
            Column("source", "LowCardinality(String)", pa.string()),
            Column("reason", "String", pa.string()),
            Column("line_no", "UInt64", pa.uint64()),
            Column("raw", "String", pa.binary()),
            Column(
                "extra",
                "Map(String, String)",
                pa.map_(pa.string(), pa.string()),
                source=lambda d: list(d.extra.items()),
            ),
            _inserted_at(),
        ),
        engine="MergeTree",
        partition_by="toYYYYMM(inserted_at)",
        order_by=("source", "ts"),
        ttl="inserted_at + INTERVAL 12 MONTH",
        settings=_settings(drop_parts=True),
        record=DeadLetter,
    ),
    Table(
        name="link_fault_minutes",
        comment="nonzero fault-counter counts per link and minute, rolled up from link_samples",
        columns=(
            Column("minute", "DateTime('UTC')", None),
            Column("metric", "LowCardinality(String)", None),
            Column("link_id", "String", None),
            Column(
                "total",
                "SimpleAggregateFunction(sum, Float64)",
                None,
                comment="rate x interval summed: the count",
            ),
            Column("peak_rate", "SimpleAggregateFunction(max, Float64)", None),
            Column(
                "samples",
                "SimpleAggregateFunction(sum, UInt64)",
                None,
                comment="samples with a nonzero count",
            ),
            Column("inserted_at", "SimpleAggregateFunction(max, DateTime)", None),
        ),
        engine="AggregatingMergeTree",
        partition_by="toYYYYMM(minute)",
        order_by=("metric", "minute", "link_id"),
        ttl="inserted_at + INTERVAL 12 MONTH",
        # Its own window too: a retried link_samples batch is dropped here only if the
        # view's block is (deduplicate_blocks_in_dependent_materialized_views).
        settings=_settings(drop_parts=False),
    ),
)

TABLES_BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}


# Only the nonzero counts of the fault counters, by minute and link: errors are rare, so this
# is a few rows an hour where link_samples holds millions, and the fabric's worst links over
# hours are read from it in milliseconds.
_FAULT_METRICS = ", ".join(quote(m.value) for m in sorted(FAULT_COUNTERS))
ROLLUP_SELECT = f"""\
SELECT toStartOfMinute(toDateTime(ts)) AS minute, metric, link_id,
       sum(rate * interval_s) AS total, max(rate) AS peak_rate, toUInt64(count()) AS samples,
       max(inserted_at) AS inserted_at
FROM {{database}}.link_samples
WHERE rate > 0 AND link_id != '' AND metric IN ({_FAULT_METRICS})
GROUP BY minute, metric, link_id"""

VIEWS: tuple[View, ...] = (
    View(
        name="link_fault_minutes_mv",
        comment="keeps link_fault_minutes up to date from every link_samples insert",
        target="link_fault_minutes",
        select=ROLLUP_SELECT,
    ),
)

_HEADER = """\
-- railtrace ClickHouse schema, rendered from railtrace/store/schema.py; do not edit by hand.
-- Regenerate with: python -m railtrace.store.schema > deploy/clickhouse/schema.sql
--
-- Retention (TTL) counts from inserted_at (DateTime DEFAULT now()), NOT from the event time
-- `ts`: railtrace replays captures recorded months ago, and a TTL on `ts` would delete such
-- a replay the moment it is inserted. link_samples are kept 30 days after arrival; link events,
-- cabling events, node events, job facts, verdicts and dead letters 12 months.
--
-- Idempotent writes: verdicts (one per job), link_events (one per device, interface, kind, ts
-- and series), cabling_events and node_events (one per device or node, kind and ts) are
-- ReplacingMergeTree, read with FINAL; every table keeps
-- the hashes of its last non_replicated_deduplication_window insert blocks so that a retried
-- identical batch is dropped.
--
-- link_fault_minutes is a rollup kept by the materialized view link_fault_minutes_mv: the
-- nonzero counts of the fault counters per link and minute, for ranking the worst links.
"""


def statements(database: str = DEFAULT_DATABASE) -> list[str]:
    """The DDL statements, in order, each runnable on its own (chDB and a server alike)."""
    return [
        f"CREATE DATABASE IF NOT EXISTS {check_identifier(database)}",
        *(t.create_sql(database) for t in TABLES),
        *(v.create_sql(database) for v in VIEWS),
    ]


def render_ddl(database: str = DEFAULT_DATABASE) -> str:
    """The DDL as one commented SQL file for operators."""
    body = []
    for sql, table in zip(statements(database), (None, *TABLES, *VIEWS), strict=True):
        note = f"-- {table.name}: {table.comment}\n" if table is not None else ""
        body.append(f"{note}{sql};\n")
    return _HEADER + "\n" + "\n".join(body)


if __name__ == "__main__":
    sys.stdout.write(render_ddl())
