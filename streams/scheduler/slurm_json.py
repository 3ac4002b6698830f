"""`squeue --json` and `sacct --json` as the Slurm versions in use print them.

The shape moved with Slurm's data_parser versions, and both shapes are in the field at once:

- 22.05 (openapi v0.0.38): squeue's `job_state` is a string, `start_time` / `end_time` plain
  integers (0 when unset), `nodes` a hostlist string;
- 23.02 and later (data_parser v0.0.39 ... v0.0.42): `job_state` a list of flags, times
  `{"set": bool, "infinite": bool, "number": int}`;
- sacct: `state: {"current": "RUNNING" | ["RUNNING"]}`, `time: {"start": ..., "end": ...}`
  (integers or the same set/number objects).

GPU indexes come from squeue's `gres_detail`, one entry per node of `nodes` in order; when
the counts differ they are not guessed. sacct has no per-node indexes, nor per-node counts:
its `tres.allocated` `gres/gpu` is the job's total over all its nodes (22.05 prints 8 for
`-N 2 --gres=gpu:4`), and how a total of `--gpus=N` is split is not printed, so no host
gets a count from it. A job's `steps` are parts of the job and place nothing of their own.
"""

from __future__ import annotations

from typing import Any

from ..records import JobPlacement, LogOrigin, PlacedHost, in_time_range, valid_job_id
from .common import SLURM_WAITING, PlacementRead, RecordError, slurm_placement
from .gres import gpu_indexes
from .hostlist import HostlistError, expand


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("jobs"), list)


def read(source: str, doc: dict[str, Any], into: PlacementRead) -> None:
    """Add the placement of every job of `doc` (squeue's or sacct's) to `into`; the job's
    1-based position in `jobs` stands for its line."""
    for position, job in enumerate(doc["jobs"], 1):
        into.take(
            source,
            position,
            lambda: _placement(source, position, job),  # noqa: B023 - called at once
            lambda: _brief(job),  # noqa: B023
        )


def _placement(source: str, position: int, job: Any) -> JobPlacement | None:
    if not isinstance(job, dict):
        raise RecordError(f"job {position} is a {type(job).__name__}, not an object")
    job_id = _job_id(job)
    state = _state(job)
    nodes = job.get("nodes")
    if state in SLURM_WAITING or nodes in (None, "", "None assigned", "(null)"):
        return None
    if not isinstance(nodes, str):
        raise RecordError(f"job {job_id}: nodes is not a hostlist string")
    try:
        names = expand(nodes)
    except HostlistError as exc:
        raise RecordError(f"job {job_id}: nodes {exc}") from None
    gpus = _gpus(job_id, job.get("gres_detail"), len(names))
    times = job["time"] if isinstance(job.get("time"), dict) else {}
    start = _time(job_id, "start", job.get("start_time", times.get("start")))
    end = _time(job_id, "end", job.get("end_time", times.get("end")))
    hosts = tuple(PlacedHost(n, g, len(g) if g else None) for n, g in zip(names, gpus, strict=True))
    return slurm_placement(job_id, hosts, state, start, end, LogOrigin(source, position))


def _job_id(job: dict[str, Any]) -> str:
    raw = _number(job.get("job_id"))
    if raw is None:
        raise RecordError("job without a job_id")
    job_id = str(raw)
    if not valid_job_id(job_id):
        raise RecordError(f"job_id {job_id!r} is not a job id")
    return job_id


def _state(job: dict[str, Any]) -> str:
    raw = job.get("job_state")
    if raw is None and isinstance(job.get("state"), dict):
        raw = job["state"].get("current")
    if isinstance(raw, list):  # 23.02+: the base state first, then flags (COMPLETING, ...)
        raw = raw[0] if raw else ""
    if not isinstance(raw, str):
        raise RecordError(f"job {job.get('job_id')!r:.40}: state is not a state name")
    return raw


def _gpus(job_id: str, detail: Any, hosts: int) -> list[tuple[int, ...]]:
    if not isinstance(detail, list) or len(detail) != hosts:
        return [()] * hosts
    out: list[tuple[int, ...]] = []
    for entry in detail:
        indexes = gpu_indexes(entry) if isinstance(entry, str) else None
        if indexes is None:
            raise RecordError(f"job {job_id}: GPU indexes unreadable in {entry!r}")
        out.append(indexes)
    return out


def _number(raw: Any) -> int | None:
    """An integer field in either shape: plain, or `{"set", "infinite", "number"}`."""
    if isinstance(raw, dict):
        if not raw.get("set", False) or raw.get("infinite", False):
            return None
        raw = raw.get("number")
    if isinstance(raw, bool) or not isinstance(raw, int):
        return None
    return raw


def _time(job_id: str, what: str, raw: Any) -> int | None:
    seconds = _number(raw)
    if seconds is None or seconds <= 0:
        return None
    ns = seconds * 1_000_000_000
    if not in_time_range(ns):
        raise RecordError(f"job {job_id}: {what} time {seconds} is outside 1970-2106")
    return ns


def _brief(job: Any) -> str:
    if isinstance(job, dict):
        keep = ("job_id", "job_state", "state", "nodes", "start_time", "time")
        return repr({k: job[k] for k in keep if k in job})[:2048]
    return repr(job)[:2048]
