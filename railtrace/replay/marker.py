"""A replay that did not finish, told apart from a store that holds no jobs.

A replay writes its verdicts last, so one killed on the way leaves samples, events and facts
stored and no verdict: `railtrace jobs` then showed an empty table and exited 0 as if the
capture held no job. `railtrace replay` writes `railtrace-replay.json` (its pid, the capture,
when it started) into the data directory before it stores anything and removes it only after
its last write; a file whose process is gone is a replay that stopped half way.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from railtrace.store.owner import pid_alive

MARKER_FILE = "railtrace-replay.json"


@dataclass(frozen=True, slots=True)
class Unfinished:
    """A replay into this directory that started and never finished."""

    pid: int
    capture: str
    started_at: float  # Unix seconds

    def describe(self, data_dir: Path) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started_at))
        return (
            f"the replay of {self.capture} into {data_dir}, started {started}, did not finish "
            f"(its process {self.pid} is gone): the store holds part of that capture's data "
            f"and none of its verdicts. Run `railtrace replay {self.capture} --data {data_dir}` "
            "again"
        )


def begin(data_dir: Path, capture: Path) -> None:
    """Record that this process is replaying `capture` into `data_dir` (0600, atomically)."""
    doc = {"pid": os.getpid(), "capture": str(capture), "started_at": time.time()}
    path = data_dir / MARKER_FILE
    tmp = path.with_name(f".{MARKER_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(orjson.dumps(doc))
    tmp.replace(path)


def finish(data_dir: Path) -> None:
    """The replay's last write is done."""
    with contextlib.suppress(FileNotFoundError):
        (data_dir / MARKER_FILE).unlink()


def unfinished(data_dir: Path) -> Unfinished | None:
    """The replay into `data_dir` that stopped half way, if any; a running one is not."""
    try:
        doc = orjson.loads((data_dir / MARKER_FILE).read_bytes())
        found = Unfinished(int(doc["pid"]), str(doc["capture"]), float(doc["started_at"]))
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        # Unreadable: it can only be a replay's, and one that never finished writing it.
        return Unfinished(0, "(unknown capture)", 0.0)
    if found.pid and pid_alive(found.pid):
        return None
    return found
