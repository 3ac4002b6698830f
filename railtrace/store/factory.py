"""Pick the store backend from the settings: a ClickHouse server when a URL is set, else chDB.

The backends are imported on demand so that a process using one never loads the other's
driver (chDB alone takes about a third of a second to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from railtrace.settings import StoreSettings

if TYPE_CHECKING:
    from railtrace.store.sql_store import Store


def open_store(settings: StoreSettings) -> Store:
    """Open (not migrate) the configured store; raises StoreLockedError when another process
    holds the chDB data directory."""
    if settings.clickhouse_url:
        from railtrace.store.server_store import ClickHouseServerStore

        return ClickHouseServerStore(
            settings.clickhouse_url,
            user=settings.clickhouse_user,
            password=settings.clickhouse_password.get_secret_value(),
            database=settings.database,
            batch_rows=settings.batch_rows,
        )
    from railtrace.store.chdb_store import ChdbStore

    return ChdbStore(settings.data_dir, database=settings.database, batch_rows=settings.batch_rows)
