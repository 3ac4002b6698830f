"""The log scraper's state file: how far each followed file has been delivered.

One entry per open file content (a path's current file, and a rotated-away file still being
drained). An entry is written only after `emit` returned for the lines it covers, so after a
crash or restart the scraper resumes exactly after the last delivered line: nothing is lost
and nothing is sent twice (except a batch whose emit returned but whose entry was not yet
written, which the pipeline's parsers drop as a redelivery by (source, line_no)).

Writes are atomic (a temporary file in the same directory, fsync, rename), so a reader sees
either the old or the new state, never half of one. A state file that cannot be read is set
aside (renamed `*.bad`) and the scraper starts afresh, which re-sends the files from the start;
that is logged, never fatal.
"""

from __future__ import annotations

import base64
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from railtrace.collectors.hosts.atomicfile import write_atomic

log = logging.getLogger(__name__)

STATE_VERSION = 1


@dataclass(slots=True)
class FileOffset:
    """Where one file content stands.

    `offset` is the byte just after the last delivered line and `line_no` that line's 1-based
    number in this content; `generation` counts the contents the path has had (0 for the first,
    +1 at each rotation or truncation) and names the source (see `logscraper.source_name`).
    `current` is False for a rotated-away file that is still being read to its end.
    """

    path: str
    dev: int
    ino: int
    offset: int
    line_no: int
    generation: int
    job_id: str
    year: int
    head: bytes = b""
    current: bool = True

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["head"] = base64.b64encode(self.head).decode()
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> FileOffset:
        return cls(
            path=str(doc["path"]),
            dev=int(doc["dev"]),
            ino=int(doc["ino"]),
            offset=int(doc["offset"]),
            line_no=int(doc["line_no"]),
            generation=int(doc["generation"]),
            job_id=str(doc["job_id"]),
            year=int(doc["year"]),
            head=base64.b64decode(doc.get("head", "")),
            current=bool(doc.get("current", True)),
        )


def load(path: Path) -> list[FileOffset]:
    """The entries saved at `path`; none if there is no file or it cannot be read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        doc = orjson.loads(data)
        if not isinstance(doc, dict) or doc.get("v") != STATE_VERSION:
            raise ValueError("not a version-1 log offsets state")
        return [FileOffset.from_json(e) for e in doc["files"]]
    except (ValueError, KeyError, TypeError) as exc:
        bad = path.with_name(path.name + ".bad")
        log.error(
            "log offsets state unreadable, set aside; files are read again from their start",
            extra={"state_file": str(path), "moved_to": str(bad), "error": str(exc)},
        )
        os.replace(path, bad)
        return []


def save(path: Path, entries: list[FileOffset]) -> None:
    """Replace the state at `path` atomically with `entries`."""
    data = orjson.dumps(
        {"v": STATE_VERSION, "files": [e.to_json() for e in entries]}, option=orjson.OPT_INDENT_2
    )
    write_atomic(path, data)
