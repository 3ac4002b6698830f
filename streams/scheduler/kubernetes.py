"""`kubectl get pods -o json` (or `-o yaml`) for training jobs, as the Kubeflow operators and
JobSet make them.

Each pod is one host's share of a job: `spec.nodeName` is the host, the job is named by the
operator's label, the GPU count is the container's `nvidia.com/gpu` limit (or request), and
the pod's node rank comes from what the operator wrote into it (`operators`). A pod is one
fact; the job's placement is the union of its pods' facts. An MPI launcher that runs no ranks
is a pod of the job on none of its hosts: its placement names no host, so the CPU node it
usually runs on is neither taken for one of the job's GPU hosts nor reported as uncabled.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..records import JobPlacement, LogOrigin, PlacedHost, in_time_range, valid_job_id
from .common import PlacementRead, RecordError
from .operators import JOB_LABELS, job_id, node_rank, runs_no_ranks

_ENDED = frozenset({"Succeeded", "Failed"})
#: A Kubernetes node name: a DNS subdomain (lowercase letters, digits, '-', '.').
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z")


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and (
        doc.get("kind") == "Pod" or isinstance(doc.get("items"), list)
    )


def pods_in(docs: list[Any]) -> list[Any]:
    """The pods of YAML documents as kubectl prints them: each Pod document, and the items of
    each pod List; documents of anything else are passed over."""
    return [
        p
        for d in docs
        if isinstance(d, dict) and looks_like(d)
        for p in ([d] if d.get("kind") == "Pod" else d["items"])
    ]


def read(source: str, doc: dict[str, Any], into: PlacementRead) -> None:
    """Add a placement for every scheduled pod of `doc` (a List of pods or one Pod); a pod's
    1-based position stands for its line."""
    pods = [doc] if doc.get("kind") == "Pod" else doc["items"]
    for position, pod in enumerate(pods, 1):
        into.take(
            source,
            position,
            lambda: _placement(source, position, pod),  # noqa: B023 - called at once
            lambda: _name(pod),  # noqa: B023
        )


def _name(pod: Any) -> str:
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name[:253] if isinstance(name, str) else "?"


def _placement(source: str, position: int, pod: Any) -> JobPlacement | None:
    if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
        raise RecordError(f"item {position} is not a Pod")
    meta = _object(pod, "metadata")
    spec = _object(pod, "spec")
    status = _dict(pod.get("status"))
    name = _name(pod)
    labels = _dict(meta.get("labels"))
    job = job_id(labels)
    if job is None:
        raise RecordError(f"pod {name}: no label names its job ({', '.join(JOB_LABELS)})")
    if not valid_job_id(job):
        raise RecordError(f"pod {name}: job name {job!r} is not a job id")
    phase = status.get("phase", "") if isinstance(status.get("phase"), str) else ""
    node = spec.get("nodeName")
    if isinstance(node, str) and not _NODE_NAME.match(node):
        raise RecordError(f"pod {name}: spec.nodeName {node[:80]!r} is not a node name")
    if not isinstance(node, str) or not node:
        if phase in ("", "Pending"):
            return None
        raise RecordError(f"pod {name}: {phase} but no spec.nodeName")
    env = _env(name, spec)
    start = _time(name, status.get("startTime"))
    gpus = _gpus(name, spec)
    rank = node_rank(name, env, labels, _dict(meta.get("annotations")))
    on_host = not runs_no_ranks(labels, env, _asks_gpus(spec))
    return JobPlacement(
        ts_ns=start or 0,
        job_id=job,
        host=node if on_host else "",
        hosts=(PlacedHost(node, (), gpus, rank),) if on_host else (),
        scheduler="kubernetes",
        state=phase,
        start_ns=start,
        end_ns=_ended(name, status) if phase in _ENDED else None,
        origin=LogOrigin(source, position),
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _object(pod: dict[str, Any], key: str) -> dict[str, Any]:
    value = pod.get(key)
    if not isinstance(value, dict):
        raise RecordError(f"pod {_name(pod)}: no {key}")
    return value


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    containers = spec.get("containers")
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def _env(name: str, spec: dict[str, Any]) -> dict[str, str]:
    """The env the pod's processes see, as far as a dump shows it: the kubelet builds each
    container's env in order, a later entry of a name replacing an earlier one (so the
    operator's RANK, appended after the user's, wins), and an entry without a value is the
    empty string; a value from a field or resource reference is unknown. Where containers
    disagree the first one's (the operators' main container) is taken. An env that is not
    a list of named entries is one no API server accepts: the pod is refused."""
    out: dict[str, str | None] = {}
    for container in reversed(_containers(spec)):
        env = container.get("env", [])
        if not isinstance(env, list):
            raise RecordError(f"pod {name}: a container's env is not a list")
        for var in env:
            if not isinstance(var, dict) or not isinstance(var.get("name"), str):
                raise RecordError(f"pod {name}: an env entry has no name")
            value = None if "valueFrom" in var else var.get("value", "")
            if value is not None and not isinstance(value, str):
                raise RecordError(f"pod {name}: env {var['name'][:40]} is not a string")
            out[var["name"]] = value
    return {k: v for k, v in out.items() if v is not None}


def _gpus(name: str, spec: dict[str, Any]) -> int | None:
    total = None
    for container in _containers(spec):
        resources = container.get("resources")
        if not isinstance(resources, dict):
            continue
        for kind in ("limits", "requests"):
            amounts = resources.get(kind)
            if isinstance(amounts, dict) and "nvidia.com/gpu" in amounts:
                try:
                    count = int(str(amounts["nvidia.com/gpu"]))
                except ValueError:
                    raise RecordError(f"pod {name}: nvidia.com/gpu is not a count") from None
                total = (total or 0) + count
                break
    return total


def _asks_gpus(spec: dict[str, Any]) -> bool:
    """Whether a container asks for any GPU resource (`nvidia.com/gpu`, HAMi's
    `nvidia.com/vgpu`, `amd.com/gpu`), as the training-operator tells a GPU launcher."""
    for container in _containers(spec):
        resources = _dict(container.get("resources"))
        for kind in ("limits", "requests"):
            amounts = _dict(resources.get(kind))
            if any("gpu" in str(k) and str(v) != "0" for k, v in amounts.items()):
                return True
    return False


def _ended(name: str, status: dict[str, Any]) -> int | None:
    ends = []
    statuses = status.get("containerStatuses")
    for cs in statuses if isinstance(statuses, list) else []:
        term = _dict(_dict(cs).get("state")).get("terminated")
        if isinstance(term, dict):
            t = _time(name, term.get("finishedAt"))
            if t is not None:
                ends.append(t)
    return max(ends) if ends else None


def _time(name: str, raw: Any) -> int | None:
    if raw in (None, ""):
        return None
    if isinstance(raw, datetime):  # YAML reads an unquoted timestamp as a datetime
        when = raw
    elif isinstance(raw, str):
        try:
            when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise RecordError(f"pod {name}: time {raw!r} is not RFC 3339") from None
    else:
        raise RecordError(f"pod {name}: time {raw!r} is not RFC 3339")
    if when.tzinfo is None:
        raise RecordError(f"pod {name}: time {raw!r} has no zone")
    try:
        ns = int(when.timestamp()) * 1_000_000_000
    except (ValueError, OverflowError):
        raise RecordError(f"pod {name}: time {raw!r} is no date") from None
    if not in_time_range(ns):
        raise RecordError(f"pod {name}: time {raw!r} is outside 1970-2106")
    return ns
