"""The migrations cover the declared schema: each table comes in once, versions in order."""

from __future__ import annotations

from railtrace.store.migrations import MIGRATIONS
from railtrace.store.schema import TABLES, VIEWS, statements


def test_every_declared_table_and_view_is_created_by_exactly_one_migration() -> None:
    created = [
        sql for m in MIGRATIONS for sql in m.statements("railtrace") if sql.startswith("CREATE")
    ]
    assert sorted(created) == sorted(statements("railtrace")[1:])
    assert len(created) == len(TABLES) + len(VIEWS)


def test_versions_rise_by_one_from_1() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
