"""The moments a job's evidence is weighed from: until when the job visibly survived an
anomaly, and since when its answer has held (`decided_at_ns`).

Apart from the correlator because both read the job's own view (its step reports and hang
evidence), not the fabric or the link history; the answer at an earlier time is asked of the
caller. Pure: the view is passed in.
"""

from __future__ import annotations

from collections.abc import Callable

from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.streams.attribution.stall import first_hung_collective
from railtrace.streams.attribution.watchdog import stall_of
from railtrace.streams.records import Verdict

NS = 1_000_000_000


def survived_until(
    view: JobView, since: int, upto_ns: int | None, profile: AttributionProfile, slow: bool = False
) -> int:
    """Before this time an anomaly cannot explain the trouble that began at `since`: the
    job went on making progress after it (its traffic took another path, the link came
    back, the errors did not touch it). 0 without reports.

    A stall needs only one whole step after the anomaly, a slowdown a whole interval at the
    normal pace, since a report gives the mean pace of all the steps since the previous one.
    Progress is known from the step reports and, for a stall, from the start of the first
    collective that never finished: every collective before it finished.
    """
    pace = view.pace
    # The clocks of the hosts and the switches disagree, and a log shipper stamps lines late:
    # progress vouches for a little less than its stamps say.
    slack = int(profile.judging.survival_slack_s * NS)
    if slow and pace.onset_prev_ns is not None and pace.onset_interval_ns is not None:
        return pace.onset_prev_ns - pace.onset_interval_ns - slack
    interval = pace.interval_ns(since)
    if interval is None:
        return 0
    progressed = [t for t in pace.recent if t < since]
    hung = None if slow else first_hung_collective(view, upto_ns)
    if hung is not None:
        progressed.append(min(hung, since))
    if not progressed:
        return 0
    # One whole step vouched for; without step numbers, the whole interval.
    step = pace.step_ns(since)
    vouched = interval if step is None else min(interval, step)
    return max(progressed) - vouched - slack


def decided_at(
    view: JobView, final: Verdict, now_ns: int, answer_at: Callable[[int], Verdict]
) -> int:
    """The earliest evidence time from which the answer has been `final`'s; `answer_at(t)` is
    the verdict from the evidence seen by `t`.

    Checked at the times evidence arrived: each hang fact, each anomaly on the two leading
    candidates, each NCCL error that corroborates one of them, the moment the step reports
    became overdue and the report that confirmed a slowdown.
    """
    times = _turning_points(view)
    pace = view.pace
    overdue = pace.overdue_at()
    if overdue is not None and overdue <= now_ns:
        times.add(overdue)
    if pace.slow_confirmed_ns is not None:
        times.add(pace.slow_confirmed_ns)
    for cand in final.candidates[:2]:
        times.update(e.ts_ns for e in cand.evidence)
    times.discard(0)
    decided = max(times, default=final.stalled_at_ns or 0)
    for t in sorted(times, reverse=True):
        answer = answer_at(t)
        if (answer.state, answer.cause_kind, answer.cause_link, answer.cause_node) != (
            final.state,
            final.cause_kind,
            final.cause_link,
            final.cause_node,
        ):
            break
        decided = t
    return decided


def _turning_points(view: JobView) -> set[int]:
    """Times at which the job's hang evidence could have changed an answer: when the stall
    moved earlier, when a transport error named a new peer, and every Xid."""
    points: set[int] = {x.ts_ns for x in view.xids}
    floor = 2**63
    hang = [(t.ts_ns, t.started_ns) for t in view.timeouts]
    hang += [(e.ts_ns, e.ts_ns) for e in view.net_errors]
    hang += [(r.ts_ns, r.ts_ns) for r in view.ras if r.trouble]
    hang += [(w.ts_ns, stall_of(w)) for w in view.watchdogs]
    for ts, stall in sorted(hang):
        if 0 < stall < floor:
            floor = stall
            points.add(ts)
    peers: set[tuple[str, str | None]] = set()
    for e in sorted(view.net_errors, key=lambda e: e.ts_ns):
        if (e.host, e.peer) not in peers:
            peers.add((e.host, e.peer))
            points.add(e.ts_ns)
    return points
