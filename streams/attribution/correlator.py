"""The incremental attribution: link events and job facts in, verdicts out, in event time.

`Correlator.observe` takes one record at a time and returns the verdicts that changed because
of it (`fold` takes one without judging, `judge_pending` judges what was folded). A verdict is
a pure function of the evidence observed so far, including `decided_at_ns`: the earliest
evidence time from which the current answer has held. So the embedded replay (one process,
strict time order) and the streaming workers (records arriving per partition, link anomalies
from a replicated table, re-evaluation on a timer) reach the same verdicts.

The correlator keeps the state (each job's view, its cached paths, event time, the jobs due
for a look) and the order of judging; what it judges with are free functions over that state:
`job_paths` (a job's links), `timing` (survival and decided_at), `pfc` (spreading pauses),
`stall` (when a job stopped) and `verdicts` (the ranked answer).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from railtrace.streams.attribution import evidence as as_evidence
from railtrace.streams.attribution.candidates import Observations
from railtrace.streams.attribution.corroboration import corroborated
from railtrace.streams.attribution.history import LinkEventSource, LinkHistory
from railtrace.streams.attribution.job_paths import job_paths
from railtrace.streams.attribution.jobs import Change, JobView
from railtrace.streams.attribution.pace import Pace
from railtrace.streams.attribution.pfc import pfc_spread
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.attribution.quiet import ByName, QuietLinks, quiet_kinds
from railtrace.streams.attribution.stall import stall_time
from railtrace.streams.attribution.timing import decided_at, survived_until
from railtrace.streams.attribution.verdicts import build_verdict, healthy_verdict
from railtrace.streams.records import (
    CauseKind,
    Evidence,
    JobFact,
    JobState,
    LinkEvent,
    LinkEventKind,
    Progress,
    Verdict,
)
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import LinkWeights, PathFinder

#: Verdicts that are re-judged as link anomalies arrive.
TROUBLED = (JobState.STALLED, JobState.SLOW)
#: Anomalies that a job visibly survives when it keeps reporting steps after them.
STATE_CHANGES = frozenset({LinkEventKind.DOWN, LinkEventKind.FLAP, LinkEventKind.UP})
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
    #: `weights` came from the hosts alone (no channel flows): see INFERRED_PATHS_FACTOR.
    inferred: bool = False
    verdict: Verdict | None = None
    # (history version, event time) the verdict was judged at: a timer's re-judging is
    # skipped while neither moved, since nothing it reads could have changed.
    judged_at: tuple[int, int] | None = None
    #: The links of `weights` holding events, as of a history version: see `_event_links`.
    event_links: _EventLinks | None = None


@dataclass(frozen=True, slots=True)
class _EventLinks:
    """A job's links holding events, split as a judgement reads them: those with an anomaly
    of their own (read in full) and the quiet ones by the kinds they hold.
    Worked out once per history version and paths: a judgement, and the decided-at search
    behind it, read the same split several times."""

    version: int
    weights: LinkWeights
    loud: tuple[str, ...]
    quiet: tuple[tuple[frozenset[LinkEventKind], ByName], ...]


class Correlator:
    """Per-job views plus a source of link anomalies (its own history, or a shared one)."""

    def __init__(
        self,
        fabric: Fabric,
        profile: AttributionProfile = DEFAULT_PROFILE,
        history: LinkEventSource | None = None,
        paths: PathFinder | None = None,
    ) -> None:
        self.fabric = fabric
        self.paths = paths or PathFinder(fabric)
        self.profile = profile
        self.stats = CorrelatorStats()
        self.local_history = LinkHistory() if history is None else None
        self.history: LinkEventSource = self.local_history or history  # type: ignore[assignment]
        self._jobs: dict[str, _Job] = {}
        self._jobs_on_link: dict[str, set[str]] = {}
        #: Event time: the newest record time seen (or passed to `advance`).
        self.now_ns = 0
        # (time a job's step reports become overdue, job id); stale entries are skipped.
        self._due: list[tuple[int, str]] = []
        #: Jobs that folded records concern, judged by `judge_pending`.
        self._pending: set[str] = set()

    def use_fabric(self, fabric: Fabric) -> None:
        """Judge on `fabric` from now on: the same plan with the cables LLDP found miswired
        replaced by what is really there. Every job's paths are worked out again; a shared
        history is re-filed by its owner, this one's own history here."""
        self.fabric = fabric
        self.paths = PathFinder(fabric)
        self._jobs_on_link = {}
        for job in self._jobs.values():
            job.weights = None
            job.judged_at = None
        if self.local_history is not None:
            self.local_history.rekey(fabric.link_at)

    # -- input ------------------------------------------------------------------------------

    def resolve(self, device: str, interface: str) -> str | None:
        """Link id of a switch interface, or None (counted) when the plan has no such cable."""
        lid = self.fabric.link_at.get(Endpoint(device, interface))
        if lid is None:
            self.stats.unknown_interfaces += 1
            self.stats.unknown_interface_names.add(Endpoint(device, interface))
        return lid

    def observe(self, record: LinkEvent | JobFact) -> list[Verdict]:
        """Take one record and return the verdicts it changed (a job's latest only)."""
        self.fold(record)
        return self.judge_pending()

    def fold(self, record: LinkEvent | JobFact) -> None:
        """Take one record without judging: the jobs it concerns wait for `judge_pending`.

        A streaming batch brings hundreds of one job's facts at once (every rank's watchdog
        line); judging a large stalled job after each would hold the worker's event loop for
        many seconds, and only the batch's last verdict is published. The verdict judged
        after the batch is the one `observe` would have reached after its last record: it
        reads only the evidence and event time, not the order they were judged in."""
        # Event time moves first: the record is judged at its own time, so a step report that
        # ends a silence is not judged as if the silence still held.
        self.now_ns = max(self.now_ns, record.ts_ns)
        if isinstance(record, LinkEvent):
            self._on_link_event(record)
        else:
            self._on_fact(record)
        self._overdue(self.now_ns)

    def judge_pending(self, also: Iterable[str] = ()) -> list[Verdict]:
        """Judge the jobs folded records concern, and the jobs in `also`, once each; returns
        the verdicts that changed."""
        pending, self._pending = self._pending | set(also), set()
        return self.reevaluate(pending)

    def advance(self, now_ns: int) -> list[Verdict]:
        """Move event time on to `now_ns` and re-judge the jobs whose step reports became
        overdue by then: a job that went quiet is news only while time passes, with no record
        of its own to announce it. Streaming workers call this with the newest link event
        time; `observe` does the same with each record's."""
        if now_ns <= self.now_ns:
            return []
        self.now_ns = now_ns
        self._overdue(now_ns)
        return self.judge_pending()

    def _overdue(self, now_ns: int) -> None:
        while self._due and self._due[0][0] <= now_ns:
            _, job_id = heapq.heappop(self._due)
            job = self._jobs.get(job_id)
            at = job.view.pace.overdue_at() if job is not None else None
            if at is not None and at <= now_ns:
                self._pending.add(job_id)

    def _on_link_event(self, event: LinkEvent) -> None:
        self.stats.link_events += 1
        lid = self.resolve(event.device, event.interface)
        if lid is None or self.local_history is None:
            return
        if self.local_history.add(lid, event):
            self._pending.update(self._jobs_on_link.get(lid, ()))

    def _on_fact(self, fact: JobFact) -> None:
        self.stats.facts += 1
        job = self._jobs.get(fact.job_id)
        if job is None:
            view = JobView(fact.job_id, pace=Pace(rules=self.profile.pace))
            job = self._jobs[fact.job_id] = _Job(view)
        change = job.view.add(fact)
        job.judged_at = None  # the timer judges it again, whatever this fact changed
        # Without channel flows, the links are worked out from the hosts: a new one changes them.
        paths_changed = bool(
            change & Change.FLOWS or (change & Change.HOSTS and not job.view.flows(self.fabric))
        )
        if paths_changed:
            job.weights = None
        stalled = job.verdict is not None and job.verdict.state in TROUBLED
        if isinstance(fact, Progress):
            self._schedule(job)
            if stalled:  # a job judged stalled from its silence may have resumed
                change |= Change.EVIDENCE
        # A job's first fact gives it a verdict; later ones re-judge it when they change its
        # evidence (or its paths, once it is in trouble).
        if job.verdict is None or change & Change.EVIDENCE or (paths_changed and stalled):
            self._pending.add(fact.job_id)

    def reevaluate(self, job_ids: Iterable[str] | None = None) -> list[Verdict]:
        """Re-judge jobs (default: every stalled, slow or silent one) and return the verdicts
        that changed.

        Streaming workers call this on a timer, since the link anomalies they judge against
        arrive through a replicated table rather than through `observe`.
        """
        if job_ids is None:
            job_ids = [
                j
                for j, job in self._jobs.items()
                if (job.verdict is not None and job.verdict.state in TROUBLED)
                or job.view.pace.stopped(self.now_ns) is not None
            ]
            unchanged = (self.history.version, self.now_ns)
            job_ids = [j for j in job_ids if self._jobs[j].judged_at != unchanged]
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
            weights, job.inferred = job_paths(job.view, self.fabric, self.paths)
            for lid in weights:
                self._jobs_on_link.setdefault(lid, set()).add(job.view.job_id)
            job.weights = weights
        return job.weights

    def _answer(
        self, job: _Job, upto_ns: int | None, corroborated: dict[str, int] | None = None
    ) -> Verdict:
        """The verdict from the evidence with event time <= upto_ns (all, as of now, when None).

        In order: hang evidence in the logs makes the job stalled; step reports that stopped
        make it stalled only when a fault on its paths explains it (a job also goes quiet to
        write a checkpoint); step reports that slowed make it slow. `corroborated` is
        `_corroborated(job.view)` when the caller already has it: the decided_at search asks
        for several cut-off times over the same evidence.
        """
        view = job.view
        now = self.now_ns if upto_ns is None else upto_ns
        if corroborated is None:
            corroborated = self._corroborated(view)
        stalled_at = stall_time(view, upto_ns, self.profile)
        if stalled_at is not None:
            return self._judge(job, stalled_at, upto_ns, corroborated, JobState.STALLED, ())
        pace = view.pace
        last = pace.stopped(now)
        if last is not None:
            overdue = pace.overdue_at(now) or now
            interval = pace.interval_ns(now) or 0
            note = as_evidence.progress_stopped(last, interval, overdue)
            # Dated by the report that never came, as stall_time dates it once errors arrive.
            missed = last + interval
            verdict = self._judge(job, missed, upto_ns, corroborated, JobState.STALLED, (note,))
            if verdict.cause_kind != CauseKind.UNKNOWN:
                return verdict
        slowed = pace.slow_since(upto_ns)
        if slowed is not None:
            note = as_evidence.slowdown(slowed, pace.peak_ratio, pace.normal)
            return self._judge(job, slowed, upto_ns, corroborated, JobState.SLOW, (note,))
        return healthy_verdict(view)

    def _judge(
        self,
        job: _Job,
        since: int,
        upto_ns: int | None,
        corroborated: dict[str, int],
        state: JobState,
        pace_evidence: tuple[Evidence, ...],
    ) -> Verdict:
        weights = self._job_weights(job)
        window = self.profile.window
        lo = since - int(window.lookback_s * NS)
        hi = since + int(window.lookahead_s * NS)
        if upto_ns is not None:
            hi = min(hi, upto_ns)
        # A job that kept its pace for a full interval after an anomaly began was not slowed
        # by it; a job that kept running after a link changed state was not stopped by that.
        slow = state == JobState.SLOW
        survived = survived_until(job.view, since, upto_ns, self.profile, slow)
        survivable = None if slow else STATE_CHANGES
        # A slowdown is seen only at the report after it began, and the report before that
        # gave the mean of steps some of which may already have been slow: it began somewhere
        # in those two intervals, however long the job's cadence makes them, and an anomaly
        # anywhere in them is at its onset.
        onset_from = survived if slow and job.view.pace.onset_prev_ns is not None else None
        if onset_from is not None:
            lo = min(lo, onset_from)
        # A slowdown is seen at its first slow report: what began after it did not cause it.
        late = since + int(window.slow_lookahead_s * NS) if slow else None
        read: dict[str, list[LinkEvent]] = {}

        def window_events(lid: str) -> list[LinkEvent]:
            hits = read.get(lid)
            if hits is None:
                hits = read[lid] = [
                    e
                    for e in self.history.between(lid, lo, hi)
                    if (
                        e.ts_ns >= survived or (survivable is not None and e.kind not in survivable)
                    )
                    and (late is None or e.ts_ns - int(e.span_s * NS) <= late)
                ]
            return hits

        split = self._event_links(job, weights)
        kinds = self.history.kinds()
        events = {lid: hits for lid in split.loud if (hits := window_events(lid))}
        seen = {lid: t for lid, t in corroborated.items() if upto_ns is None or t <= upto_ns}
        # A quiet link NCCL's error points across is scored with the others: its boost may
        # lift it past any ceiling.
        named = frozenset(
            lid
            for lid in seen
            if lid in weights and lid not in events and quiet_kinds(kinds.get(lid, frozenset()))
        )
        events.update((lid, hits) for lid in sorted(named) if (hits := window_events(lid)))
        victims, sources = pfc_spread(events, lo, hi, self.fabric, self.history)
        quiet = QuietLinks(split.quiet, window_events, named) if split.quiet else None
        obs = Observations(weights, events, seen, victims, sources, job.inferred, onset_from, quiet)
        return build_verdict(
            job.view, obs, self.fabric, self.profile, since, upto_ns, state, pace_evidence
        )

    def _event_links(self, job: _Job, weights: LinkWeights) -> _EventLinks:
        cached = job.event_links
        version = self.history.version
        if cached is not None and cached.version == version and cached.weights is weights:
            return cached
        # Walk the smaller side: a mesh job's paths cross thousands of links while a handful
        # hold events, and a busy fabric may hold events on more links than a small job uses.
        held = self.history.kinds()
        pairs = (
            ((lid, kinds) for lid, kinds in held.items() if lid in weights)
            if len(held) < len(weights)
            else ((lid, held[lid]) for lid in weights if lid in held)
        )
        loud: list[str] = []
        quiet: dict[frozenset[LinkEventKind], list[str]] = {}
        groups: dict[frozenset[LinkEventKind], list[str]] = {}  # by the kinds held
        for lid, kinds in pairs:
            group = groups.get(kinds)
            if group is None:
                group = groups[kinds] = quiet.setdefault(kinds, []) if quiet_kinds(kinds) else loud
            group.append(lid)
        job.event_links = _EventLinks(
            version,
            weights,
            tuple(sorted(loud)),
            tuple((kinds, ByName(quiet[kinds])) for kinds in sorted(quiet, key=sorted)),
        )
        return job.event_links

    def _schedule(self, job: _Job) -> None:
        at = job.view.pace.overdue_at()
        if at is not None:
            heapq.heappush(self._due, (at, job.view.job_id))

    def _evaluate(self, job: _Job) -> Verdict:
        self.stats.evaluations += 1
        job.judged_at = (self.history.version, self.now_ns)
        corroborated = self._corroborated(job.view)
        final = self._answer(job, None, corroborated)
        if final.state not in TROUBLED:
            return final
        at = decided_at(job.view, final, self.now_ns, lambda t: self._answer(job, t, corroborated))
        return replace(final, decided_at_ns=at)

    def _corroborated(self, view: JobView) -> dict[str, int]:
        """Links the job's own transport errors point at (see `corroboration`), with the
        time of the first such error."""
        return corroborated(view.net_errors, view.flows(self.fabric), self.fabric, self.paths)

    # -- output and state -------------------------------------------------------------------

    def verdicts(self) -> list[Verdict]:
        """The current verdict of every job seen so far, by job id."""
        out = []
        for job_id in sorted(self._jobs):
            job = self._jobs[job_id]
            if job.verdict is None or job.verdict.state not in TROUBLED:
                job.verdict = self._evaluate(job)
            out.append(job.verdict)
        return out

    def job_links(self, job_id: str) -> LinkWeights:
        """The links a job may use, with crossing probabilities (empty for an unknown job)."""
        job = self._jobs.get(job_id)
        return {} if job is None else dict(self._job_weights(job))

    def verdict_of(self, job_id: str) -> Verdict | None:
        """The job's latest verdict, None for a job not held (or not judged yet)."""
        job = self._jobs.get(job_id)
        return None if job is None else job.verdict

    def job_view(self, job_id: str) -> JobView | None:
        job = self._jobs.get(job_id)
        return None if job is None else job.view

    def adopt(self, view: JobView) -> Verdict:
        """Take over a job's view restored from a snapshot (a worker resuming a partition) and
        return its verdict. The caller publishes it: whoever held the job before may have
        published an older one, judged before anomalies this worker already holds."""
        job = self._jobs[view.job_id] = _Job(view)
        self.now_ns = max(self.now_ns, view.last_ts_ns or 0)
        self._schedule(job)
        job.verdict = self._evaluate(job)
        return job.verdict

    def job_ids(self) -> list[str]:
        """The jobs this correlator holds, by id."""
        return sorted(self._jobs)

    def drop(self, job_id: str) -> None:
        """Forget a job (its partition moved to another worker)."""
        self._jobs.pop(job_id, None)
