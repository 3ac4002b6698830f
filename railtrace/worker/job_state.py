"""One job's state as the `job-state` table keeps it: the job's log parsers and its view in
one value, written once per batch.

One value, because a worker may die at any moment: written to two tables (as they once were)
and delivered apart, a restart could find the parsers ahead of the view, so that the lines
they had read were skipped and their facts never reached the view (a job streamed without
its first NCCL error), or behind it, so that facts were folded twice.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

import orjson

from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.pace import PaceRules
from railtrace.streams.logs.sources import SourceHosts
from railtrace.worker.job_parsers import JobParsers

VERSION = 1


def encode(parsers: JobParsers, view: JobView | None) -> bytes:
    return orjson.dumps(
        {
            "v": VERSION,
            "parsers": parsers.snapshot(),
            "view": None if view is None else view.snapshot(),
        }
    )


def _checked(snap: Any) -> dict[str, Any]:
    if not isinstance(snap, dict) or snap.get("v") != VERSION:
        raise ValueError(f"not a version-{VERSION} job state")
    return snap


def parsers_of(snap: Any, named: SourceHosts, local: tzinfo) -> JobParsers:
    return JobParsers.restore(named, local, _checked(snap)["parsers"])


def view_of(snap: Any, pace: PaceRules) -> JobView | None:
    """The saved view, or None for a job no fact has given one yet."""
    saved = _checked(snap)["view"]
    return None if saved is None else JobView.restore(saved, pace)
