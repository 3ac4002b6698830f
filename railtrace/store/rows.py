"""Records become arrow tables shaped exactly as the schema's insert columns.

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

from railtrace.store.schema import TABLES_BY_NAME, Table
from railtrace.store.verdict_codec import encode_verdict
from railtrace.streams.records import (
    CablingEvent,
    ChannelEdge,
    CollectiveTimeout,
    DeadLetter,
    InitComplete,
    JobFact,
    JobPlacement,
    LinkEvent,
    LinkSample,
    NetDevices,
    NetError,
    NicEvent,
    NodeEvent,
    Progress,
    RankInfo,
    RasReport,
    Verdict,
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


def _table(name: str, columns: dict[str, list[Any]]) -> pa.Table:
    """Arrow table in the schema's column order and types; a missing or extra column is a bug
    here, caught on the first write rather than as a server error."""
    table: Table = TABLES_BY_NAME[name]
    schema = table.arrow_schema()
    if set(columns) != set(schema.names):
        raise ValueError(f"{name}: columns {sorted(columns)} != schema {sorted(schema.names)}")
    return pa.table([_array(columns[f.name], f.type) for f in schema], schema=schema)


def _array(values: list[Any], type_: pa.DataType) -> pa.Array:
    # Nanosecond ints convert ~6x faster as int64 cast to timestamp than as timestamps.
    if pa.types.is_timestamp(type_):
        return pa.array(values, pa.int64()).cast(type_)
    return pa.array(values, type=type_)


def link_samples(rows: Sequence[tuple[LinkSample, str]]) -> pa.Table:
    return _table(
        "link_samples",
        {
            "ts": [s.ts_ns for s, _ in rows],
            "device": [s.device for s, _ in rows],
            "interface": [s.interface for s, _ in rows],
            "link_id": [link_id for _, link_id in rows],
            "metric": [s.metric for s, _ in rows],
            "qualifier": [s.qualifier for s, _ in rows],
            "rate": [s.rate for s, _ in rows],
            "interval_s": [s.interval_s for s, _ in rows],
        },
    )


def link_events(rows: Sequence[tuple[LinkEvent, str]]) -> pa.Table:
    return _table(
        "link_events",
        {
            "ts": [e.ts_ns for e, _ in rows],
            "device": [e.device for e, _ in rows],
            "interface": [e.interface for e, _ in rows],
            "link_id": [link_id for _, link_id in rows],
            "kind": [e.kind for e, _ in rows],
            "value": [e.value for e, _ in rows],
            "detail": [e.detail for e, _ in rows],
            "series": [e.series for e, _ in rows],
            "span_s": [e.span_s for e, _ in rows],
        },
    )


def _end(end: Endpoint | None) -> str:
    return "" if end is None else f"{end.device}:{end.interface}"


def cabling_events(rows: Sequence[CablingEvent]) -> pa.Table:
    return _table(
        "cabling_events",
        {
            "ts": [e.ts_ns for e in rows],
            "device": [e.device for e in rows],
            "interface": [e.interface for e in rows],
            "kind": [e.kind for e in rows],
            "planned": [_end(e.planned) for e in rows],
            "seen": [_end(e.seen) for e in rows],
            "detail": [e.detail for e in rows],
        },
    )


def node_events(rows: Sequence[NodeEvent]) -> pa.Table:
    return _table(
        "node_events",
        {
            "ts": [e.ts_ns for e in rows],
            "node": [e.node for e in rows],
            "kind": [e.kind for e in rows],
            "xid": [e.xid for e in rows],
            "pci": [e.pci for e in rows],
            "detail": [e.detail for e in rows],
            "quarantined": [e.quarantined for e in rows],
            "action": [e.action for e in rows],
            "reason": [e.reason for e in rows],
            "sdc": [e.sdc for e in rows],
            "line": [e.line for e in rows],
            "source": [e.source for e in rows],
        },
    )


def _fact_scope(fact: JobFact) -> tuple[int | None, str]:
    """The rank and communicator a fact is about, where it has them."""
    match fact:
        case RankInfo() | InitComplete():
            return fact.rank, fact.comm_id
        case ChannelEdge():
            return fact.src_rank, fact.comm_id
        case CollectiveTimeout() | WatchdogState():
            return fact.rank, ""
        case _:
            return None, ""


def job_facts(rows: Sequence[JobFact]) -> pa.Table:
    scopes = [_fact_scope(f) for f in rows]
    return _table(
        "job_facts",
        {
            "ts": [f.ts_ns for f in rows],
            "job_id": [f.job_id for f in rows],
            "kind": [FACT_KINDS[type(f)] for f in rows],
            "host": [f.host or "" for f in rows],
            "rank": [rank for rank, _ in scopes],
            "comm_id": [comm for _, comm in scopes],
            "detail": [orjson.dumps(f).decode() for f in rows],
            "origin_source": [f.origin.source for f in rows],
            "origin_line": [f.origin.line_no for f in rows],
        },
    )


def verdicts(rows: Sequence[Verdict], updated_at_ns: Sequence[int]) -> pa.Table:
    """`updated_at_ns` is the version of each row: the newest row of a job is its verdict."""
    return _table(
        "verdicts",
        {
            "job_id": [v.job_id for v in rows],
            "state": [v.state for v in rows],
            "stalled_at": [v.stalled_at_ns for v in rows],
            "decided_at": [v.decided_at_ns for v in rows],
            "cause_kind": [v.cause_kind for v in rows],
            "link_id": [v.cause_link.link_id if v.cause_link else "" for v in rows],
            "node": [v.cause_node or "" for v in rows],
            "confidence": [v.confidence for v in rows],
            "payload": [encode_verdict(v) for v in rows],
            "updated_at": list(updated_at_ns),
        },
    )


def dead_letters(rows: Sequence[DeadLetter]) -> pa.Table:
    return _table(
        "dead_letters",
        {
            "source": [d.source for d in rows],
            "reason": [d.reason for d in rows],
            "line_no": [d.line_no for d in rows],
            "raw": [d.raw for d in rows],
            "extra": [list(d.extra.items()) for d in rows],
        },
    )


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
