"""The incremental attribution: link events and job facts in, verdicts out, in event time.

`Correlator.observe` takes one record at a time and returns the verdicts that changed because
of it. A verdict is a pure function of the evidence observed so far, including `decided_at_ns`:
the earliest evidence time from which the current answer has held. So the embedded replay (one
process, strict time order) and the streaming workers (records arriving per partition, link
anomalies from a replicated table, re-evaluation on a timer) reach the same verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from railtrace.streams.attribution.history import LinkEventSource, LinkHistory
from railtrace.streams.attribution.jobs import Change, JobView
from railtrace.streams.attribution.scoring import TimeWindow
from railtrace.streams.attribution.verdicts import Observations, build_verdict, stall_time
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

#: Facts that can start or move a stall; others only describe the job.
HANG_EVIDENCE = (CollectiveTimeout, NetError, RasReport, XidEvent)
NS = 1_000_000_000


@dataclass(slots=True)
class CorrelatorStats:
    link_events: int = 0
    unknown_interfaces: int = 0
    facts: int = 0
    evaluations: int = 0
    unknown_interface_names: set[Endpoint] = field(default_factory=set)


@dataclass(slots=True)
class _Job:
    view: JobView
    weights: LinkWeights | None = None
    verdict: Verdict | None = None


class Correlator:
    """Per-job views plus a source of link anomalies (its own history, or a shared one)."""

    def __init__(
        self,
        fabric: Fabric,
        window: TimeWindow | None = None,
        history: LinkEventSource | None = None,
        paths: PathFinder | None = None,
    ) -> None:
        self.fabric = fabric
        self.paths = paths or PathFinder(fabric)
        self.window = window or TimeWindow()
        self.stats = CorrelatorStats()
        self.local_history = LinkHistory() if history is None else None
        self.history: LinkEventSource = self.local_history or history  # type: ignore[assignment]
        self._jobs: dict[str, _Job] = {}
        self._jobs_on_link: dict[str, set[str]] = {}

    # -- input ------------------------------------------------------------------------------

    def resolve(self, device: str, interface: str) -> str | None:
        """Link id of a switch interface, or None (counted) when the plan has no such cable."""
        lid = self.fabric.link_at.get(Endpoint(device, interface))
        if lid is None:
            self.stats.unknown_interfaces += 1
            self.stats.unknown_interface_names.add(Endpoint(device, interface))
        return lid

    def observe(self, record: LinkEvent | JobFact) -> list[Verdict]:
        """Take one record and return the verdicts it changed."""
        if isinstance(record, LinkEvent):
            return self._on_link_event(record)
        return self._on_fact(record)

    def _on_link_event(self, event: LinkEvent) -> list[Verdict]:
        self.stats.link_events += 1
        lid = self.resolve(event.device, event.interface)
        if lid is None or self.local_history is None:
            return []
        if not self.local_history.add(lid, event):
            return []
        return self.reevaluate(self._jobs_on_link.get(lid, ()))

    def _on_fact(self, fact: JobFact) -> list[Verdict]:
        self.stats.facts += 1
        job = self._jobs.get(fact.job_id)
        if job is None:
            job = self._jobs[fact.job_id] = _Job(JobView(fact.job_id))
        change = job.view.add(fact)
        if change & Change.FLOWS:
            job.weights = None
        stalled = job.verdict is not None and job.verdict.state == JobState.STALLED
        if change & Change.EVIDENCE or (change & Change.FLOWS and stalled):
            return self.reevaluate([fact.job_id])
        if job.verdict is None:
            job.verdict = self._answer(job, None)
            return [job.verdict]
        return []

    def reevaluate(self, job_ids: Iterable[str] | None = None) -> list[Verdict]:
        """Re-judge jobs (default: every stalled one) and return the verdicts that changed.

        Streaming workers call this on a timer, since the link anomalies they judge against
        arrive through a replicated table rather than through `observe`.
        """
        if job_ids is None:
            job_ids = [
                j
                for j, job in self._jobs.items()
                if job.verdict is not None and job.verdict.state == JobState.STALLED
            ]
        ids = sorted(job_ids)
        out = []
        for job_id in ids:
            job = self._jobs.get(job_id)
            if job is None:
                continue
            verdict = self._evaluate(job)
            if verdict != job.verdict:
                job.verdict = verdict
                out.append(verdict)
        return out

    # -- evaluation -------------------------------------------------------------------------

    def _job_weights(self, job: _Job) -> LinkWeights:
        if job.weights is None:
            flows = job.view.flows(self.fabric)
            if flows:
                weights = union_weights(self.paths.flow_links(a, b) for a, b in sorted(flows))
            else:
                # No channel lines: the job surely uses its hosts' NIC cables, nothing more is
                # known, so only those can be candidates.
                weights = {
                    lid: 1.0
                    for host in sorted(job.view.hosts)
                    for nic in self.fabric.host_nics.get(host, ())
                    if (lid := self.fabric.link_at.get(Endpoint(host, nic))) is not None
                }
            for lid in weights:
                self._jobs_on_link.setdefault(lid, set()).add(job.view.job_id)
            job.weights = weights
        return job.weights

    def _answer(
        self, job: _Job, upto_ns: int | None, corroborated: dict[str, int] | None = None
    ) -> Verdict:
        """The verdict from the evidence with event time <= upto_ns (all when None).

        `corroborated` is `_corroborated(job.view)` when the caller already has it: the
        decided_at search asks for several cut-off times over the same evidence.
        """
        view = job.view
        stalled_at = stall_time(view, upto_ns)
        if stalled_at is None:
            return build_verdict(view, Observations({}, {}, {}), self.fabric, self.window, None)
        weights = self._job_weights(job)
        lo = stalled_at - int(self.window.lookback_s * NS)
        hi = stalled_at + int(self.window.lookahead_s * NS)
        if upto_ns is not None:
            hi = min(hi, upto_ns)
        events = {lid: hits for lid in weights if (hits := self.history.between(lid, lo, hi))}
        if corroborated is None:
            corroborated = self._corroborated(view)
        seen = {lid: t for lid, t in corroborated.items() if upto_ns is None or t <= upto_ns}
        obs = Observations(weights, events, seen)
        return build_verdict(view, obs, self.fabric, self.window, stalled_at, upto_ns)

    def _evaluate(self, job: _Job) -> Verdict:
        self.stats.evaluations += 1
        corroborated = self._corroborated(job.view)
        final = self._answer(job, None, corroborated)
        if final.state != JobState.STALLED:
            return final
        return replace(final, decided_at_ns=self._decided_at(job, final, corroborated))

    def _decided_at(self, job: _Job, final: Verdict, corroborated: dict[str, int]) -> int:
        """The earliest evidence time from which the answer has been `final`'s.

        Checked at the times evidence arrived: each hang fact, each anomaly on the two leading
        candidates, each NCCL error that corroborates one of them.
        """
        times = _turning_points(job.view)
        for cand in final.candidates[:2]:
            times.update(e.ts_ns for e in cand.evidence)
        times.discard(0)
        decided = max(times)
        for t in sorted(times, reverse=True):
            answer = self._answer(job, t, corroborated)
            if (answer.state, answer.cause_kind, answer.cause_link, answer.cause_node) != (
                final.state,
                final.cause_kind,
                final.cause_link,
                final.cause_node,
            ):
                break
            decided = t
        return decided

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

    # -- output and state -------------------------------------------------------------------

    def verdicts(self) -> list[Verdict]:
        """The current verdict of every job seen so far, by job id."""
        out = []
        for job_id in sorted(self._jobs):
            job = self._jobs[job_id]
            if job.verdict is None or job.verdict.state != JobState.STALLED:
                job.verdict = self._answer(job, None)
            out.append(job.verdict)
        return out

    def job_links(self, job_id: str) -> LinkWeights:
        """The links a job may use, with crossing probabilities (empty for an unknown job)."""
        job = self._jobs.get(job_id)
        return {} if job is None else dict(self._job_weights(job))

    def job_view(self, job_id: str) -> JobView | None:
        job = self._jobs.get(job_id)
        return None if job is None else job.view

    def adopt(self, view: JobView) -> Verdict:
        """Take over a job's view restored from a snapshot (a worker resuming a partition) and
        return its verdict. The caller publishes it: whoever held the job before may have
        published an older one, judged before anomalies this worker already holds."""
        job = self._jobs[view.job_id] = _Job(view)
        job.verdict = self._evaluate(job)
        return job.verdict

    def job_ids(self) -> list[str]:
        """The jobs this correlator holds, by id."""
        return sorted(self._jobs)

    def drop(self, job_id: str) -> None:
        """Forget a job (its partition moved to another worker)."""
        self._jobs.pop(job_id, None)


def _turning_points(view: JobView) -> set[int]:
    """Times at which the job's hang evidence could have changed an answer: when the stall
    moved earlier, when a transport error named a new peer, and every Xid."""
    points: set[int] = {x.ts_ns for x in view.xids}
    floor = 2**63
    hang = [(t.ts_ns, t.started_ns) for t in view.timeouts]
    hang += [(e.ts_ns, e.ts_ns) for e in view.net_errors]
    hang += [(r.ts_ns, r.ts_ns) for r in view.ras]
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
