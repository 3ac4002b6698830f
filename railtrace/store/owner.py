"""Who holds a chDB data directory, so that other processes can read through it.

chDB lets one process open a data directory. The holder writes `railtrace-owner.json` there
(its pid, and its API URL once it serves HTTP); a CLI command that finds the directory locked
reads this file and asks the owner's API instead of failing. A file left by a process that died
is ignored, since a dead pid cannot be holding the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

log = logging.getLogger(__name__)

OWNER_FILE = "railtrace-owner.json"

#: The file ClickHouse (and so chDB) locks while a process holds the directory.
_STATUS_FILE = "status"


@dataclass(frozen=True, slots=True)
class Owner:
    pid: int
    api_url: str | None = None
    # A read token for the owner's API, valid while the owner lives; the file is 0600.
    api_token: str | None = None

    def auth_headers(self) -> dict[str, str]:
        """What a request to the owner's API sends to be let in (nothing without a token)."""
        return {"Authorization": f"Bearer {self.api_token}"} if self.api_token else {}


def owner_path(data_dir: Path) -> Path:
    return data_dir / OWNER_FILE


def write_owner(data_dir: Path, api_url: str | None = None, api_token: str | None = None) -> Owner:
    """Record this process as the holder of `data_dir` (call again once the API listens)."""
    owner = Owner(pid=os.getpid(), api_url=api_url, api_token=api_token)
    path = owner_path(data_dir)
    tmp = path.with_name(f".{OWNER_FILE}.{owner.pid}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(orjson.dumps(owner))
    tmp.replace(path)  # atomic: a reader never sees half a file
    log.debug("owner file written", extra={"path": str(path), "api_url": api_url})
    return owner


def read_owner(data_dir: Path) -> Owner | None:
    """The live holder of `data_dir`, or None when there is none (or only a stale file)."""
    try:
        d = orjson.loads(owner_path(data_dir).read_bytes())
        owner = Owner(pid=int(d["pid"]), api_url=d.get("api_url"), api_token=d.get("api_token"))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    if not pid_alive(owner.pid):
        log.info("ignoring stale owner file", extra={"data_dir": str(data_dir), "pid": owner.pid})
        return None
    return owner


def holder(data_dir: Path) -> str | None:
    """Who holds `data_dir` now, said for a person (pid, and the API it serves), or None when
    nothing does. For a command about to delete or replace the directory: a serving process
    that lost its store answered 500 on every page. Not for a directory this process holds."""
    owner = read_owner(data_dir)
    if owner is not None:
        serving = f", serving {owner.api_url}" if owner.api_url else ""
        return f"process {owner.pid}{serving}"
    if status_locked(data_dir):
        return "another process"
    return None


def remove_owner(data_dir: Path) -> None:
    """Remove the owner file if this process wrote it; another holder's file is left alone."""
    path = owner_path(data_dir)
    with contextlib.suppress(OSError, orjson.JSONDecodeError, KeyError, TypeError):
        if orjson.loads(path.read_bytes())["pid"] == os.getpid():
            path.unlink()


def status_locked(data_dir: Path) -> bool:
    """Whether another process holds the ClickHouse lock on `data_dir` right now.

    Only call this after opening failed: a probe taken while this process holds the directory
    would conflict with its own lock.
    """
    try:
        fd = os.open(data_dir / _STATUS_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (this user's or another's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return True
