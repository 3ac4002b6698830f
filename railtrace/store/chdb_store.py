"""The embedded store: ClickHouse in this process (chDB), data kept under one directory.

chDB runs one embedded server per process, bound to one data directory, and locks that
directory against other processes. This class is the only place that holds a chDB session:
it opens it, turns "another process holds the directory" into `StoreLockedError`, records this
process in the owner file, and closes both together.

Reads go through a chDB connection per thread on the same directory (the same embedded
server): the API answers from a thread pool, and one session would run its queries one at a
time, or, unguarded, mix up their parameters. Writes and DDL stay on the session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import chdb.session
import pyarrow as pa

from railtrace.private import private_dir
from railtrace.store.base import StoreError, StoreLockedError
from railtrace.store.columns import Table
from railtrace.store.owner import read_owner, remove_owner, status_locked, write_owner
from railtrace.store.schema import DEFAULT_DATABASE
from railtrace.store.sql_store import Store

log = logging.getLogger(__name__)


class _Session(Protocol):
    """The part of `chdb.session.Session` used here, typed (chDB ships no annotations)."""

    def query(self, sql: str, fmt: str = "CSV", *, params: dict[str, Any] | None = None) -> Any: ...

    def close(self) -> None: ...


_open_session: Callable[[str], _Session] = chdb.session.Session
_connect: Callable[[str], _Session] = chdb.connect


class ChdbStore(Store):
    """Store backed by chDB under `data_dir`; one data directory per process at a time."""

    def __init__(
        self, data_dir: Path, database: str = DEFAULT_DATABASE, batch_rows: int = 50_000
    ) -> None:
        super().__init__(database, batch_rows)
        # One statement at a time on the session: chDB mixes up the parameters of statements
        # run from several threads at once ("Substitution `kinds` is not set"), which the
        # API's thread pool did as soon as a page asked for three things in parallel.
        self._one_at_a_time = threading.Lock()
        self._readers = threading.local()
        self._reader_conns: list[_Session] = []
        self.data_dir = data_dir.resolve()
        private_dir(self.data_dir)
        try:
            self._session: _Session | None = _open_session(str(self.data_dir))
        except RuntimeError as exc:
            if status_locked(self.data_dir):
                raise StoreLockedError(self.data_dir, read_owner(self.data_dir)) from exc
            raise StoreError(f"cannot open chDB data directory {self.data_dir}: {exc}") from exc
        try:
            write_owner(self.data_dir)
        except OSError:
            self._session.close()
            raise
        log.info("chdb store opened", extra={"data_dir": str(self.data_dir), "database": database})

    def _live(self) -> _Session:
        if self._session is None:
            raise StoreError(f"the store at {self.data_dir} is closed")
        return self._session

    def _execute(self, sql: str) -> None:
        with self._one_at_a_time:
            self._live().query(sql)

    def _insert(self, table: Table, data: pa.Table, token: str) -> None:
        # `Python(data)` makes chDB read the arrow table bound to the local name `data`.
        columns = ", ".join(c.name for c in table.written)
        with self._one_at_a_time:
            self._live().query(
                f"INSERT INTO {self._name(table.name)} ({columns}) "
                f"SETTINGS insert_deduplication_token = '{token}', "
                "deduplicate_blocks_in_dependent_materialized_views = 1 "
                "SELECT * FROM Python(data)"
            )

    def select(self, sql: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        bound = {k: _param(v) for k, v in (params or {}).items()}
        result: pa.Table = self._reader().query(sql, "ArrowTable", params=bound)
        return result

    def _reader(self) -> _Session:
        """This thread's connection, opened on its first read."""
        self._live()  # a closed store says so, whatever a thread kept
        conn: _Session | None = getattr(self._readers, "conn", None)
        if conn is None:
            with self._one_at_a_time:
                self._live()
                conn = _connect(str(self.data_dir))
                self._reader_conns.append(conn)
            self._readers.conn = conn
        return conn

    def close(self) -> None:
        """Release the directory (and the owner file) for other processes; idempotent."""
        with self._one_at_a_time:
            if self._session is None:
                return
            for conn in self._reader_conns:
                conn.close()
            self._reader_conns.clear()
            self._session.close()
            self._session = None
        remove_owner(self.data_dir)
        log.info("chdb store closed", extra={"data_dir": str(self.data_dir)})


def _param(value: Any) -> Any:
    """A query parameter as chDB takes it: a list of strings in ClickHouse's text form for
    `Array(String)` (`['a','b']`), which chDB does not produce itself; the rest as given."""
    if isinstance(value, list | tuple):
        return "[" + ",".join(_quoted(str(v)) for v in value) + "]"
    return value


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
