"""Cutting what gnmic wrote into JSON values, and giving up cleanly on what is not JSON.

gnmic separates messages with a newline (file output `separator` default) and writes each one
either on one line or, with `multiline` (always on for stdout), indented by `indent` (default
two spaces) so that only a message's first and last lines start at column 0. With several
targets, the CLI puts `[<address>] ` before every line of every message (`--no-prefix` turns
it off; pkg/app/app.go `PrintMsg` and pkg/app/utils.go `indent`).

That layout gives cheap, robust boundaries without scanning characters: a single line that
parses is a message (JSON Lines); otherwise lines are collected from a column-0 `{`/`[` to a
column-0 `}`/`]`. A column-0 `{`/`[` met while collecting means the pending message was cut
short: it becomes a DeadLetter and decoding resumes with the new message, so one truncated
write costs one message, never the rest of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..records import DeadLetter

#: Bytes of a bad chunk kept in its DeadLetter: enough to recognise it, bounded for memory.
MAX_RAW_BYTES = 2048

_OPENERS = ("{", "[")
_CLOSERS = ("}", "]")
_NOT_IN_ADDRESS = frozenset('{}",\t ')


def split_target_prefix(line: str) -> tuple[str | None, str]:
    """Split gnmic's `[<address>] ` line prefix off a line: (address or None, rest).

    An event array line (`[{"name": ...}]`) also starts with `[`; it is told apart because an
    address holds no quote, brace, comma or blank before the `] ` that closes it.
    """
    if not line.startswith("["):
        return None, line
    end = line.find("] ", 1)
    if end < 2 or not _NOT_IN_ADDRESS.isdisjoint(line[1:end]):
        return None, line
    return line[1:end], line[end + 2 :]


def is_event(message: dict[str, Any]) -> bool:
    """True for one event-format event (`name`/`tags`/`values`), False for a json-format one."""
    return "tags" in message or "values" in message


def _with_source(value: Any, address: str | None) -> Any:
    """Use the `[address]` line prefix as the message's source where the message names none."""
    if address is None:
        return value
    for message in value if isinstance(value, list) else (value,):
        if not isinstance(message, dict):
            continue
        if not is_event(message):
            message.setdefault("source", address)
        elif isinstance(tags := message.setdefault("tags", {}), dict):
            tags.setdefault("source", address)
    return value


def _dead(source: str, reason: str, lines: list[str], line_no: int) -> DeadLetter:
    raw = "\n".join(lines).encode("utf-8", "replace")[:MAX_RAW_BYTES]
    return DeadLetter(source=source, reason=reason, raw=raw, line_no=line_no)


def iter_messages(text: str, source: str) -> Iterator[Any | DeadLetter]:
    """Yield each decoded JSON value in `text`, or a DeadLetter for each chunk that is not one.

    `source` names the input (a file or topic) in the DeadLetters. `text` must end on a message
    boundary: a message still open at the end is reported as truncated.
    """
    pending: list[str] = []
    pending_line = 0
    pending_address: str | None = None
    for line_no, raw_line in enumerate(text.split("\n"), start=1):
        address, line = split_target_prefix(raw_line)
        stripped = line.strip()
        if not stripped:
            continue
        if pending:
            if not line.startswith(_OPENERS):
                pending.append(line)
                if line.startswith(_CLOSERS):
                    try:
                        yield _with_source(orjson.loads("\n".join(pending)), pending_address)
                    except orjson.JSONDecodeError as exc:
                        yield _dead(source, f"invalid JSON: {exc}", pending, pending_line)
                    pending = []
                continue
            yield _dead(source, "truncated JSON value", pending, pending_line)
            pending = []
        if stripped.startswith(_OPENERS):
            try:
                yield _with_source(orjson.loads(stripped), address)
                continue
            except orjson.JSONDecodeError:
                if line.startswith(_OPENERS):
                    pending, pending_line, pending_address = [line], line_no, address
                    continue
        yield _dead(source, "not JSON", [raw_line], line_no)
    if pending:
        yield _dead(source, "truncated JSON value at end of input", pending, pending_line)
