"""Liveness and readiness, for process supervisors and load balancers."""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException

from railtrace.api.deps import StoreDep
from railtrace.api.schemas import HealthOut
from railtrace.store import StoreError

log = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> HealthOut:
    """The process is alive; says nothing about the store."""
    return HealthOut(status="ok")


@router.get("/readyz", responses={503: {"description": "The store does not answer."}})
def readyz(store: StoreDep) -> HealthOut:
    """The store answers and has its tables: the API can serve verdicts."""
    try:
        store.ping()
    except StoreError as exc:
        log.warning("not ready", extra={"reason": str(exc)})
        raise HTTPException(status_code=503, detail=f"not ready: {exc}") from exc
    return HealthOut(status="ready")
