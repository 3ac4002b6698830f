"""Jobs and their verdicts: the list to find a job, the verdict to see which link stalled it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from railtrace.api.deps import JobId, Limit, Offset, StateFilter, StoreDep
from railtrace.api.schemas import EvidenceOut, JobListOut, JobSummaryOut, TimelineOut, VerdictOut
from railtrace.store.rows import EVENT_FACT_KINDS
from railtrace.streams.attribution import AttributionProfile, evidence

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
