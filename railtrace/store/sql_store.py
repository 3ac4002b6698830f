"""The store: the one declaration of what callers may ask of it, and the writes behind it.

A backend only supplies three primitives (run a statement, select into arrow, insert an arrow
block with a dedup token), so chDB and a ClickHouse server run the very same SQL. The reads
live in `queries`, the insert columns are derived from `schema`.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Self

import pyarrow as pa

from railtrace.store import migrations
from railtrace.store import rows as to_arrow
from railtrace.store.columns import Table, check_identifier, qualified
from railtrace.store.queries import Queries
from railtrace.store.schema import TABLES_BY_NAME
from railtrace.streams.records import (
    CablingEvent,
    DeadLetter,
    JobFact,
    LinkEvent,
    LinkSample,
    NodeEvent,
    Verdict,
)

log = logging.getLogger(__name__)


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


class Store(Queries):
    """What the CLI, the replay, the sink and the API hold: a store over ClickHouse SQL, which
    subclasses connect to chDB or to a server (`open_store` picks one).

    Writes take records (plus the resolved link id for telemetry) and return once the rows are
    stored; a retried identical batch is dropped, so writers may retry freely.
    """

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
    def close(self) -> None:
        """Release the connection (and, for chDB, the data directory)."""

    def migrate(self) -> list[migrations.Migration]:
        """Apply the schema migrations the database lacks (see `migrations`); returns those
        applied. Safe to run on every start."""
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
        """Every schema migration, with when this database got it (None: pending)."""
        try:
            done = self.applied_versions()
        except Exception:  # no database or ledger yet: nothing applied
            done = {}
        return migrations.status(done)

    def write_link_samples(self, rows: Sequence[tuple[LinkSample, str]]) -> None:
        self._write("link_samples", [s for s, _ in rows], link_id=[i for _, i in rows])

    def write_link_events(self, rows: Sequence[tuple[LinkEvent, str]]) -> None:
        self._write("link_events", [e for e, _ in rows], link_id=[i for _, i in rows])

    def write_cabling_events(self, rows: Sequence[CablingEvent]) -> None:
        self._write("cabling_events", rows)

    def write_node_events(self, rows: Sequence[NodeEvent]) -> None:
        self._write("node_events", rows)

    def write_job_facts(self, rows: Sequence[JobFact]) -> None:
        self._write("job_facts", rows)

    def write_verdicts(
        self, rows: Sequence[Verdict], versions: Sequence[int] | None = None
    ) -> None:
        """Store verdicts as the current ones of their jobs: the row with the highest version
        wins (by default, later writes). A streaming sink passes versions taken from the
        verdict topic, so a redelivered old verdict never replaces a newer one."""
        if versions is None:
            versions = self._clock.take(len(rows))
        if len(versions) != len(rows):
            raise ValueError("one version per verdict")
        self._write("verdicts", rows, updated_at=versions)

    def write_dead_letters(self, rows: Sequence[DeadLetter]) -> None:
        self._write("dead_letters", rows)

    def _write(self, name: str, records: Sequence[Any], **given: Sequence[Any]) -> None:
        """Insert in blocks of `batch_rows`; the blocks are cut the same way on a retry, so
        their dedup tokens match and the retried blocks are dropped."""
        table = TABLES_BY_NAME[name]
        for start in range(0, len(records), self._batch_rows):
            began = time.perf_counter()
            end = start + self._batch_rows
            block = {column: values[start:end] for column, values in given.items()}
            data = to_arrow.build(table, records[start:end], **block)
            self._insert(table, data, to_arrow.dedup_token(data))
            log.debug(
                "rows written",
                extra={
                    "table": name,
                    "rows": data.num_rows,
                    "seconds": round(time.perf_counter() - began, 4),
                },
            )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
