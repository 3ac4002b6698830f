"""Structured logging for every railtrace process: key=value text for people, JSON for machines.

Library code logs through `logging.getLogger(__name__)` with `extra={...}` fields; only the
composition root calls `configure`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson

_STANDARD = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


class _KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        line = f"{record.levelname.lower():7} {record.name}: {record.getMessage()}"
        line = f"{line} {extra}" if extra else line
        # A crash's traceback is what explains it: a line without it says only that it came.
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(level: str = "INFO", json: bool = False) -> None:
    """Send railtrace's logs to stderr in the chosen shape; safe to call more than once."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if json else _KeyValueFormatter())
    root = logging.getLogger("railtrace")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    # The streaming libraries' own problems should reach the same place, but not their chatter.
    quieter = max(logging.getLevelName(level.upper()), logging.WARNING)
    for name in ("faust", "mode", "aiokafka"):
        lib = logging.getLogger(name)
        lib.handlers[:] = [handler]
        lib.setLevel(quieter)
        lib.propagate = False
