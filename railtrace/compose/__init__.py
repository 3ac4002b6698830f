"""The composition root: one function per command or long-running role, wiring the settings to
the store, Kafka, the API and the core.

The CLI (`railtrace.cli`) only parses arguments, calls one of these and presents what comes
back; nothing here knows of terminals. A start that cannot go on (no topology, a store held by
another process, a schema behind) raises `StartError`, whose message says what to do, and the
CLI prints it and exits with its code.
"""

from __future__ import annotations

from collections.abc import Callable

#: A line for the person who started the command (a warning or where something is).
Say = Callable[[str], None]
#: Progress: a stage's name, units done since the last call, and its total if known.
Tick = Callable[[str, int, int | None], None]


class StartError(Exception):
    """What stops a command, in words that say how to go on; `code` is its exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
