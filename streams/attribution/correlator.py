"""The incremental attribution: link events and job facts in, verdicts out, in event time.

`Correlator.observe` takes one record at a time in timestamp order and returns the verdicts
that changed because of it. It never looks ahead: a verdict is built only from what has been
observed so far, and records the event time at which its cause was first reached
(`decided_at_ns`). The embedded replay and the streaming workers drive this same class.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field, replace

from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.scoring import XID_STALL_THRESHOLD, TimeWindow
from railtrace.streams.attribution.verdicts import (
    Observations,
    build_verdict,
    stall_time,
    xid_weight,
)
from railtrace.streams.records import (
    CollectiveTimeout,
    Endpoint,
    JobFact,
    JobState,
    LinkEvent,
    NetError,
    RasReport,
    Verdict,
    XidEvent,
)
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import LinkWeights, PathFinder, union_weights


@dataclass(slots=True)
class CorrelatorStats:
    link_events: int = 0
    unknown_interfaces: int = 0
    facts: int = 0
    evaluations: int = 0
    unknown_interface_names: set[Endpoint] = field(default_factory=set)


@dataclass(slots=True)
class _JobState:
    view: JobView
    weights: LinkWeights | None = None
    verdict: Verdict | None = None


#: Facts that can start or move a stall; others only describe the job.
HANG_EVIDENCE = (CollectiveTimeout, NetError, RasReport, XidEvent)


class Correlator:
    """Holds per-link anomaly history and per-job views; both bounded by the time window."""

    def __init__(self, fabric: Fabric, window: TimeWindow | None = None) -> None:
        self.fabric = fabric
        self.paths = PathFinder(fabric)
        self.window = window or TimeWindow()
        self.stats = CorrelatorStats()
        self._link_events: dict[str, list[LinkEvent]] = defaultdict(list)
        self._jobs: dict[str, _JobState] = {}
        self._jobs_on_link: dict[str, set[str]] = defaultdict(set)
        self._now_ns = 0

    # -- input ------------------------------------------------------------------------------

    def resolve(self, device: str, interface: str) -> str | None:
        """Link id of a switch interface, or None (counted) when the plan has no such cable."""
        lid = self.fabric.link_at.get(Endpoint(device, interface))
        if lid is None:
            self.stats.unknown_interfaces += 1
            self.stats.unknown_interface_names.add(Endpoint(device, interface))
        return lid

    def observe(self, record: LinkEvent | JobFact) -> list[Verdict]:
        """Take one record (in event-time order) and return the verdicts it changed."""
        self._now_ns = max(self._now_ns, record.ts_ns)
        if isinstance(record, LinkEvent):
            return self._on_link_event(record)
        return self._on_fact(record)

    def _on_link_event(self, event: LinkEvent) -> list[Verdict]:
        self.stats.link_events += 1
        lid = self.resolve(event.device, event.interface)
        if lid is None:
            return []
        history = self._link_events[lid]
        bisect.insort(history, event, key=lambda e: e.ts_ns)
        return [
            v
            for job_id in sorted(self._jobs_on_link.get(lid, ()))
            if (v := self._evaluate(job_id)) is not None
        ]

    def _on_fact(self, fact: JobFact) -> list[Verdict]:
        self.stats.facts += 1
        state = self._jobs.get(fact.job_id)
        if state is None:
            state = self._jobs[fact.job_id] = _JobState(JobView(fact.job_id))
        changed = state.view.add(fact)
        if changed:
            state.weights = None
        stalled = state.verdict is not None and state.verdict.state == JobState.STALLED
        if isinstance(fact, HANG_EVIDENCE) or (changed and stalled):
            verdict = self._evaluate(fact.job_id)
            return [] if verdict is None else [verdict]
        if state.verdict is None:
            state.verdict = self._build(state, {}, None)
            return [state.verdict]
        return []

    # -- evaluation -------------------------------------------------------------------------

    def _job_weights(self, state: _JobState) -> LinkWeights:
        if state.weights is None:
            flows = state.view.flows(self.fabric)
            if flows:
                weights = union_weights(self.paths.flow_links(a, b) for a, b in sorted(flows))
            else:
                # No channel lines: the job surely uses its hosts' NIC cables, nothing more is
                # known, so only those can be candidates.
                weights = {
                    lid: 1.0
                    for host in sorted(state.view.hosts)
                    for nic in self.fabric.host_nics.get(host, ())
                    if (lid := self.fabric.link_at.get(Endpoint(host, nic))) is not None
                }
            for lid in weights:
                self._jobs_on_link[lid].add(state.view.job_id)
            state.weights = weights
        return state.weights

    def _evaluate(self, job_id: str) -> Verdict | None:
        state = self._jobs[job_id]
        weights = self._job_weights(state)
        stalled_at = stall_time(state.view, self._severe_xid_ns(state.view))
        if stalled_at is None:
            if state.verdict is None:
                state.verdict = self._build(state, {}, None)
                return state.verdict
            return None
        self.stats.evaluations += 1
        lo = stalled_at - int(self.window.lookback_s * 1e9)
        hi = stalled_at + int(self.window.lookahead_s * 1e9)
        events = {
            lid: hits
            for lid in weights
            if (hits := _in_window(self._link_events.get(lid, ()), lo, hi))
        }
        verdict = self._build(state, events, stalled_at)
        previous = state.verdict
        if previous is not None and _same_answer(previous, verdict):
            verdict = replace(verdict, decided_at_ns=previous.decided_at_ns)
            if previous == verdict:
                return None
        state.verdict = verdict
        return verdict

    def _build(
        self, state: _JobState, events: dict[str, list[LinkEvent]], stalled_at: int | None
    ) -> Verdict:
        weights = self._job_weights(state) if stalled_at is not None else {}
        return build_verdict(
            state.view,
            Observations(weights, events, self._corroborated(state.view)),
            self.fabric,
            self.window,
            stalled_at,
            self._now_ns,
        )

    def _corroborated(self, view: JobView) -> dict[str, int]:
        """Links between a host that reported a transport error and the peer it named, with
        the time of the first such error."""
        first: dict[str, int] = {}
        flows = view.flows(self.fabric)
        for err in sorted(view.net_errors, key=lambda e: e.ts_ns):
            if err.peer is None:
                continue
            peer_nic = self.fabric.address_of.get(err.peer)
            peer_host = peer_nic.device if peer_nic is not None else err.peer
            links: set[str] = set()
            for a, b in flows:
                ends = {a.device, b.device}
                if ends == {err.host, peer_host} and (peer_nic is None or peer_nic in (a, b)):
                    links.update(self.paths.flow_links(a, b))
            if peer_nic is not None and (lid := self.fabric.link_at.get(peer_nic)) is not None:
                links.add(lid)
            for lid in links:
                first.setdefault(lid, err.ts_ns)
        return first

    def _severe_xid_ns(self, view: JobView) -> int | None:
        times = [x.ts_ns for x in view.xids if xid_weight(x.xid) >= XID_STALL_THRESHOLD]
        return min(times, default=None)

    # -- output -----------------------------------------------------------------------------

    def verdicts(self) -> list[Verdict]:
        """The current verdict of every job seen so far, by job id."""
        out = []
        for job_id in sorted(self._jobs):
            state = self._jobs[job_id]
            if state.verdict is None or state.verdict.state != JobState.STALLED:
                state.verdict = self._build(state, {}, None)
            out.append(state.verdict)
        return out

    def job_links(self, job_id: str) -> LinkWeights:
        """The links a job may use, with crossing probabilities (empty for an unknown job)."""
        state = self._jobs.get(job_id)
        return {} if state is None else dict(self._job_weights(state))


def _in_window(history: list[LinkEvent] | tuple[()], lo: int, hi: int) -> list[LinkEvent]:
    if not history:
        return []
    start = bisect.bisect_left(history, lo, key=lambda e: e.ts_ns)
    end = bisect.bisect_right(history, hi, key=lambda e: e.ts_ns)
    return list(history[start:end])


def _same_answer(a: Verdict, b: Verdict) -> bool:
    return (a.state, a.cause_kind, a.cause_link, a.cause_node) == (
        b.state,
        b.cause_kind,
        b.cause_link,
        b.cause_node,
    )
