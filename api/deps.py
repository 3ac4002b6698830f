"""Request dependencies and validated parameters, as `Annotated` aliases the routes share."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Path, Query, Request

from railtrace.store import Store
from railtrace.streams.records import JobState

#: Scheduler job ids (Slurm `1234_5`, Kubernetes names, run names): letters, digits and
#: `._:@+-`, starting with a letter or digit. Anything else cannot be a job railtrace stored.
JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$"
JOB_ID_MAX_LENGTH = 128


def _store(request: Request) -> Store:
    return cast(Store, request.app.state.store)


StoreDep = Annotated[Store, Depends(_store)]

JobId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=JOB_ID_MAX_LENGTH,
        pattern=JOB_ID_PATTERN,
        description="The job id as it appears in the logs (e.g. the Slurm job id).",
    ),
]

StateFilter = Annotated[
    JobState | None, Query(description="Only jobs whose current verdict has this state.")
]

Limit = Annotated[int, Query(ge=1, le=1000, description="Page size.")]

Offset = Annotated[int, Query(ge=0, le=1_000_000, description="Jobs to skip.")]
