"""Jobs and their verdicts: the list to find a job, the verdict to see which link stalled it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from railtrace.api.deps import JobId, Limit, Offset, StateFilter, StoreDep
from railtrace.api.schemas import JobListOut, JobSummaryOut, VerdictOut

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
