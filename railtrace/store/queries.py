"""What the store answers: the queries both backends run, over the one `select` primitive.

`Store` (in `sql_store`) adds the writes and the migrations; this half only reads, so the SQL
and the decoding of its rows back into records sit together, apart from the insert path.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, cast

import orjson
import pyarrow as pa

from railtrace.store import query_text as texts
from railtrace.store import rows as to_arrow
from railtrace.store.base import (
    JobActivity,
    JobSummary,
    LinkTotal,
    NodeSummary,
    SampleSeries,
    StoreError,
)
from railtrace.store.columns import qualified
from railtrace.store.schema import TABLES, TABLES_BY_NAME
from railtrace.store.verdict_codec import decode_verdict
from railtrace.streams import codec
from railtrace.streams.records import (
    CablingEvent,
    CauseKind,
    JobFact,
    JobState,
    LinkEvent,
    LinkEventKind,
    NodeEvent,
    Verdict,
)
from railtrace.topology.ends import CablingKind, Endpoint

log = logging.getLogger(__name__)


class Queries(ABC):
    """The reads of a `Store`: every query, given a way to run one (`select`)."""

    database: str

    @abstractmethod
    def select(self, sql: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        """Run a read-only query (`{name:Type}` placeholders bound from `params`); the result
        has strings as `string` columns. Table names must be database-qualified."""

    def _name(self, table: str) -> str:
        return qualified(self.database, table)

    def list_jobs(
        self, state: JobState | None = None, limit: int = 100, offset: int = 0
    ) -> list[JobSummary]:
        """Current verdicts, most recently updated first."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        where = ""
        if state is not None:
            where, params["state"] = "WHERE state = {state:String}", state.value
        sql = texts.JOBS_SQL.format(verdicts=self._name("verdicts"), where=where)
        return [
            JobSummary(
                job_id=r["job_id"],
                state=JobState(r["state"]),
                stalled_at_ns=r["stalled_at_ns"],
                decided_at_ns=r["decided_at_ns"],
                cause_kind=CauseKind(r["cause_kind"]),
                link_id=r["link_id"] or None,
                node=r["node"] or None,
                confidence=r["confidence"],
                updated_at_ns=r["updated_at_ns"],
                tied=tuple(r["tied"]),
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def get_verdict(self, job_id: str) -> Verdict | None:
        """The job's current verdict, None when it has none."""
        sql = texts.VERDICT_SQL.format(verdicts=self._name("verdicts"))
        payloads = self.select(sql, {"job_id": job_id}).column("payload").to_pylist()
        return decode_verdict(payloads[0]) if payloads else None

    def cabling_differences(
        self, device: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[CablingEvent]:
        """The ports whose latest cabling event is a difference (not `resolved`), by device
        and interface."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        where = ""
        if device is not None:
            where, params["device"] = "WHERE device = {device:String}", device
        sql = texts.CABLING_SQL.format(cabling=self._name("cabling_events"), where=where)
        return [
            CablingEvent(
                r["ts_ns"],
                r["device"],
                r["interface"],
                CablingKind(r["last_kind"]),
                _endpoint(r["planned_end"]),
                _endpoint(r["seen_end"]),
                r["last_detail"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def list_nodes(
        self, quarantined: bool | None = None, limit: int = 100, offset: int = 0
    ) -> list[NodeSummary]:
        """Nodes with node events, by name; only (non-)quarantined ones if asked."""
        return self._nodes(None, quarantined, limit, offset)

    def node_summary(self, node: str) -> NodeSummary | None:
        """One node's state, None when it has no node events."""
        found = self._nodes(node, None, 1, 0)
        return found[0] if found else None

    def _nodes(
        self, node: str | None, quarantined: bool | None, limit: int, offset: int
    ) -> list[NodeSummary]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        where = having = ""
        if node is not None:
            where, params["node"] = "WHERE node = {node:String}", node
        if quarantined is not None:
            having, params["q"] = "HAVING now_quarantined = {q:Bool}", quarantined
        sql = texts.NODES_SQL.format(events=self._name("node_events"), where=where, having=having)
        return [
            NodeSummary(
                node=r["node"],
                quarantined=bool(r["now_quarantined"]),
                sdc_suspect=bool(r["now_quarantined"] and r["last_sdc"]),
                reason=r["last_reason"] if r["decisions"] else None,
                decided_at_ns=r["decided_at_ns"] if r["decisions"] else None,
                xids=r["xids"],
                last_event_ns=r["last_event_ns"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def node_events(self, node: str, limit: int = 100, offset: int = 0) -> list[NodeEvent]:
        """One node's Xids and decisions, newest first."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}")
        sql = texts.NODE_EVENTS_SQL.format(events=self._name("node_events"))
        rows = self.select(sql, {"node": node, "limit": limit, "offset": offset}).to_pylist()
        return [
            NodeEvent(
                r["ts_ns"],
                r["node"],
                r["kind"],
                r["xid"],
                r["pci"],
                r["detail"],
                bool(r["quarantined"]),
                r["action"],
                r["reason"],
                bool(r["sdc"]),
                r["line"],
                r["source"],
            )
            for r in rows
        ]

    def job_facts_of(
        self, job_id: str, kinds: Sequence[str] | None = None, limit: int = 100_000
    ) -> list[JobFact]:
        """The job's facts (of `kinds`, default all), in the order they happened. A row that
        no longer decodes (a record type changed since) is logged and left out rather than
        failing the read."""
        sql = texts.JOB_FACTS_SQL.format(facts=self._name("job_facts"))
        wanted = list(to_arrow.FACT_TYPES) if kinds is None else list(kinds)
        params = {"job_id": job_id, "kinds": wanted, "limit": limit}
        out: list[JobFact] = []
        for r in self.select(sql, params).to_pylist():
            cls = to_arrow.FACT_TYPES[r["kind"]]
            try:
                raw = {**orjson.loads(r["detail"]), "t": cls.__name__}
                out.append(cast(JobFact, codec.decode(raw, cls)))
            except (codec.CodecError, orjson.JSONDecodeError) as exc:
                log.error(
                    "stored job fact unreadable",
                    extra={"job": job_id, "kind": r["kind"], "reason": str(exc)},
                )
        return out

    def link_events_between(
        self, link_ids: Sequence[str], since_ns: int, until_ns: int, limit: int = 10_000
    ) -> list[tuple[LinkEvent, str]]:
        """Events of these links in [since_ns, until_ns], oldest first, with their link id."""
        if not link_ids:
            return []
        sql = texts.LINK_EVENTS_SQL.format(events=self._name("link_events"))
        params = {"links": list(link_ids), "since": since_ns, "until": until_ns, "limit": limit}
        return [
            (
                LinkEvent(
                    r["ts_ns"],
                    r["device"],
                    r["interface"],
                    LinkEventKind(r["kind"]),
                    r["value"],
                    r["detail"],
                    r["series"],
                    r["span_s"],
                ),
                r["link_id"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def link_series(
        self,
        ends: Sequence[Endpoint],
        since_ns: int,
        until_ns: int,
        step_ns: int,
        metrics: Sequence[str] | None = None,
        limit: int = 200_000,
    ) -> list[SampleSeries]:
        """The samples of these ports in [since_ns, until_ns), in buckets of `step_ns`, one
        series per (port, metric, qualifier), ordered."""
        if not ends:
            return []
        if step_ns <= 0:
            raise ValueError(f"step must be positive, got {step_ns} ns")
        metric_filter = "" if metrics is None else "AND metric IN {metrics:Array(String)}"
        sql = texts.LINK_SERIES_SQL.format(
            samples=self._name("link_samples"), metric_filter=metric_filter
        )
        params: dict[str, Any] = {
            "devices": sorted({e.device for e in ends}),
            "interfaces": sorted({e.interface for e in ends}),
            "ends": sorted(f"{e.device}:{e.interface}" for e in ends),
            "since": since_ns,
            "until": until_ns,
            "step": step_ns,
            "limit": limit,
        }
        if metrics is not None:
            params["metrics"] = list(metrics)
        return [
            SampleSeries(
                r["device"],
                r["interface"],
                r["metric"],
                r["qualifier"],
                r["ts_ns"],
                r["mean"],
                r["peak"],
            )
            for r in self.select(sql, params).to_pylist()
        ]

    def worst_links(
        self, metric: str, since_ns: int, until_ns: int, limit: int = 10
    ) -> list[LinkTotal]:
        """The links with the largest nonzero total of fault counter `metric` in the whole
        minutes of the window, worst first."""
        sql = texts.WORST_LINKS_SQL.format(rollup=self._name("link_fault_minutes"))
        params = {"metric": metric, "since": since_ns, "until": until_ns, "limit": limit}
        return [
            LinkTotal(r["link_id"], r["total"], r["peak_rate"], r["samples"])
            for r in self.select(sql, params).to_pylist()
        ]

    def job_activity(self, limit: int = 200) -> list[JobActivity]:
        """Jobs with stored facts, latest active first."""
        sql = texts.JOB_ACTIVITY_SQL.format(facts=self._name("job_facts"))
        rows = self.select(sql, {"limit": limit}).to_pylist()
        return [JobActivity(r["job_id"], r["first_ns"], r["last_ns"], r["facts"]) for r in rows]

    def stored_rows(self) -> dict[str, int]:
        """Rows stored per table, repeats not yet merged away included: for monitoring."""
        rows = self.select(texts.PARTS_SQL, {"database": self.database}).to_pylist()
        found = {str(r["table"]): int(r["n"]) for r in rows}
        return {t.name: found.get(t.name, 0) for t in TABLES}

    def verdict_delays(self) -> tuple[float, float, int] | None:
        """(p50, p95) seconds from stall to verdict over the verdicts updated in the last day,
        and how many; None when there are none."""
        result = self.select(texts.DELAYS_SQL.format(verdicts=self._name("verdicts"))).to_pylist()
        if not result or not result[0]["n"]:
            return None
        p50, p95 = result[0]["q"]
        return float(p50), float(p95), int(result[0]["n"])

    def count(self, table: str) -> int:
        """Rows in `table`; one per key for the ReplacingMergeTree tables."""
        spec = TABLES_BY_NAME.get(table)
        if spec is None:
            raise ValueError(f"no table {table!r}; tables are {sorted(TABLES_BY_NAME)}")
        final = " FINAL" if spec.replacing else ""
        result = self.select(f"SELECT count() AS n FROM {self._name(table)}{final}")
        return int(result["n"][0].as_py())

    def ping(self) -> None:
        """Raise StoreError unless the store answers and its tables exist."""
        try:
            answer = self.select(texts.PING_SQL, {"database": self.database})
            found = answer.column("name").to_pylist()
        except Exception as exc:
            raise StoreError(f"store does not answer: {exc}") from exc
        missing = sorted({t.name for t in TABLES} - set(found))
        if missing:
            raise StoreError(f"database {self.database} lacks tables {missing}; run migrate")


def _endpoint(text: str) -> Endpoint | None:
    """`device:interface` as the cabling table stores it; device names hold no colon."""
    if not text:
        return None
    device, _, interface = text.partition(":")
    return Endpoint(device, interface)
