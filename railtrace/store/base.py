"""What a store hands back besides records (the job summary row and the other query
results) and the errors it raises; the store itself is `sql_store.Store`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from railtrace.streams.records import CauseKind, JobState

if TYPE_CHECKING:
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
