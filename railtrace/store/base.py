"""What a store is to its callers: the `Store` protocol, the job summary row, the errors.

The CLI, the replay and the API depend on this protocol only, so the embedded chDB store and a
ClickHouse server are interchangeable behind `open_store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from railtrace.streams.records import (
    CablingEvent,
    CauseKind,
    DeadLetter,
    JobFact,
    JobState,
    LinkEvent,
    LinkSample,
    NodeEvent,
    Verdict,
)
from railtrace.topology.ends import Endpoint

if TYPE_CHECKING:
    from railtrace.store.migrations import Migration
    from railtrace.store.migrations import Status as MigrationStatus
    from railtrace.store.owner import Owner


@dataclass(frozen=True, slots=True)
class JobSummary:
    """One line of the job list: the current verdict's headline without its evidence."""

    job_id: str
    state: JobState
    stalled_at_ns: int | None
    decided_at_ns: int | None
    cause_kind: CauseKind
    link_id: str | None
    node: str | None
    confidence: float
    updated_at_ns: int
    #: The candidates the evidence cannot tell apart, the named one first (empty unless a
    #: tie): a list of incidents must not show a coin toss as a sure answer.
    tied: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SampleSeries:
    """One metric of one port, bucketed: each bucket's mean and peak rate."""

    device: str
    interface: str
    metric: str
    qualifier: str
    ts_ns: list[int]
    mean: list[float]
    peak: list[float]


@dataclass(frozen=True, slots=True)
class LinkTotal:
    """A link's total of one counter over a window (rate x interval summed), its peak rate
    and how many samples it took."""

    link_id: str
    total: float
    peak_rate: float
    samples: int


@dataclass(frozen=True, slots=True)
class JobActivity:
    """When a job's facts start and end, and how many there are: enough to tell whether the
    job's path can be cached."""

    job_id: str
    first_ns: int
    last_ns: int
    facts: int


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """A GPU node's quarantine state as its Xid history leaves it.

    `decided_at_ns`/`reason` are those of the last decision (quarantine or release), None if
    the node's Xids never changed its state; `sdc_suspect` holds only while quarantined.
    """

    node: str
    quarantined: bool
    sdc_suspect: bool
    reason: str | None
    decided_at_ns: int | None
    xids: int
    last_event_ns: int


class StoreError(RuntimeError):
    """The store cannot be opened or does not answer."""


class StoreLockedError(StoreError):
    """Another process holds the chDB data directory (chDB allows one process per directory)."""

    def __init__(self, data_dir: Path, owner: Owner | None) -> None:
        self.data_dir = data_dir
        self.owner = owner
        if owner is None:
            who, hint = "", "stop that process or use another data directory"
        elif owner.api_url:
            who = f" (pid {owner.pid}, serving {owner.api_url})"
            hint = f"read through its API at {owner.api_url} instead"
        else:
            who, hint = f" (pid {owner.pid})", "stop that process or use another data directory"
        super().__init__(
            f"the data directory {data_dir} is already open in another process{who}; "
            f"chDB lets only one process hold it at a time: {hint}"
        )


class Store(Protocol):
    """Writes take records (plus the resolved link id for telemetry) and return once the rows
    are stored; a retried identical batch is dropped, so writers may retry freely."""

    def migrate(self) -> list[Migration]:
        """Apply the schema migrations the database lacks (see `migrations`); returns those
        applied. Safe to run on every start."""
        ...

    def migration_status(self) -> list[MigrationStatus]:
        """Every schema migration, with when this database got it (None: pending)."""
        ...

    def write_link_samples(self, rows: Sequence[tuple[LinkSample, str]]) -> None: ...

    def write_link_events(self, rows: Sequence[tuple[LinkEvent, str]]) -> None: ...

    def write_cabling_events(self, rows: Sequence[CablingEvent]) -> None: ...

    def write_node_events(self, rows: Sequence[NodeEvent]) -> None: ...

    def write_job_facts(self, rows: Sequence[JobFact]) -> None: ...

    def write_verdicts(
        self, rows: Sequence[Verdict], versions: Sequence[int] | None = None
    ) -> None:
        """Store verdicts as the current ones of their jobs: the row with the highest version
        wins (by default, later writes). A streaming sink passes versions taken from the
        verdict topic, so a redelivered old verdict never replaces a newer one."""
        ...

    def write_dead_letters(self, rows: Sequence[DeadLetter]) -> None: ...

    def list_jobs(
        self, state: JobState | None = None, limit: int = 100, offset: int = 0
    ) -> list[JobSummary]:
        """Current verdicts, most recently updated first."""
        ...

    def get_verdict(self, job_id: str) -> Verdict | None: ...

    def cabling_differences(
        self, device: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[CablingEvent]:
        """The ports whose latest cabling event is a difference (not `resolved`), by device
        and interface."""
        ...

    def list_nodes(
        self, quarantined: bool | None = None, limit: int = 100, offset: int = 0
    ) -> list[NodeSummary]:
        """Nodes with node events, by name; only (non-)quarantined ones if asked."""
        ...

    def node_summary(self, node: str) -> NodeSummary | None:
        """One node's state, None when it has no node events."""
        ...

    def node_events(self, node: str, limit: int = 100, offset: int = 0) -> list[NodeEvent]:
        """One node's Xids and decisions, newest first."""
        ...

    def job_facts_of(
        self, job_id: str, kinds: Sequence[str] | None = None, limit: int = 100_000
    ) -> list[JobFact]:
        """The job's facts (of `kinds`, as `rows.FACT_KINDS` names them; default all), in
        the order they happened."""
        ...

    def link_events_between(
        self, link_ids: Sequence[str], since_ns: int, until_ns: int, limit: int = 10_000
    ) -> list[tuple[LinkEvent, str]]:
        """Events of these links in [since_ns, until_ns], oldest first, with their link id."""
        ...

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
        ...

    def worst_links(
        self, metric: str, since_ns: int, until_ns: int, limit: int = 10
    ) -> list[LinkTotal]:
        """The links with the largest nonzero total of fault counter `metric` in the whole
        minutes of the window, worst first."""
        ...

    def job_activity(self, limit: int = 200) -> list[JobActivity]:
        """Jobs with stored facts, latest active first."""
        ...

    def stored_rows(self) -> dict[str, int]:
        """Rows stored per table, repeats not yet merged away included: for monitoring."""
        ...

    def verdict_delays(self) -> tuple[float, float, int] | None:
        """(p50, p95) seconds from stall to verdict over the verdicts updated in the last day,
        and how many; None when there are none."""
        ...

    def count(self, table: str) -> int:
        """Rows in `table`; one per key for the ReplacingMergeTree tables."""
        ...

    def ping(self) -> None:
        """Raise StoreError unless the store answers and its tables exist."""
        ...

    def close(self) -> None: ...
