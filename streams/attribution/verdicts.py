"""Turning a job's view and the link anomalies around its stall into a ranked verdict.

Pure: everything it needs is passed in. The candidates are scored in `candidates`, the failed
side of the culprit told by `diagnosis`, the stall dated by `stall`; see scoring.py for the
weights and the README's attribution page for the method in words.
"""

from __future__ import annotations

import heapq
from typing import Any

from railtrace.streams.attribution import evidence as as_evidence
from railtrace.streams.attribution.candidates import (
    LinkScore,
    Observations,
    carried_job,
    drop_slack_ns,
    link_score,
    named,
    node_candidates,
    rank_key,
)
from railtrace.streams.attribution.cost import job_gpus, watchdog_of
from railtrace.streams.attribution.diagnosis import diagnose
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.streams.attribution.quiet import ceiling, ranked_head
from railtrace.streams.attribution.scoring import calibrated, confidence
from railtrace.streams.attribution.stall import seen
from railtrace.streams.attribution.watchdog import ranks_behind
from railtrace.streams.records import (
    Candidate,
    CauseKind,
    CollectiveTimeout,
    Evidence,
    JobState,
    LinkEvent,
    LinkEventKind,
    NetError,
    RasReport,
    Verdict,
    WatchdogState,
)
from railtrace.topology.fabric import Fabric


def _hang_evidence(view: JobView, upto_ns: int | None, fabric: Fabric) -> list[Evidence]:
    def by_origin(
        f: CollectiveTimeout | NetError | RasReport | WatchdogState,
    ) -> tuple[int, str, int]:
        return (f.ts_ns, f.origin.source, f.origin.line_no)

    # The first few of each in order: a 16k-GPU job's every rank prints its timeout.
    timeouts = heapq.nsmallest(
        3, (t for t in view.timeouts if seen(t.ts_ns, upto_ns)), key=by_origin
    )
    errors = heapq.nsmallest(
        3, (e for e in view.net_errors if seen(e.ts_ns, upto_ns)), key=by_origin
    )
    ras = heapq.nsmallest(
        2, (r for r in view.ras if r.trouble and seen(r.ts_ns, upto_ns)), key=by_origin
    )
    said = [w for w in view.watchdogs if seen(w.ts_ns, upto_ns)]
    # The watchdog's own aborts; its progress lines are summed up by who was behind.
    aborts = heapq.nsmallest(
        1, (w for w in said if w.kind in ("heartbeat", "teardown")), key=by_origin
    )
    return (
        [as_evidence.timeout(t) for t in timeouts]
        + [
            as_evidence.ranks_behind(b, _rank_hosts(view, b.ranks, said))
            for b in ranks_behind(said)
        ]
        + [as_evidence.net_error(e, fabric) for e in errors]
        + [as_evidence.ras(r) for r in ras]
        + [as_evidence.watchdog(w) for w in aborts]
    )


def _rank_hosts(view: JobView, ranks: tuple[int, ...], said: list[WatchdogState]) -> dict[int, str]:
    """Where each rank runs: the host its own watchdog line came from, else the host NCCL
    placed that global rank on."""
    hosts = {w.rank: w.host for w in said if w.rank in ranks and w.host}
    for r in ranks:
        if r not in hosts and (h := view.world_rank_host(r)) is not None:
            hosts[r] = h
    return {r: h for r, h in hosts.items() if r is not None}


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
    slack = drop_slack_ns(profile)
    # Only a stall stops the job's traffic on every link it used, so that a member that kept
    # its traffic was idle; a slowed job's traffic goes on, on whichever members carry it.
    quiet = obs.quiet
    traffic_seen = not slow and (
        any(carried_job(e, stalled_at, slow, slack) for e in obs.events.values())
        or (
            quiet is not None
            and any(
                carried_job(quiet.events_of(lid), stalled_at, slow, slack) for lid in quiet.lids()
            )
        )
    )

    def score(lid: str, events: list[LinkEvent]) -> LinkScore | None:
        return link_score(lid, events, obs, profile, stalled_at, traffic_seen, slow)

    known: list[LinkScore | Candidate] = [
        scored for lid in obs.events if (scored := score(lid, obs.events[lid]))
    ]
    known += node_candidates(view, profile, stalled_at, upto_ns)
    known.sort(key=rank_key)

    def ceil(kinds: frozenset[LinkEventKind]) -> float:
        return ceiling(kinds, profile, slow, obs.paths_inferred)

    # The first candidates (and the runner-up) in full; the quiet links, only as far as these.
    # Equal scores (both capped at 1, say) are ordered by NCCL's own word: a link an NCCL
    # error names the peer across comes first.
    head = max(judging.max_candidates, 2)
    ranked = ranked_head(known, quiet, score, ceil, head)
    # Only the candidates the verdict lists have their evidence written out.
    candidates = [
        r.candidate(fabric, stalled_at) if isinstance(r, LinkScore) else r
        for r in ranked[: judging.max_candidates]
    ]
    best = candidates[0] if candidates else None
    runner_up = ranked[1].score if len(ranked) > 1 else 0.0
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
            tuple(candidates),
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
    if quiet is not None:  # every quiet link that may be in the tie, read
        ranked = ranked_head(known, quiet, score, ceil, head, floor=close)
    tied = [named(r) for r in ranked if r.score >= close]
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
