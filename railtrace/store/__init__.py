"""Where verdicts, link telemetry, cabling and node events, job facts and dead letters are
kept: ClickHouse, embedded (chDB, one directory per process) or on a server, behind the one
`Store` class.

The schema is declared once in `railtrace.store.schema`; callers hand records and get records
or `JobSummary` rows back, never SQL rows.
"""

from typing import TYPE_CHECKING, Any

from railtrace.store.base import (
    JobActivity,
    JobSummary,
    LinkTotal,
    NodeSummary,
    SampleSeries,
    StoreError,
    StoreLockedError,
)
from railtrace.store.factory import open_store
from railtrace.store.owner import Owner, read_owner, remove_owner, write_owner

if TYPE_CHECKING:
    from railtrace.store.sql_store import Store


def __getattr__(name: str) -> Any:
    """`Store` is loaded on first use: importing the package must not load the schema, or
    `python -m railtrace.store.schema` would find that module already imported."""
    if name == "Store":
        from railtrace.store.sql_store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "JobActivity",
    "JobSummary",
    "LinkTotal",
    "NodeSummary",
    "Owner",
    "SampleSeries",
    "Store",
    "StoreError",
    "StoreLockedError",
    "open_store",
    "read_owner",
    "remove_owner",
    "write_owner",
]
