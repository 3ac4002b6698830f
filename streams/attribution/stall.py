"""When a job stopped, read from its hang evidence: the watchdog's collectives, transport
errors, RAS rows, watchdog states and the Xids that surely take a GPU out.

Apart from the verdict because the correlator dates a stall, and the moments it survived an
anomaly, from these before any candidate is scored. Pure: the view is passed in.
"""

from __future__ import annotations

from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.attribution.watchdog import stall_of
from railtrace.streams.records import XidEvent


def seen(ts_ns: int, upto_ns: int | None) -> bool:
    """Whether evidence stamped `ts_ns` was there by `upto_ns` (everything when None): the
    decided_at search judges the same view at earlier cut-offs. Undated evidence (0) never is.
    """
    return ts_ns > 0 and (upto_ns is None or ts_ns <= upto_ns)


def first_hung_collective(view: JobView, upto_ns: int | None = None) -> int | None:
    """When the first collective that never finished started, from the watchdog lines seen by
    `upto_ns`. Every collective before it finished: the job was making progress until then."""
    return min(
        (t.started_ns for t in view.timeouts if t.started_ns > 0 and seen(t.ts_ns, upto_ns)),
        default=None,
    )


def fault_of(x: XidEvent) -> int:
    """The Xid whose fault `x` reports: the one it was caused by, when the driver says so (an
    Xid 45 `caused by previous Xid 149` is the NVLink failure seen again), else its own."""
    return x.xid if x.caused_by is None else x.caused_by


def stall_time(
    view: JobView, upto_ns: int | None = None, profile: AttributionProfile = DEFAULT_PROFILE
) -> int | None:
    """When the job stopped, from the hang evidence seen by `upto_ns`; None when there is none.

    A watchdog line dates the stall to the start of the collective that never finished, so it
    usually moves the stall earlier than the transport error that was seen first; a heartbeat
    abort to when the watchdog itself got stuck. An Xid counts when its fault surely takes a
    GPU out of the job; a RAS summary row only when it says data is missing or a rank failed.
    A transport error comes only once RDMA's retries ran out, tens of seconds late; when the
    step reports stopped before it, the report that never came (the last one plus the usual
    interval) dates the stall better.
    """
    hung = first_hung_collective(view, upto_ns)
    times = [] if hung is None else [hung]
    times += [e.ts_ns for e in view.net_errors if seen(e.ts_ns, upto_ns)]
    times += [r.ts_ns for r in view.ras if r.trouble and seen(r.ts_ns, upto_ns)]
    times += [stall_of(w) for w in view.watchdogs if seen(w.ts_ns, upto_ns)]
    times += [
        x.ts_ns
        for x in view.xids
        if seen(x.ts_ns, upto_ns)
        and profile.scoring.xid(fault_of(x)) >= profile.scoring.xid_stall_threshold
    ]
    stall = min(times, default=None)
    if stall is None:
        return None
    before = [t for t in view.pace.recent if t <= stall]
    interval = view.pace.interval_ns(stall)
    if before and interval is not None and stall - before[-1] > interval:
        stall = min(stall, before[-1] + interval)
    return stall
