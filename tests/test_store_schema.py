"""The schema is declared once; the DDL, the committed schema.sql and the inserts follow it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import store_samples as s

from railtrace.store import rows
from railtrace.store.columns import GIVEN, Column, Table
from railtrace.store.schema import TABLES, TABLES_BY_NAME, render_ddl, statements
from railtrace.streams.records import LinkSample

REPO = Path(__file__).resolve().parents[1]
SCHEMA_SQL = REPO / "deploy" / "clickhouse" / "schema.sql"


def test_committed_schema_sql_matches_the_python_declaration() -> None:
    assert SCHEMA_SQL.read_text() == render_ddl(), (
        "deploy/clickhouse/schema.sql drifted; regenerate it with "
        "`python -m railtrace.store.schema > deploy/clickhouse/schema.sql`"
    )


def test_schema_module_prints_the_ddl() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "railtrace.store.schema"],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout
    assert out == render_ddl()


@pytest.mark.parametrize(
    ("table", "ttl"),
    [
        ("link_samples", "inserted_at + INTERVAL 30 DAY"),
        ("link_events", "inserted_at + INTERVAL 12 MONTH"),
        ("job_facts", "inserted_at + INTERVAL 12 MONTH"),
        ("verdicts", "inserted_at + INTERVAL 12 MONTH"),
        ("dead_letters", "inserted_at + INTERVAL 12 MONTH"),
    ],
)
def test_retention_counts_from_arrival_not_event_time(table: str, ttl: str) -> None:
    spec = TABLES_BY_NAME[table]
    assert spec.ttl == ttl
    inserted_at = next(c for c in spec.columns if c.name == "inserted_at")
    assert (inserted_at.ch_type, inserted_at.default) == ("DateTime", "now()")


@pytest.mark.parametrize("table", [t.name for t in TABLES])
def test_every_table_remembers_blocks_to_drop_retries(table: str) -> None:
    settings = dict(TABLES_BY_NAME[table].settings)
    assert int(settings["non_replicated_deduplication_window"]) > 0


@pytest.mark.parametrize(
    ("table", "engine", "key"),
    [
        ("verdicts", "ReplacingMergeTree(updated_at)", ("job_id",)),
        ("link_events", "ReplacingMergeTree", ("device", "interface", "kind", "ts", "series")),
    ],
)
def test_rows_with_identity_are_replaced_by_key(
    table: str, engine: str, key: tuple[str, ...]
) -> None:
    spec = TABLES_BY_NAME[table]
    assert (spec.engine, spec.order_by, spec.partition_by) == (engine, key, None)


def _build(table: str, records: list[Any], **given: list[Any]) -> pa.Table:
    return rows.build(TABLES_BY_NAME[table], records, **given)


def _samples(*pairs: tuple[LinkSample, str]) -> pa.Table:
    return _build("link_samples", [p for p, _ in pairs], link_id=[i for _, i in pairs])


@pytest.mark.parametrize(
    ("table", "build"),
    [
        ("link_samples", lambda: _samples(s.link_sample())),
        (
            "link_events",
            lambda: _build("link_events", [s.link_event()[0]], link_id=[s.link_event()[1]]),
        ),
        ("job_facts", lambda: _build("job_facts", s.job_facts())),
        ("verdicts", lambda: _build("verdicts", [s.verdict()], updated_at=[1])),
        ("dead_letters", lambda: _build("dead_letters", [s.dead_letter()])),
    ],
)
def test_writers_build_exactly_the_insert_columns(
    table: str, build: Callable[[], pa.Table]
) -> None:
    spec = TABLES_BY_NAME[table]
    data = build()
    assert data.schema == spec.arrow_schema()
    server_filled = {c.name for c in spec.columns if c.default is not None}
    assert set(data.schema.names) == {c.name for c in spec.columns} - server_filled


def test_every_fact_kind_has_a_stable_name() -> None:
    kinds = _build("job_facts", s.job_facts()).column("kind").to_pylist()
    assert kinds == [
        "net-devices",
        "rank-info",
        "channel-edge",
        "init-complete",
        "net-error",
        "collective-timeout",
        "xid",
        "ras-report",
        "torch-watchdog",
    ]


def test_every_statement_names_its_database() -> None:
    for sql in statements("rt_ops")[1:]:
        assert sql.startswith(
            ("CREATE TABLE IF NOT EXISTS rt_ops.", "CREATE MATERIALIZED VIEW IF NOT EXISTS rt_ops.")
        )
        assert "railtrace." not in sql


@pytest.mark.parametrize("database", ["", "1abc", "rail-trace", "x; DROP TABLE y", "a.b"])
def test_database_names_must_be_plain_identifiers(database: str) -> None:
    with pytest.raises(ValueError, match="identifier"):
        statements(database)


def test_same_records_give_the_same_dedup_token_and_others_do_not() -> None:
    one = rows.dedup_token(_samples(s.link_sample(0), s.link_sample(1)))
    again = rows.dedup_token(_samples(s.link_sample(0), s.link_sample(1)))
    other = rows.dedup_token(_samples(s.link_sample(0), s.link_sample(2)))
    assert one == again != other


@dataclass(frozen=True)
class _Reading:
    ts_ns: int
    device: str
    value: float


def _readings(*columns: Column) -> Table:
    return Table(
        name="readings",
        comment="",
        columns=columns,
        engine="MergeTree",
        order_by=("device",),
        ttl="",
        record=_Reading,
    )


def test_a_column_is_filled_from_the_record_field_it_names_or_computes_or_is_given() -> None:
    table = _readings(
        Column("device", "String", pa.string()),
        Column("ts", "Int64", pa.int64(), source="ts_ns"),
        Column("twice", "Float64", pa.float64(), source=lambda r: 2 * r.value),
        Column("batch", "String", pa.string(), source=GIVEN),
    )
    data = rows.build(table, [_Reading(5, "leaf01", 1.5)], batch=["b1"])
    assert data.to_pylist() == [{"device": "leaf01", "ts": 5, "twice": 3.0, "batch": "b1"}]


def test_a_column_naming_a_field_its_record_lacks_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="_Reading has no field 'rate'"):
        _readings(Column("rate", "Float64", pa.float64()))


def test_every_fact_type_is_checked_against_the_columns_it_fills() -> None:
    with pytest.raises(ValueError, match="has no field 'rank'"):
        Table(
            name="facts",
            comment="",
            columns=(Column("rank", "Int32", pa.int32()),),
            engine="MergeTree",
            order_by=("rank",),
            ttl="",
            record=TABLES_BY_NAME["job_facts"].record,
        )


def test_a_write_without_the_columns_its_writer_must_give_is_refused() -> None:
    with pytest.raises(ValueError, match="given"):
        _build("link_samples", [s.link_sample()[0]])
