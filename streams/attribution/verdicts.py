"""Turning a job's view and the link anomalies around its stall into a ranked verdict.

Pure: everything it needs is passed in. See scoring.py for the weights and the README's
attribution page for the method in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from railtrace.streams.attribution import evidence as as_evidence
from railtrace.streams.attribution.cost import job_gpus, watchdog_of
from railtrace.streams.attribution.history import order
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.attribution.scoring import calibrated, combine, confidence, path_factor
from railtrace.streams.attribution.watchdog import ranks_behind, stall_of
from railtrace.streams.records import (
    Candidate,
    CauseKind,
    CollectiveTimeout,
    Diagnosis,
    Evidence,
    JobState,
    LinkEvent,
    LinkEventKind,
    NetError,
    RasReport,
    Verdict,
    WatchdogState,
    XidEvent,
)
from railtrace.topology.attrs import Role
from railtrace.topology.fabric import Fabric

NS = 1_000_000_000
#: Anomalies that a link shows because of trouble elsewhere (see `_link_candidate`).
CONSEQUENCES = frozenset({LinkEventKind.TRAFFIC_DROP, LinkEventKind.PFC_PAUSING})
#: Anomalies that take capacity from a link, so that its traffic falls with them.
CAPACITY_LOSSES = frozenset({LinkEventKind.DOWN, LinkEventKind.FLAP, LinkEventKind.SPEED_DOWN})


@dataclass(frozen=True, slots=True)
class Observations:
    """What the correlator hands over: the job's links, the anomalies on them in the window,
    and the links that NCCL's own error messages point at."""

    weights: dict[str, float]
    events: dict[str, list[LinkEvent]]
    #: link id -> event time of the first NCCL transport error naming a peer across it
    corroborated: dict[str, int]
    #: link id -> (time, why) for links whose PFC storm was passed on from elsewhere
    pfc_victims: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: link id -> (time, why) for links where a PFC storm seen on others started
    pfc_sources: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: The weights are the placement's mesh, not flows the job's channels showed.
    paths_inferred: bool = False
    #: For a slowdown, the earliest time it may have begun: anomalies from then to the
    #: trouble's time count as at it (None: the trouble began at its time).
    onset_from_ns: int | None = None


def _onset(event_ns: int, stalled_at: int, onset_from_ns: int | None) -> int:
    """The time of the trouble an anomaly at `event_ns` is measured from: itself when it lies
    in the span the trouble may have begun in, else that span's nearer end."""
    if onset_from_ns is None:
        return stalled_at
    return min(max(event_ns, onset_from_ns), stalled_at)


def _drop_slack_ns(profile: AttributionProfile) -> int:
    return int(profile.judging.drop_slack_s * NS)


def _seen(ts_ns: int, upto_ns: int | None) -> bool:
    return ts_ns > 0 and (upto_ns is None or ts_ns <= upto_ns)


