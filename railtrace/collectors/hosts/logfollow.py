"""What the log scraper follows: a path, the file contents under it (the current one and
rotated-away ones still draining), and, per content, what is delivered and what waits; and how
a content of the state file is found again after a restart (`resume`), by its file's identity.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from dataclasses import dataclass, field

from railtrace.collectors.hosts.offsets import FileOffset
from railtrace.collectors.hosts.tailer import Line, Tail

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ScraperStats:
    """What the scraper did, so that losses and odd input are visible rather than silent."""

    files_adopted: int = 0
    batches: int = 0
    lines: int = 0
    alert_batches: int = 0
    rotations: int = 0
    truncations: int = 0
    partial_lines_flushed: int = 0
    lines_cut: int = 0
    files_without_job: int = 0
    files_lost: int = 0
    read_errors: int = 0
    emit_errors: int = 0


@dataclass(slots=True)
class Follower:
    """One file content: its open file, what is delivered (`entry`) and what waits to be."""

    tail: Tail
    entry: FileOffset
    buffer: list[Line] = field(default_factory=list)
    first_read_at: float | None = None
    last_growth: float = 0.0
    alert: bool = False
    retiring_since: float | None = None

    @property
    def read_end(self) -> int:
        return self.buffer[-1].end if self.buffer else self.entry.offset


@dataclass(slots=True)
class FollowedPath:
    """A followed path: its job, its current content and rotated-away ones still draining."""

    path: str
    job_id: str
    current: Follower | None = None
    retiring: list[Follower] = field(default_factory=list)
    next_generation: int = 1
    missing_since: float | None = None

    def followers(self) -> list[Follower]:
        return [*self.retiring, *([self.current] if self.current is not None else [])]


def resume(e: FileOffset, max_line_bytes: int, now: float) -> Follower | None:
    """The file of entry `e` opened at its offset: at its path, else renamed beside it.
    None when that content is gone or was cut while the scraper was away (the caller counts
    it lost)."""
    candidates = [e.path]
    folder = os.path.dirname(e.path) or "."
    with contextlib.suppress(OSError):
        candidates += sorted(d.path for d in os.scandir(folder) if d.path != e.path and d.is_file())
    for path in candidates:
        if identity(path) != (e.dev, e.ino):
            continue
        tail = Tail.open(path, e.offset, max_line_bytes)
        if tail is None:
            continue
        now_head = tail.head
        tail.head = e.head
        if tail.identity != (e.dev, e.ino) or tail.replaced(e.offset):
            tail.close()
            break
        tail.head = now_head
        return Follower(tail, e, last_growth=now)
    log.warning(
        "log file content of the state file is gone or was cut; its undelivered rest is lost",
        extra={"path": e.path, "generation": e.generation, "offset": e.offset},
    )
    return None


def identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the regular file at `path`; None for anything else or nothing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def is_file(path: str) -> bool:
    return identity(path) is not None
