"""Directories and files only their owner can read: the store, spools, state and tokens.

The store holds every verdict and the evidence behind it; anyone on the machine who can read
its directory can copy it and read them without a token. So every directory railtrace keeps
data in is 0700 (an existing one is tightened, and that is logged), every file it writes
itself 0600, and each process starts with umask 077 so that what libraries create inside
(chDB's parts) is private too.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
UMASK = 0o077


def private_dir(path: Path) -> Path:
    """`path` as a directory only its owner can enter, created if need be (parents too, with
    the process's umask). Raises PermissionError, saying what to do, if it cannot be made so."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    st = path.stat()
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_ISVTX:
        raise PermissionError(
            f"{path} is a shared directory (mode {mode:04o}, like /tmp): give railtrace a "
            "directory of its own inside it"
        )
    if mode & ~DIR_MODE:
        try:
            path.chmod(DIR_MODE)
        except PermissionError as exc:
            raise PermissionError(
                f"{path} is mode {mode:04o}, readable by others, and this user cannot change "
                f"it: run `chmod 700 {path}` as its owner"
            ) from exc
        log.warning(
            "made a data directory private",
            extra={"path": str(path), "was": f"{mode:04o}", "now": f"{DIR_MODE:04o}"},
        )
    return path


def private_opener(path: str, flags: int) -> int:
    """An `opener` for `open()` that creates the file 0600."""
    return os.open(path, flags, FILE_MODE)


def open_appending(path: Path) -> BinaryIO:
    """`path` opened to append bytes, created 0600; the caller owns (and closes) the handle."""
    return open(path, "ab", opener=private_opener)


def readable_by_others(path: Path) -> int | None:
    """The mode of `path` when its group or others may read or write it, else None."""
    mode = stat.S_IMODE(path.stat().st_mode)
    return mode if mode & 0o077 else None
