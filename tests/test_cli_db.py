"""`railtrace db migrate` and `railtrace db status` on an embedded store."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import invoke

from railtrace.store import migrations
from railtrace.store.chdb_store import ChdbStore


@pytest.mark.chdb  # the CLI opens the store
def test_migrate_applies_every_migration_once_then_nothing(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    first = invoke("db", "migrate", "--data", data)
    assert first.exit_code == 0, first.output
    assert [line.split()[1] for line in first.stdout.splitlines()] == [
        str(m.version) for m in migrations.MIGRATIONS
    ]
    again = invoke("db", "migrate", "--data", data)
    assert "up to date" in again.stdout
    status = invoke("db", "status", "--data", data)
    assert status.exit_code == 0
    assert status.stdout.count("applied") == len(migrations.MIGRATIONS)


def test_status_names_a_pending_migration_and_exits_3(tmp_path: Path) -> None:
    with ChdbStore(tmp_path / "data") as store:
        store._execute(f"CREATE DATABASE IF NOT EXISTS {store.database}")
        store._execute(migrations.ledger_sql(store.database))
        for sql in migrations.MIGRATIONS[0].statements(store.database):
            store._execute(sql)
        store._execute(
            f"INSERT INTO {store.database}.{migrations.LEDGER} (version, name) VALUES (1, 'v1')"
        )
    status = invoke("db", "status", "--data", str(tmp_path / "data"))
    assert status.exit_code == 3
    pending = [line for line in status.stdout.splitlines() if "pending" in line]
    assert [line.split()[0] for line in pending] == [
        str(m.version) for m in migrations.MIGRATIONS[1:]
    ]


def test_status_of_a_missing_data_dir_says_to_migrate(tmp_path: Path) -> None:
    result = invoke("db", "status", "--data", str(tmp_path / "nowhere"))
    assert result.exit_code == 1
    assert "railtrace db migrate" in result.output
