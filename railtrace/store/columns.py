"""The words the schema is declared in: a column, a table, a view, and where a column's values
come from.

A written column names its source once, beside its type: the record field it copies (its own
name unless told otherwise), a function of the record, or a value the writer passes with the
batch. The insert of every table is derived from that (`rows.build`), so a new record field
reaches the store by adding one `Column` to `schema.TABLES`.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pyarrow as pa

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Given:
    """A column the writer fills with values it passes beside the records (the link id it
    resolved, a verdict's version): facts about the write, not fields of the record."""


GIVEN = Given()

#: Where a written column's values come from: None, the record field of the column's name; a
#: str, the (dotted) attribute path on the record; a callable, computed from the record.
Source = str | Callable[[Any], Any] | Given | None


@dataclass(frozen=True, slots=True)
class Column:
    """One column. `arrow` is the type railtrace sends; None marks a column the server fills
    from its `default` expression, which is therefore left out of every insert."""

    name: str
    ch_type: str
    arrow: pa.DataType | None
    default: str | None = None
    codec: str | None = None
    comment: str = ""
    source: Source = None

    def ddl(self) -> str:
        parts = [self.name, self.ch_type]
        if self.default is not None:
            parts.append(f"DEFAULT {self.default}")
        if self.codec is not None:
            parts.append(f"CODEC({self.codec})")
        if self.comment:
            parts.append(f"COMMENT {quote(self.comment)}")
        return " ".join(parts)

    @property
    def field_path(self) -> str | None:
        """The record attribute this column copies, None when it is computed or given."""
        if self.source is None:
            return self.name
        return self.source if isinstance(self.source, str) else None

    def values(self, records: Sequence[Any], given: Mapping[str, Sequence[Any]]) -> list[Any]:
        """This column's value for each record, as one list (one pass, no per-row dispatch:
        building these lists is the whole cost of a write)."""
        source = self.source
        if source is None or isinstance(source, str):
            return list(map(attrgetter(source or self.name), records))
        if isinstance(source, Given):
            return list(given[self.name])
        return list(map(source, records))


@dataclass(frozen=True, slots=True)
class Table:
    """One table: columns, engine and the clauses that govern layout and retention. `record`
    is the record type (or union of types) one written row is made from."""

    name: str
    comment: str
    columns: tuple[Column, ...]
    engine: str
    order_by: tuple[str, ...]
    ttl: str
    partition_by: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    record: Any = None

    def __post_init__(self) -> None:
        """A column copying a field its record lacks would fail only on the first write; the
        declaration is checked when it is made instead."""
        if self.written and self.record is None:
            raise ValueError(f"{self.name}: written columns need the record they come from")
        for column in self.written:
            path = column.field_path
            if path is None:
                continue
            head = path.split(".")[0]
            for cls in record_classes(self.record):
                if head not in {f.name for f in dataclasses.fields(cls)}:
                    raise ValueError(
                        f"{self.name}.{column.name}: {cls.__name__} has no field {head!r}"
                    )

    @property
    def written(self) -> tuple[Column, ...]:
        """The columns an insert carries, in declaration order."""
        return tuple(c for c in self.columns if c.arrow is not None)

    @property
    def given(self) -> frozenset[str]:
        """The columns whose values the writer passes with the batch."""
        return frozenset(c.name for c in self.written if isinstance(c.source, Given))

    @property
    def replacing(self) -> bool:
        """Rows have identity: read with FINAL to see one row per key before merges."""
        return self.engine.startswith("ReplacingMergeTree")

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow) for c in self.written])

    def create_sql(self, database: str) -> str:
        cols = ",\n".join(f"    {c.ddl()}" for c in self.columns)
        clauses = [f"ENGINE = {self.engine}"]
        if self.partition_by is not None:
            clauses.append(f"PARTITION BY {self.partition_by}")
        clauses.append(f"ORDER BY ({', '.join(self.order_by)})")
        clauses.append(f"TTL {self.ttl}")
        if self.settings:
            clauses.append("SETTINGS " + ", ".join(f"{k} = {v}" for k, v in self.settings))
        clauses.append(f"COMMENT {quote(self.comment)}")
        return (
            f"CREATE TABLE IF NOT EXISTS {qualified(database, self.name)}\n(\n{cols}\n)\n"
            + "\n".join(clauses)
        )


@dataclass(frozen=True, slots=True)
class View:
    """A materialized view: what it keeps up to date, from which table, with which SELECT."""

    name: str
    comment: str
    target: str
    select: str  # `{database}` stands for the database

    def create_sql(self, database: str) -> str:
        return (
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {qualified(database, self.name)}\n"
            f"TO {qualified(database, self.target)}\nAS {self.select.format(database=database)}"
        )


def record_classes(record: Any) -> tuple[type, ...]:
    """The dataclasses a table's rows come from: the members of a union, or the one class."""
    if isinstance(record, types.UnionType) or typing.get_origin(record) is typing.Union:
        return typing.get_args(record)
    return (record,)


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def check_identifier(name: str) -> str:
    """Database names are spliced into SQL text, so only plain identifiers are accepted."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a plain ClickHouse identifier: {name!r}")
    return name


def qualified(database: str, table: str) -> str:
    return f"{check_identifier(database)}.{check_identifier(table)}"
