"""Replace a small state file so that a reader (or a restart after a crash) sees either the
old or the new content, never a torn one: write a temporary file beside it, fsync, rename."""

from __future__ import annotations

import os
from pathlib import Path

from railtrace.private import DIR_MODE, private_opener


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically (0600), creating its directory (0700) if needed."""
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb", opener=private_opener) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
