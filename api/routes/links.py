"""Links: one cable's health around a moment and the jobs it can stall, and the fabric's worst
links over a window.

A link id is the cable id cables.csv gives (`leaf03:Ethernet1/7--gpu-node-12:mlx5_3`); its
interface names may hold slashes, so the id is matched as a path.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi import Path as PathParam

from railtrace.api import times
from railtrace.api.deps import StoreDep, fabric_of, invalid
from railtrace.api.joblinks import JobLinks
from railtrace.api.schemas import (
    CrossingJobOut,
    EndpointOut,
    LinkDetailOut,
    LinkEventOut,
    LinkJobsOut,
    SeriesOut,
    WorstLinkOut,
    WorstLinksOut,
    iso_utc,
)
from railtrace.api.times import ACCEPTED, Instant
from railtrace.store import Store
from railtrace.streams.records import JobState, Metric
from railtrace.topology.attrs import ROLE, Role
from railtrace.topology.ends import LinkRef
from railtrace.topology.view import link_rail

router = APIRouter(prefix="/v1/links", tags=["links"])

NS = 1_000_000_000
#: The longest window one request may ask for: a week, as the telemetry benchmark loads.
MAX_WINDOW = timedelta(days=7)
DEFAULT_WINDOW = timedelta(hours=1)
#: About this many buckets per series when no step is given: a chart's width of points.
DEFAULT_BUCKETS = 360
MAX_BUCKETS = 10_000
LinkId = Annotated[
    str,
    PathParam(
        min_length=5,
        max_length=300,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*--[A-Za-z0-9][A-Za-z0-9._:/@+-]*$",
        description="The cable id, `<device>:<port>--<device>:<port>` as cables.csv makes it.",
    ),
]
Since = Annotated[
    Instant | None,
    Query(description=f"Window start: {ACCEPTED}. Default: `until` - 1 h."),
]
Until = Annotated[
    Instant | None,
    Query(description=f"Window end: {ACCEPTED}. Default: `since` + 1 h, or now."),
]


class CountedMetric(StrEnum):
    """Counters a link can be ranked by: the ones that say something is wrong."""

    IN_ERRORS = Metric.IN_ERRORS.value
    OUT_ERRORS = Metric.OUT_ERRORS.value
    IN_DISCARDS = Metric.IN_DISCARDS.value
    OUT_DISCARDS = Metric.OUT_DISCARDS.value
    IN_FCS_ERRORS = Metric.IN_FCS_ERRORS.value
    SYMBOL_ERRORS = Metric.SYMBOL_ERRORS.value
    FEC_CORRECTED = Metric.FEC_CORRECTED.value
    FEC_UNCORRECTABLE = Metric.FEC_UNCORRECTABLE.value
    PFC_RX_PAUSE = Metric.PFC_RX_PAUSE.value
    PFC_TX_PAUSE = Metric.PFC_TX_PAUSE.value
    ECN_MARKED = Metric.ECN_MARKED.value
    CARRIER_TRANSITIONS = Metric.CARRIER_TRANSITIONS.value


def window(since: datetime | None, until: datetime | None) -> tuple[int, int]:
    """[since, until) in nanoseconds; see `times.window`."""
    return times.window(since, until, default=DEFAULT_WINDOW, longest=MAX_WINDOW)


@router.get(
    "",
    responses={503: {"description": "This API was started without a topology."}},
)
def worst_links(
    request: Request,
    store: StoreDep,
    metric: Annotated[
        CountedMetric, Query(description="The counter to rank by.")
    ] = CountedMetric.IN_ERRORS,
    since: Since = None,
    until: Until = None,
    limit: Annotated[int, Query(ge=1, le=100, description="How many links (top k).")] = 10,
) -> WorstLinksOut:
    """The fabric's worst links over a window: those with the most of `metric`, worst first,
    counted over the window's whole minutes. Links that counted none are left out."""
    fabric = fabric_of(request)
    since_ns, until_ns = window(since, until)
    found = store.worst_links(metric.value, since_ns, until_ns, limit)
    out = []
    for t in found:
        ref = fabric.links.get(t.link_id)
        out.append(
            WorstLinkOut(
                id=t.link_id,
                a=None if ref is None else EndpointOut.from_record(ref.a),
                b=None if ref is None else EndpointOut.from_record(ref.b),
                rail=None if ref is None else link_rail(fabric, ref.a, ref.b),
                total=t.total,
                peak_rate=t.peak_rate,
                samples=t.samples,
            )
        )
    return WorstLinksOut(
        metric=metric.value,
        since=iso_utc(since_ns),
        until=iso_utc(until_ns),
        limit=limit,
        links=out,
    )


