"""Jobs and their verdicts: the list to find a job, the verdict to see which link stalled it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from railtrace.api.deps import JobId, Limit, Offset, StateFilter, StoreDep
from railtrace.api.joblinks import JobLinks
from railtrace.api.schemas import (
    EvidenceOut,
    JobListOut,
    JobSummaryOut,
    NextStepOut,
    NextStepsOut,
    TimelineOut,
    VerdictOut,
)
from railtrace.store.rows import EVENT_FACT_KINDS
from railtrace.streams.attribution import AttributionProfile, evidence
from railtrace.streams.attribution.nextstep import next_steps
from railtrace.topology.fabric import Fabric

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.get("")
def list_jobs(
    store: StoreDep, state: StateFilter = None, limit: Limit = 100, offset: Offset = 0
) -> JobListOut:
    """Jobs with a current verdict, most recently updated first."""
    jobs = store.list_jobs(state=state, limit=limit, offset=offset)
    return JobListOut(
        jobs=[JobSummaryOut.from_record(j) for j in jobs], state=state, limit=limit, offset=offset
    )


@router.get("/{job_id}/verdict", responses={404: {"description": "No such job in this store."}})
def get_verdict(store: StoreDep, job_id: JobId) -> VerdictOut:
    """The current verdict of one job: state, cause, ranked candidates and the evidence."""
    verdict = store.get_verdict(job_id)
    if verdict is None:
        raise HTTPException(
            status_code=404,
            detail=f"no job '{job_id}' in this store; GET /v1/jobs lists the known jobs",
        )
    return VerdictOut.from_record(verdict)


@router.get("/{job_id}/next-steps", responses={404: {"description": "No such job in this store."}})
def get_next_steps(request: Request, store: StoreDep, job_id: JobId) -> NextStepsOut:
    """What to do next about the job's verdict (drain, exclude, shut a port), as commands to
    copy; railtrace never runs them. A switch link's step names the other jobs crossing it."""
    verdict = store.get_verdict(job_id)
    if verdict is None:
        raise HTTPException(
            status_code=404,
            detail=f"no job '{job_id}' in this store; GET /v1/jobs lists the known jobs",
        )
    fabric: Fabric | None = request.app.state.fabric
    crossing: list[str] = []
    job_links: JobLinks | None = request.app.state.job_links
    if job_links is not None and verdict.cause_link is not None:
        until = verdict.decided_at_ns or verdict.stalled_at_ns or 0
        found = job_links.crossing(store, verdict.cause_link.link_id, until)
        crossing = [c.job.job_id for c in sorted(found, key=lambda c: -c.weight)]
    steps = next_steps(verdict, None if fabric is None else fabric.role, crossing)
    return NextStepsOut(
        job_id=job_id,
        steps=[NextStepOut(action=s.action, what=s.what, command=s.command) for s in steps],
        topology=fabric is not None,
    )


@router.get("/{job_id}/timeline", responses={404: {"description": "Nothing stored for this job."}})
def get_timeline(
    request: Request, store: StoreDep, job_id: JobId, limit: Limit = 100, offset: Offset = 0
) -> TimelineOut:
    """Every event that led to the job's verdict, in order: what its logs reported and what
    happened on the links its verdict weighed, from before the stall until the verdict."""
    verdict = store.get_verdict(job_id)
    facts = store.job_facts_of(job_id, EVENT_FACT_KINDS)
    fabric = request.app.state.fabric
    lines = [e for f in facts if (e := evidence.of_fact(f, fabric)) is not None]
    if verdict is None and not lines:
        raise HTTPException(
            status_code=404,
            detail=f"no job '{job_id}' in this store; GET /v1/jobs lists the known jobs",
        )
    if verdict is not None:
        links = {c.link.link_id for c in verdict.candidates if c.link is not None}
        if verdict.cause_link is not None:
            links.add(verdict.cause_link.link_id)
        marks = (verdict.stalled_at_ns, verdict.decided_at_ns)
        times = [e.ts_ns for e in (*lines, *verdict.evidence)] + [t for t in marks if t]
        if times:
            # From as far before the stall as the attribution looks, so the timeline shows at
            # least what the verdict weighed.
            profile: AttributionProfile = request.app.state.profile
            lookback_ns = int(profile.window.lookback_s * 1e9)
            lines += [
                evidence.link_event(e, lid)
                for e, lid in store.link_events_between(
                    sorted(links), min(times) - lookback_ns, max(times)
                )
            ]
    lines.sort(key=lambda e: (e.ts_ns, e.source, e.kind, e.subject))
    return TimelineOut(
        job_id=job_id,
        state=None if verdict is None else verdict.state,
        events=[EvidenceOut.from_record(e) for e in lines[offset : offset + limit]],
        total=len(lines),
        limit=limit,
        offset=offset,
    )
