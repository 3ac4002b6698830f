"""The store on a ClickHouse server, over HTTP with clickhouse-connect.

Same SQL and same arrow blocks as the embedded store; only the transport differs. Inserts go
as `FORMAT Arrow` with the same dedup token, so a retried batch is dropped here as well.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import clickhouse_connect
import pyarrow as pa

from railtrace.store.columns import Table
from railtrace.store.schema import DEFAULT_DATABASE
from railtrace.store.sql_store import Store

log = logging.getLogger(__name__)


class ClickHouseServerStore(Store):
    """Store on the ClickHouse server at `url` (e.g. `http://clickhouse:8123`)."""

    def __init__(
        self,
        url: str,
        user: str = "default",
        password: str = "",
        database: str = DEFAULT_DATABASE,
        batch_rows: int = 50_000,
    ) -> None:
        super().__init__(database, batch_rows)
        # No server session: the API queries from several threads at once, which one
        # ClickHouse session refuses. No default database either: it may not exist before
        # migrate(), and every statement names its database anyway.
        self._client = clickhouse_connect.get_client(
            dsn=url, username=user, password=password, autogenerate_session_id=False
        )
        log.info(
            "clickhouse store opened",
            extra={"host": urlsplit(url).hostname, "database": database},  # no credentials
        )

    def _execute(self, sql: str) -> None:
        self._client.command(sql)

    def _insert(self, table: Table, data: pa.Table, token: str) -> None:
        self._client.insert_arrow(
            table.name,
            data,
            database=self.database,
            settings={
                "insert_deduplication_token": token,
                "deduplicate_blocks_in_dependent_materialized_views": 1,
            },
        )

    def select(self, sql: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        result: pa.Table = self._client.query_arrow(
            sql, parameters=dict(params or {}), use_strings=True
        )
        return result

    def close(self) -> None:
        self._client.close()