@router.get(
    "/{link_id:path}/jobs",
    responses={
        404: {"description": "No such cable in cables.csv."},
        503: {"description": "This API was started without a topology."},
    },
)
def get_link_jobs(
    request: Request, store: StoreDep, link_id: LinkId, until: Until = None
) -> LinkJobsOut:
    """The link's blast radius alone: the jobs started by `until` (default now) whose paths
    may cross it. An alert about the link asks this, without the counters a page draws.
    Declared before the link page's route, whose path-matching id would take `/jobs` in."""
    _cable(request, link_id)
    _, until_ns = window(None, until)
    return LinkJobsOut(
        id=link_id, until=iso_utc(until_ns), jobs=_crossing(request, store, link_id, until_ns)
    )


@router.get(
    "/{link_id:path}",
    responses={
        404: {"description": "No such cable in cables.csv."},
        503: {"description": "This API was started without a topology."},
    },
)
def get_link(
    request: Request,
    store: StoreDep,
    link_id: LinkId,
    since: Since = None,
    until: Until = None,
    step_s: Annotated[
        int | None,
        Query(ge=1, le=86_400, description="Bucket width in seconds; default: window / 360."),
    ] = None,
    metric: Annotated[
        list[Metric] | None, Query(description="Only these metrics (repeat to ask for several).")
    ] = None,
) -> LinkDetailOut:
    """One link around a moment: both ends' counters in buckets, its events, and its blast
    radius (the jobs whose paths may cross it)."""
    fabric = fabric_of(request)
    ref = _cable(request, link_id)
    since_ns, until_ns = window(since, until)
    span_s = (until_ns - since_ns) / NS
    step = step_s or max(1, math.ceil(span_s / DEFAULT_BUCKETS))
    if span_s / step > MAX_BUCKETS:
        raise invalid(
            "step_s", f"step_s={step} gives over {MAX_BUCKETS} buckets for this window; widen it"
        )
    series = store.link_series(
        [ref.a, ref.b],
        since_ns,
        until_ns,
        step * NS,
        None if metric is None else sorted({m.value for m in metric}),
    )
    events = store.link_events_between([link_id], since_ns, until_ns, limit=1000)
    return LinkDetailOut(
        id=link_id,
        a=EndpointOut.from_record(ref.a),
        b=EndpointOut.from_record(ref.b),
        rail=link_rail(fabric, ref.a, ref.b),
        since=iso_utc(since_ns),
        until=iso_utc(until_ns),
        step_s=float(step),
        hosts=[
            e.device for e in (ref.a, ref.b) if fabric.graph.nodes[e.device].get(ROLE) == Role.HOST
        ],
        series=[SeriesOut.from_record(s) for s in series],
        events=[LinkEventOut.from_record(e) for e, _ in events],
        jobs=_crossing(request, store, link_id, until_ns),
    )


def _cable(request: Request, link_id: str) -> LinkRef:
    """The cable cables.csv names `link_id`, or a 404 that says where the ids are listed."""
    ref = fabric_of(request).links.get(link_id)
    if ref is None:
        raise HTTPException(
            status_code=404,
            detail=f"no cable '{link_id}' in cables.csv; GET /v1/topology lists the links",
        )
    return ref


def _crossing(request: Request, store: Store, link_id: str, until_ns: int) -> list[CrossingJobOut]:
    """The jobs started by the window's end whose paths may cross the link."""
    job_links: JobLinks = request.app.state.job_links
    return [
        CrossingJobOut(
            job_id=c.job.job_id,
            weight=c.weight,
            state=None if c.verdict is None else c.verdict.state,
            blamed=c.verdict is not None
            and c.verdict.state == JobState.STALLED
            and c.verdict.link_id == link_id,
            first_seen=iso_utc(c.job.first_ns),
            last_seen=iso_utc(c.job.last_ns),
        )
        for c in job_links.crossing(store, link_id, until_ns)
    ]
