"""Operator decisions handed to a running Xid collector: release or clear a node's quarantine.

The quarantine state lives in the Xid collector's process (and its state file), so a release
has to reach that process, and must not be lost when it is down. `railtrace release-node`
therefore drops a small JSON file into `collect.xid.requests_dir`; the collector looks there
every second (and at start), applies each request in the order written, emits the node event,
and only then deletes the file. A file it cannot read is renamed `*.bad` and logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson

from railtrace.collectors.hosts.atomicfile import write_atomic

log = logging.getLogger(__name__)

Action = Literal["release", "clear"]
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class Request:
    """`release` lifts any quarantine (suspected silent data corruption included); `clear`
    lifts one that is not for suspected SDC (a health check passed, the GPU was reset)."""

    action: Action
    node: str
    by: str
    reason: str


def submit(directory: Path, request: Request) -> Path:
    """Write `request` for the collector to pick up; returns the file written."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{_SAFE.sub('_', request.node)}.json"
    path = directory / name
    doc = {"action": request.action, "node": request.node, "by": request.by}
    write_atomic(path, orjson.dumps({**doc, "reason": request.reason}))
    return path


def pending(directory: Path) -> list[tuple[Path, Request]]:
    """The readable requests waiting in `directory`, oldest first; unreadable ones are set
    aside as `*.bad` (a request silently ignored would leave a node out of service)."""
    try:
        names = sorted(p for p in directory.iterdir() if p.suffix == ".json")
    except FileNotFoundError:
        return []
    out = []
    for path in names:
        try:
            out.append((path, _read(path)))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error(
                "unreadable operator request, set aside",
                extra={"file": str(path), "error": str(exc)},
            )
            with contextlib.suppress(OSError):
                path.replace(path.with_suffix(".bad"))
    return out


def _read(path: Path) -> Request:
    doc = orjson.loads(path.read_bytes())
    action, node = doc["action"], doc["node"]
    if action not in ("release", "clear") or not isinstance(node, str) or not node:
        raise ValueError(f"not a release or clear of a named node: {doc!r}")
    return Request(action, node, str(doc.get("by", "operator")), str(doc.get("reason", "")))