def first_hung_collective(view: JobView, upto_ns: int | None = None) -> int | None:
    """When the first collective that never finished started, from the watchdog lines seen by
    `upto_ns`. Every collective before it finished: the job was making progress until then."""
    return min(
        (t.started_ns for t in view.timeouts if t.started_ns > 0 and _seen(t.ts_ns, upto_ns)),
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
    times += [e.ts_ns for e in view.net_errors if _seen(e.ts_ns, upto_ns)]
    times += [r.ts_ns for r in view.ras if r.trouble and _seen(r.ts_ns, upto_ns)]
    times += [stall_of(w) for w in view.watchdogs if _seen(w.ts_ns, upto_ns)]
    times += [
        x.ts_ns
        for x in view.xids
        if _seen(x.ts_ns, upto_ns)
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


def _carried(events: list[LinkEvent], stalled_at: int, slow: bool, slack_ns: int) -> bool:
    """Whether the link's traffic fell with the job's trouble, so the job's flow was on it.

    A stalled job's traffic stops on every link it used. A slowed job's never stops, so a
    collapse on a link that kept its capacity is some other job's traffic stopping (two faults
    at once): for a slowdown only a link that lost capacity (down, flapping, a lower speed)
    shows by its drop that the job's flow was on it.
    """
    dropped = any(
        e.kind == LinkEventKind.TRAFFIC_DROP and e.ts_ns >= stalled_at - slack_ns for e in events
    )
    return dropped and (not slow or any(e.kind in CAPACITY_LOSSES for e in events))


def _link_candidate(
    lid: str,
    events: list[LinkEvent],
    obs: Observations,
    fabric: Fabric,
    profile: AttributionProfile,
    stalled_at: int,
    traffic_seen: bool,
    slow: bool = False,
) -> Candidate | None:
    """`traffic_seen`: some link of the job lost its traffic when the job stopped, so the
    telemetry reports rates, and a member that lost none was not carrying the job. `slow`:
    the candidate is to explain a slowdown, not a stall."""
    victim = obs.pfc_victims.get(lid)
    rules, window = profile.scoring, profile.window
    scored = [
        (
            rules.kind(e.kind, e.value, slow)
            * window.factor(e.ts_ns, _onset(e.ts_ns, stalled_at, obs.onset_from_ns), e.span_s)
            * (rules.pfc_victim_factor if victim and e.kind == LinkEventKind.PFC_STORM else 1.0),
            e,
        )
        for e in events
    ]
    scored = [(s, e) for s, e in scored if s > 0]
    if not scored:
        return None
    crossing = obs.weights.get(lid, 0.0)
    # Read from all its events: a traffic drop scores nothing for a slowed job, but still
    # shows which member carried it.
    carried = _carried(events, stalled_at, slow, _drop_slack_ns(profile))

    # Consequences of trouble elsewhere (traffic that stopped with the job, pauses sent or
    # passed on) are counted once, however many ends and directions report them: they show
    # the link was caught up in the stall, and cannot add up to a blame.
    def consequence(e: LinkEvent) -> bool:
        return e.kind in CONSEQUENCES or (victim is not None and e.kind == LinkEventKind.PFC_STORM)

    knock_on = [s for s, e in scored if consequence(e)]
    # Each kind of anomaly is one observation, at its strongest: the same fault seen at both
    # ends, on several counters or again after a quiet minute is not more evidence of it, and
    # dozens of faint repeats must not add up to a blame.
    strongest: dict[LinkEventKind, float] = {}
    for s, e in scored:
        if not consequence(e):
            strongest[e.kind] = max(s, strongest.get(e.kind, 0.0))
    score = combine([*strongest.values(), max(knock_on, default=0.0)])
    if crossing > 0 and carried:
        crossing = 1.0  # its traffic stopped with the job: the job's flow was on it
    elif crossing < 1.0 and traffic_seen and lid not in obs.corroborated:
        # A possible member that lost no traffic with the job. Not when an NCCL error named a
        # pair whose path it is on: the pair's traffic was failing, and on a link shared with
        # other jobs the job's own drop does not show.
        score *= rules.idle_member_factor
    score *= path_factor(crossing)
    evidence = [
        as_evidence.link_event(e, lid)
        for _, e in sorted(scored, key=lambda se: (-se[0], order(se[1])))[:4]
    ]
    if victim is not None:
        evidence.append(as_evidence.pfc_victim(victim[0], lid, victim[1]))
    if (source := obs.pfc_sources.get(lid)) is not None:
        score = min(1.0, score * rules.pfc_source_boost)
        evidence.append(as_evidence.pfc_source(source[0], lid, source[1]))
    if lid in obs.corroborated:
        score = min(1.0, score * rules.corroboration_boost)
        evidence.append(
            Evidence(
                stalled_at,
                "nccl",
                "peer-error",
                lid,
                "an NCCL transport error on the wire's side names the pair (or the NIC) "
                "whose traffic crosses this link",
            )
        )
    if obs.paths_inferred:  # last, so no boost's cap can undo it
        score *= rules.inferred_paths_factor
    return Candidate(
        CauseKind.LINK, round(score, 4), link=fabric.links[lid], evidence=tuple(evidence)
    )


def _node_candidates(
    view: JobView, profile: AttributionProfile, stalled_at: int, upto_ns: int | None
) -> list[Candidate]:
    """One candidate per host with Xids, scored by its faults: each fault (an Xid and the Xids
    that say they were caused by it) once, at its strongest, so the consequences of one NVLink
    failure on every GPU of the host are not several faults."""
    by_host: dict[str, tuple[dict[int, float], list[Evidence]]] = {}
    for x in sorted(view.xids, key=lambda x: (x.ts_ns, x.host, x.xid)):
        # An Xid whose host neither its line nor its file's name gave still dates the stall,
        # but names no node: a node verdict must never carry a guess (or an empty name).
        if not x.host or not _seen(x.ts_ns, upto_ns):
            continue
        fault = fault_of(x)
        s = profile.scoring.xid(fault) * profile.window.factor(x.ts_ns, stalled_at)
        if s > 0:
            faults, shown = by_host.setdefault(x.host, ({}, []))
            faults[fault] = max(s, faults.get(fault, 0.0))
            shown.append(as_evidence.xid(x))
    return [
        Candidate(
            CauseKind.NODE,
            round(combine(list(faults.values())), 4),
            node=host,
            evidence=tuple(shown[:4]),
        )
        for host, (faults, shown) in sorted(by_host.items())
    ]


def _hang_evidence(view: JobView, upto_ns: int | None, fabric: Fabric) -> list[Evidence]:
    def by_origin(
        f: CollectiveTimeout | NetError | RasReport | WatchdogState,
    ) -> tuple[int, str, int]:
        return (f.ts_ns, f.origin.source, f.origin.line_no)

    timeouts = sorted((t for t in view.timeouts if _seen(t.ts_ns, upto_ns)), key=by_origin)
    errors = sorted((e for e in view.net_errors if _seen(e.ts_ns, upto_ns)), key=by_origin)
    ras = sorted((r for r in view.ras if r.trouble and _seen(r.ts_ns, upto_ns)), key=by_origin)
    said = [w for w in view.watchdogs if _seen(w.ts_ns, upto_ns)]
    # The watchdog's own aborts; its progress lines are summed up by who was behind.
    aborts = sorted((w for w in said if w.kind in ("heartbeat", "teardown")), key=by_origin)
    return (
        [as_evidence.timeout(t) for t in timeouts[:3]]
        + [
            as_evidence.ranks_behind(b, _rank_hosts(view, b.ranks, said))
            for b in ranks_behind(said)
        ]
        + [as_evidence.net_error(e, fabric) for e in errors[:3]]
        + [as_evidence.ras(r) for r in ras[:2]]
        + [as_evidence.watchdog(w) for w in aborts[:1]]
    )


def _rank_hosts(view: JobView, ranks: tuple[int, ...], said: list[WatchdogState]) -> dict[int, str]:
    """Where each rank runs: the host its own watchdog line came from, else the host NCCL
    placed that global rank on."""
    hosts = {w.rank: w.host for w in said if w.rank in ranks and w.host}
    for r in ranks:
        if r not in hosts and (h := view.world_rank_host(r)) is not None:
            hosts[r] = h
    return {r: h for r, h in hosts.items() if r is not None}


def diagnose(
    best: Candidate,
    obs: Observations,
    view: JobView,
    fabric: Fabric,
    profile: AttributionProfile,
    stalled_at: int,
    upto_ns: int | None,
) -> tuple[Diagnosis | None, Evidence | None]:
    """Which side of the culprit failed, from its evidence and the host's kernel.

    A switch sees its port go down whichever end failed, so only the host can say the NIC
    itself died (its driver's health poller or a fatal error, around the stall). Otherwise the
    culprit's own anomalies tell: receive power that fell is a dying optic, pauses spreading
    from it a device that stopped draining, down or flapping the switch side of the link,
    errors alone a link that corrupts frames.
    """
    if best.kind == CauseKind.NODE:
        return Diagnosis.GPU, None
    if best.link is None:
        return None, None
    w = profile.window
    lo = stalled_at - int(w.lookback_s * 1e9)
    hi = stalled_at + int(w.lookahead_s * 1e9)
    hosts = {e.device for e in (best.link.a, best.link.b) if fabric.role(e.device) == Role.HOST}
    failed = sorted(
        (
            n
            for n in view.nic_events
            if n.host in hosts
            and n.state == "failed"
            and lo <= n.ts_ns <= hi
            and _seen(n.ts_ns, upto_ns)
        ),
        key=lambda n: (n.ts_ns, n.origin.source, n.origin.line_no),
    )
    if failed:
        return Diagnosis.HOST_NIC, as_evidence.nic(failed[0])
    lid = best.link.link_id
    events = obs.events.get(lid, [])
    kinds = {e.kind for e in events}
    # A receiver goes dark once its link is down, whichever end failed: only receive power
    # that fell before the link went down says the optic was dying.
    went_down = min((e.ts_ns for e in events if e.kind == LinkEventKind.DOWN), default=None)
    if any(
        e.kind == LinkEventKind.RX_POWER_LOW and (went_down is None or e.ts_ns < went_down)
        for e in events
    ):
        return Diagnosis.OPTIC, None
    if lid in obs.pfc_sources or (LinkEventKind.PFC_STORM in kinds and lid not in obs.pfc_victims):
        return Diagnosis.PFC_SOURCE, None
    if LinkEventKind.SPEED_DOWN in kinds:
        return Diagnosis.LINK_SPEED, None
    if kinds & {LinkEventKind.DOWN, LinkEventKind.FLAP}:
        return Diagnosis.SWITCH_PORT, None
    if kinds & {LinkEventKind.ERROR_BURST, LinkEventKind.FEC_UNCORRECTABLE}:
        return Diagnosis.LINK_ERRORS, None
    return None, None


def healthy_verdict(view: JobView) -> Verdict:
    """A job with no hang evidence, no slowdown and no stop that a fault explains: healthy
    once its own lines said where it runs or its scheduler did and its lines came; a job the
    scheduler placed whose lines never came is unknown (nothing says how it is doing)."""
    ranks, hosts = view.ranks, len(view.hosts)
    state = JobState.HEALTHY if view.heard and (ranks or hosts) else JobState.UNKNOWN
    return Verdict(
        view.job_id, state, None, None, CauseKind.UNKNOWN, None, None, 0.0, ranks=ranks, hosts=hosts
    )


def build_verdict(
    view: JobView,
    obs: Observations,
    fabric: Fabric,
    profile: AttributionProfile,
    stalled_at: int,
    upto_ns: int | None = None,
    state: JobState = JobState.STALLED,
    pace_evidence: tuple[Evidence, ...] = (),
) -> Verdict:
    """The verdict for one job in trouble since `stalled_at` (stalled, or slow when `state` is
    SLOW), from the evidence seen by `upto_ns` (all of it when None).

    `pace_evidence` is what the step reports say (stopped, slowed); it is shown with the hang
    evidence. `decided_at_ns` is left at `stalled_at`; the correlator sets it to the time the
    answer was first reached.
    """
    ranks, hosts = view.ranks, len(view.hosts)
    slow = state == JobState.SLOW
    judging = profile.judging
    costed = _costed(view, profile, stalled_at, upto_ns) if state == JobState.STALLED else {}
    slack = _drop_slack_ns(profile)
    traffic_seen = any(_carried(e, stalled_at, slow, slack) for e in obs.events.values())
    candidates = [
        c
        for lid in sorted(obs.events)
        if (
            c := _link_candidate(
                lid,
                obs.events[lid],
                obs,
                fabric,
                profile,
                stalled_at,
                traffic_seen,
                slow,
            )
        )
    ]
    candidates += _node_candidates(view, profile, stalled_at, upto_ns)
    # Equal scores (both capped at 1, say) are ordered by NCCL's own word: a link an NCCL
    # error names the peer across comes first.
    candidates.sort(
        key=lambda c: (
            -c.score,
            not (c.link is not None and c.link.link_id in obs.corroborated),
            c.kind,
            c.link.link_id if c.link else c.node or "",
        )
    )
    best = candidates[0] if candidates else None
    runner_up = candidates[1].score if len(candidates) > 1 else 0.0
    evidence = [*pace_evidence, *_hang_evidence(view, upto_ns, fabric)]
    sure = 0.0 if best is None else confidence(best.score, runner_up)
    if best is None or best.score < judging.min_blame_score or sure < judging.min_confidence:
        return Verdict(
            view.job_id,
            state,
            stalled_at,
            stalled_at,
            CauseKind.UNKNOWN,
            None,
            None,
            0.0,
            tuple(candidates[: judging.max_candidates]),
            tuple(evidence[: judging.max_evidence]),
            ranks,
            hosts,
            **costed,
        )
    diagnosis, host_side = diagnose(best, obs, view, fabric, profile, stalled_at, upto_ns)
    if host_side is not None:
        evidence.append(host_side)
    if best.link is not None and (note := fabric.as_built.get(best.link.link_id)):
        # The engineer is sent to this cable: say it is not where the plan puts it.
        evidence.append(Evidence(stalled_at, "topology", "miswired", best.link.link_id, note))
    evidence = sorted(
        [*best.evidence, *evidence], key=lambda e: (e.ts_ns, e.source, e.kind, e.subject, e.detail)
    )[: judging.max_evidence]
    close = best.score * (1.0 - judging.tie_margin)
    tied = [_named(c) for c in candidates if c.score >= close]
    return Verdict(
        view.job_id,
        state,
        stalled_at,
        stalled_at,
        best.kind,
        best.link,
        best.node,
        calibrated(judging.calibration, sure),
        tuple(candidates[: judging.max_candidates]),
        tuple(evidence),
        ranks,
        hosts,
        str(diagnosis) if diagnosis else "",
        tuple(tied) if len(tied) > 1 else (),
        **costed,
    )


def _costed(
    view: JobView, profile: AttributionProfile, stalled_at: int, upto_ns: int | None
) -> dict[str, Any]:
    """A stalled job's GPUs and watchdog time, the verdict's part of what the stall cost."""
    watchdog = watchdog_of(view, stalled_at, profile.cost, upto_ns)
    return {
        "gpus": job_gpus(view, profile.cost),
        "watchdog_at_ns": watchdog.at_ns,
        "watchdog_seen": watchdog.seen,
    }


def _named(c: Candidate) -> str:
    return c.link.link_id if c.link is not None else c.node or ""
