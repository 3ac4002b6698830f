"""The scheduler collector's metric families, read from the poller's `PollStats` at scrape
time (deploy/collectors/README.md documents each)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from railtrace.collectors.metrics import PREFIX, counters

if TYPE_CHECKING:
    from .poller import SlurmPoller

SCHEDULER_COUNTERS = (
    ("successes", "scheduler_poll_successes", "Polls Slurm answered (the tool or slurmrestd)."),
    (
        "failures",
        "scheduler_poll_failures",
        "Polls that failed: the tool missing, exiting non-zero, slurmrestd refusing or erring,"
        " or a timeout.",
    ),
    ("records", "scheduler_records", "Job records published (a job's placement changed)."),
    ("unchanged", "scheduler_unchanged_records", "Job records not published: nothing changed."),
    (
        "other_partitions",
        "scheduler_other_partition_records",
        "Job records passed over: their partition is not in collect.scheduler.partitions.",
    ),
    (
        "refused",
        "scheduler_refused_records",
        "Job records the reader refuses, published for the worker to dead-letter.",
    ),
    (
        "ended_unseen",
        "scheduler_ended_unseen_records",
        "Jobs published as ended between two polls: Slurm forgot them before their end was seen.",
    ),
    (
        "lookup_failures",
        "scheduler_lookup_failures",
        "Lookups by id of a running job no longer listed that failed; asked again next poll.",
    ),
    ("emit_failures", "scheduler_emit_failures", "Records delivery refused (spool not writable)."),
)


UP = "scheduler_up"
JOBS_LISTED = "scheduler_jobs_listed"


def scheduler_families(role: str, poller: SlurmPoller) -> Iterator[Metric]:
    """Whether Slurm answers, the jobs it lists, and the poll counters."""
    s = poller.stats
    up = GaugeMetricFamily(
        PREFIX + UP,
        "1 when Slurm (the tool or slurmrestd) answered the last poll, 0 otherwise.",
        labels=["role", "target"],
    )
    up.add_metric([role, poller.source], s.down_since is None)
    yield up
    listed = GaugeMetricFamily(
        PREFIX + JOBS_LISTED,
        "Jobs in the last good poll (waiting ones included).",
        labels=["role", "target"],
    )
    listed.add_metric([role, poller.source], s.jobs_listed)
    yield listed
    yield from counters(SCHEDULER_COUNTERS, ["role", "target"], [([role, poller.source], s)])
