"""Request dependencies and validated parameters, as `Annotated` aliases the routes share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, cast

from fastapi import Depends, HTTPException, Path, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from railtrace.api.schemas import ValidationErrorOut
from railtrace.store import Store
from railtrace.streams.records import JOB_ID_MAX_LENGTH, JOB_ID_PATTERN, JobState
from railtrace.topology.fabric import Fabric


def _store(request: Request) -> Store:
    return cast(Store, request.app.state.store)


StoreDep = Annotated[Store, Depends(_store)]


def fabric_of(request: Request) -> Fabric:
    """The cabling plan the API was started with; a 503 that says how to give it one.
    Called inside the routes, after their parameters are validated, not as a dependency."""
    fabric: Fabric | None = request.app.state.fabric
    if fabric is None:
        raise HTTPException(
            status_code=503,
            detail="this API has no topology, so it cannot draw the fabric or a link: start it "
            "with `railtrace serve --topology DIR` (or `sink --serve --topology DIR`), DIR a "
            "folder with cables.csv such as the capture replayed, or set api.topology_dir "
            "(RAILTRACE_API__TOPOLOGY_DIR); a store filled by `railtrace replay` keeps its "
            "capture's plan and needs neither",
        )
    return fabric


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


def _query_names(route: APIRoute) -> frozenset[str]:
    names = _QUERY_NAMES.get(id(route))
    if names is None:
        names = _QUERY_NAMES[id(route)] = frozenset(_query_aliases(route.dependant))
    return names


def _query_aliases(dependant: Dependant) -> Iterator[str]:
    """The query parameters of a route and of every dependency it has, however deep."""
    yield from (p.alias for p in dependant.query_params)
    for sub in dependant.dependencies:
        yield from _query_aliases(sub)


#: By id(route): routes live as long as their app and are not hashable.
_QUERY_NAMES: dict[int, frozenset[str]] = {}


#: What `reject_unknown_query` adds to every route's documented answers, those that take no
#: parameter of their own included (FastAPI documents 422 only for those that do).
STRICT: dict[int | str, dict[str, Any]] = {
    422: {
        "model": ValidationErrorOut,
        "description": "A query parameter this route does not take, or a value it refuses.",
    }
}


def reject_unknown_query(request: Request) -> None:
    """A 422 for query parameters the route does not take: FastAPI would drop them, and a
    misspelt filter (`?stat=stalled`) would quietly answer with every job."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    unknown = sorted(set(request.query_params) - _query_names(route))
    if unknown:
        raise RequestValidationError(
            [
                {
                    "type": "extra_forbidden",
                    "loc": ("query", name),
                    "msg": "unknown query parameter; this route takes: "
                    + (", ".join(sorted(_query_names(route))) or "none"),
                    "input": request.query_params[name],
                }
                for name in unknown
            ]
        )


def invalid(param: str, message: str, kind: str = "value_error") -> RequestValidationError:
    """A 422 for a query parameter that passed its own checks but not the route's (an inverted
    time window), in the same shape FastAPI gives every other validation error."""
    return RequestValidationError([{"type": kind, "loc": ("query", param), "msg": message}])
