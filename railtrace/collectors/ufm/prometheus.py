"""Prometheus text exposition format, read line by line so one bad line costs only itself.

prometheus_client's parser gives up on the whole text at the first line it cannot read (and
yields nothing before it), so one garbled line of a UFM endpoint's output would lose every
switch in it. This reader takes each sample line on its own:
`name{label="value",...} value [timestamp_ms]`, with the format's escapes (`\\\\`, `\\"`,
`\\n`) in label values. Comments and `# TYPE`/`# HELP` lines are skipped: UFM's counters are
read by name, not by declared type. Integral values stay Python ints, so a 64-bit counter
keeps every unit; a value that is a bare word (a port state such as `Active`, should an
exporter print one) is kept as text for the converter to judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*\"")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample line: `value` an int, a float or (a bare word) a str; `ts_ms` if given."""

    name: str
    labels: dict[str, str]
    value: int | float | str
    ts_ms: int | None = None


@dataclass
class Parsed:
    """The samples of a text and the lines that could not be read, as (line number, why)."""

    samples: list[Sample] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)


class _BadLineError(ValueError):
    pass


def _labels(line: str, pos: int) -> tuple[dict[str, str], int]:
    """The label set starting after `{` at `pos`; returns it and the position after `}`."""
    labels: dict[str, str] = {}
    while True:
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if line.startswith("}", pos):
            return labels, pos + 1
        match = _LABEL.match(line, pos)
        if match is None:
            raise _BadLineError(f"bad label at column {pos + 1}")
        pos = match.end()
        value: list[str] = []
        while True:
            if pos >= len(line):
                raise _BadLineError("unterminated label value")
            ch = line[pos]
            if ch == '"':
                pos += 1
                break
            if ch == "\\":
                escaped = _ESCAPES.get(line[pos + 1 : pos + 2])
                if escaped is None:
                    raise _BadLineError(f"bad escape at column {pos + 1}")
                value.append(escaped)
                pos += 2
                continue
            value.append(ch)
            pos += 1
        labels[match.group(1)] = "".join(value)
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if line.startswith(",", pos):
            pos += 1
        elif not line.startswith("}", pos):
            raise _BadLineError(f"expected , or }} at column {pos + 1}")


def _value(token: str) -> int | float | str:
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float(token)  # also NaN, +Inf, -Inf, 1e3
    except ValueError:
        pass
    if _WORD.fullmatch(token):
        return token
    raise _BadLineError(f"value {token!r} is not a number")


def parse_line(line: str) -> Sample | None:
    """One line as a Sample; None for blank and comment lines; _BadLineError otherwise."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    name = _NAME.match(text)
    if name is None:
        raise _BadLineError("no metric name")
    pos = name.end()
    labels: dict[str, str] = {}
    if text.startswith("{", pos):
        labels, pos = _labels(text, pos + 1)
    rest = text[pos:].split()
    if not rest or (pos < len(text) and text[pos] not in " \t"):
        raise _BadLineError("no value after the name and labels")
    if len(rest) > 2:
        raise _BadLineError("more than a value and a timestamp")
    ts_ms = None
    if len(rest) == 2:
        try:
            ts_ms = int(rest[1])
        except ValueError:
            raise _BadLineError(f"timestamp {rest[1]!r} is not integer ms") from None
    return Sample(name.group(), labels, _value(rest[0]), ts_ms)


def parse_text(text: str) -> Parsed:
    """Every sample line of `text`; bad lines are listed in `malformed`, the rest kept.

    >>> parsed = parse_text('a{x="1"} 7 1628683905941\\nb{x="1" 5\\nc 2.5\\n')
    >>> [(s.name, s.labels, s.value, s.ts_ms) for s in parsed.samples]
    [('a', {'x': '1'}, 7, 1628683905941), ('c', {}, 2.5, None)]
    >>> parsed.malformed
    [(2, 'expected , or } at column 9')]
    """
    parsed = Parsed()
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            sample = parse_line(line)
        except _BadLineError as exc:
            parsed.malformed.append((number, str(exc)))
            continue
        if sample is not None:
            parsed.samples.append(sample)
    return parsed
