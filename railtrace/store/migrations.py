"""Versioned schema migrations: what `railtrace db migrate` (and every store's `migrate()`)
applies, in order, recording each in the database's `schema_migrations` ledger.

Tables are declared once, in `schema.TABLES`; a migration says when each came in (and, when a
table changes later, carries the ALTER that takes an older database there). Every statement is
idempotent (`IF NOT EXISTS`), so a database made before the ledger existed, which already has
the tables, is brought under it by recording the versions without changing anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from railtrace.store.columns import check_identifier, qualified
from railtrace.store.schema import ROLLUP_SELECT, TABLES_BY_NAME, VIEWS

LEDGER = "schema_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: Callable[[str], list[str]]  # the database name -> its SQL


def _create(*tables: str) -> Callable[[str], list[str]]:
    return lambda database: [TABLES_BY_NAME[t].create_sql(database) for t in tables]


def _fault_rollup(database: str) -> list[str]:
    """The rollup table, the view that feeds it from new samples, and the samples already
    stored (only into an empty rollup, so applying this again after a failure adds nothing
    twice)."""
    table = qualified(database, "link_fault_minutes")
    return [
        TABLES_BY_NAME["link_fault_minutes"].create_sql(database),
        *(v.create_sql(database) for v in VIEWS if v.target == "link_fault_minutes"),
        f"INSERT INTO {table} {ROLLUP_SELECT.format(database=database)} "
        f"HAVING (SELECT count() FROM {table}) = 0",
    ]


def _link_event_series(database: str) -> list[str]:
    """Two detectors firing on one port at one instant (in-errors and in-fcs-errors bursts;
    in- and out-octets drops) were one row under the old key: the key gains `series`. The
    column has no DEFAULT because ClickHouse refuses a defaulted new column in the key; its
    type's default ('') fills the rows already stored. Running it on a table that has the
    column and the key already changes nothing."""
    table = TABLES_BY_NAME["link_events"]
    column = next(c for c in table.columns if c.name == "series")
    return [
        f"ALTER TABLE {qualified(database, table.name)} "
        f"ADD COLUMN IF NOT EXISTS {column.ddl()}, "
        f"MODIFY ORDER BY ({', '.join(table.order_by)})"
    ]


def _link_event_span(database: str) -> list[str]:
    """A rate's anomaly may have begun anywhere in its sampling interval, which attribution
    reads from the stored event too. Rows stored before have 0 (the type's default): an
    instant, as they were read then."""
    table = TABLES_BY_NAME["link_events"]
    column = next(c for c in table.columns if c.name == "span_s")
    return [
        f"ALTER TABLE {qualified(database, table.name)} ADD COLUMN IF NOT EXISTS {column.ddl()}"
    ]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "link telemetry, job facts, verdicts, dead letters",
        _create("link_samples", "link_events", "job_facts", "verdicts", "dead_letters"),
    ),
    Migration(
        2, "LLDP cabling differences and GPU node events", _create("cabling_events", "node_events")
    ),
    Migration(3, "per-minute rollup of link fault counts, for the worst links", _fault_rollup),
    Migration(4, "link events keyed by series too: simultaneous detectors", _link_event_series),
    Migration(
        5, "link events say how long before their stamp they may have begun", _link_event_span
    ),
)


class _Runner(Protocol):
    database: str

    def _execute(self, sql: str) -> None: ...

    def applied_versions(self) -> dict[int, str]: ...


@dataclass(frozen=True, slots=True)
class Status:
    """A migration and whether (and when, UTC) this database has it."""

    version: int
    name: str
    applied_at: str | None


def ledger_sql(database: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {qualified(database, LEDGER)} "
        "(version UInt32, name String, applied_at DateTime DEFAULT now()) "
        "ENGINE = ReplacingMergeTree ORDER BY version "
        "COMMENT 'schema migrations applied to this database (railtrace db migrate)'"
    )


def apply(store: _Runner) -> list[Migration]:
    """Apply the migrations the database lacks, oldest first; returns those applied."""
    store._execute(f"CREATE DATABASE IF NOT EXISTS {check_identifier(store.database)}")
    store._execute(ledger_sql(store.database))
    done = store.applied_versions()
    applied = []
    for m in MIGRATIONS:
        if m.version in done:
            continue
        for sql in m.statements(store.database):
            store._execute(sql)
        name = m.name.replace("\\", "\\\\").replace("'", "\\'")
        store._execute(
            f"INSERT INTO {qualified(store.database, LEDGER)} (version, name) "
            f"VALUES ({m.version}, '{name}')"
        )
        applied.append(m)
    return applied


def status(done: dict[int, str]) -> list[Status]:
    """Every migration with its applied time, None when pending."""
    return [Status(m.version, m.name, done.get(m.version)) for m in MIGRATIONS]
