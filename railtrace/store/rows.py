"""Records become arrow tables shaped exactly as the schema's insert columns, each column
filled from the source the schema declares for it; plus the values computed for a column
rather than copied from a field (a fact's kind, rank and communicator, an end as text).

Inserting arrow is what makes the store fast (chDB reads an arrow table through `Python()` at
millions of rows per second; a server takes it as `FORMAT Arrow`), so building these tables is
the cost of a write: one list per column, enum members passed as the strings they are
(`.value` alone would cost a tenth of a second per million rows).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa

from railtrace.store.columns import Table
from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    InitComplete,
    JobFact,
    JobPlacement,
    NetDevices,
    NetError,
    NicEvent,
    Progress,
    RankInfo,
    RasReport,
    WatchdogState,
    XidEvent,
)
from railtrace.topology.ends import Endpoint

#: The `kind` column of job_facts: a stable name per record type, independent of class names.
FACT_KINDS: dict[type[JobFact], str] = {
    NetDevices: "net-devices",
    RankInfo: "rank-info",
    ChannelEdge: "channel-edge",
    InitComplete: "init-complete",
    NetError: "net-error",
    CollectiveTimeout: "collective-timeout",
    XidEvent: "xid",
    RasReport: "ras-report",
    Progress: "progress",
    NicEvent: "nic-event",
    JobPlacement: "placement",
    WatchdogState: "torch-watchdog",
}
FACT_TYPES: dict[str, type[JobFact]] = {kind: cls for cls, kind in FACT_KINDS.items()}
#: The kinds of fact that happened at a moment; the rest describe the job's structure.
EVENT_FACT_KINDS = (
    "net-error",
    "collective-timeout",
    "xid",
    "ras-report",
    "nic-event",
    "torch-watchdog",
)
#: The trainer's step reports: many, each unremarkable; read for a job's pace, not its events.
PROGRESS_FACT_KINDS = ("progress",)
#: The kinds that describe where a job runs and how its ranks talk: all its paths need.
STRUCTURE_FACT_KINDS = tuple(
    k for k in FACT_TYPES if k not in EVENT_FACT_KINDS and k not in PROGRESS_FACT_KINDS
)


def build(table: Table, records: Sequence[Any], **given: Sequence[Any]) -> pa.Table:
    """The insert block of `table` for `records`, each column filled as the schema declares
    (`Column.source`); `given` holds the values of the columns the writer supplies, one per
    record. A missing or extra given column is a bug here, caught on the first write rather
    than as a server error."""
    if set(given) != table.given:
        raise ValueError(f"{table.name}: given {sorted(given)} != declared {sorted(table.given)}")
    if any(len(v) != len(records) for v in given.values()):
        raise ValueError(f"{table.name}: given columns need one value per record")
    return pa.table(
        [_array(c.values(records, given), c.arrow) for c in table.written],
        schema=table.arrow_schema(),
    )


def _array(values: list[Any], type_: pa.DataType | None) -> pa.Array:
    # Nanosecond ints convert ~6x faster as int64 cast to timestamp than as timestamps.
    if type_ is not None and pa.types.is_timestamp(type_):
        return pa.array(values, pa.int64()).cast(type_)
    return pa.array(values, type=type_)


def fact_kind(fact: JobFact) -> str:
    return FACT_KINDS[type(fact)]


def fact_rank(fact: JobFact) -> int | None:
    """The rank a fact is about, where it has one."""
    match fact:
        case RankInfo() | InitComplete() | CollectiveTimeout() | WatchdogState():
            return fact.rank
        case ChannelEdge():
            return fact.src_rank
        case _:
            return None


def fact_comm(fact: JobFact) -> str:
    """The communicator a fact is about, "" when it is not per communicator."""
    match fact:
        case RankInfo() | InitComplete() | ChannelEdge():
            return fact.comm_id
        case _:
            return ""


def as_json(record: object) -> str:
    return orjson.dumps(record).decode()


def endpoint_text(end: Endpoint | None) -> str:
    """`device:interface`, "" for no end: how the cabling table keeps an end."""
    return "" if end is None else f"{end.device}:{end.interface}"


def dedup_token(data: pa.Table) -> str:
    """A digest of the block's content, passed as `insert_deduplication_token`.

    ClickHouse drops an insert whose token it has seen within the table's deduplication window,
    so a retried identical batch is stored once. An explicit token is needed because chDB's
    `INSERT ... SELECT FROM Python()` is not deduplicated on content by itself, and it makes
    a server behave the same. Hashing the arrow buffers costs ~30 ns a row.
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(data.schema).encode())
    digest.update(data.num_rows.to_bytes(8, "little"))
    for column in data.columns:
        for chunk in column.chunks:
            digest.update(f"{chunk.offset}:{len(chunk)}".encode())
            for buf in chunk.buffers():
                digest.update(b"\x00" if buf is None else buf)
    return digest.hexdigest()
