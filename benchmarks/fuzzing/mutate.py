"""Garbage made of bytes: good records of other files mutated (bit flips, truncation, junk,
invalid UTF-8, huge numbers, bad times, long lines, ...) and input that never was a record.

A mutation is named by its function (`m_flip` -> "flip"), and the names of those applied
are what a failure's note says the garbage was made by."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from .garbage_values import BAD_TIMES, HUGE_NUMBERS, INVALID_UTF8, ODD_TEXT

_DIGITS = re.compile(rb"\d+")
_TIMEISH = re.compile(
    rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?|\d{16,19}"
    rb"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}|[IWEF]\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?"
)


def _pos(rng: random.Random, data: bytes) -> int:
    return rng.randint(0, len(data))


def m_flip(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def m_replace(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    n = rng.randint(1, 16)
    return data[:i] + rng.randbytes(n) + data[i + n :]


def m_truncate(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    return data[: _pos(rng, data)]


def m_cut_front(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    return data[_pos(rng, data) :]


def m_insert_junk(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    junk = rng.randbytes(rng.choice((1, 2, 8, 64, 512)))
    return data[:i] + junk + data[i:]


def m_invalid_utf8(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    return data[:i] + rng.choice(INVALID_UTF8) + data[i:]


def m_nul(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    return data[:i] + b"\x00" * rng.choice((1, 1, 3, 100)) + data[i:]


def m_odd_text(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    return data[:i] + rng.choice(ODD_TEXT) + data[i:]


def m_huge_number(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    runs = list(_DIGITS.finditer(data))
    if not runs:
        return m_insert_junk(rng, data, pool)
    m = rng.choice(runs)
    return data[: m.start()] + rng.choice(HUGE_NUMBERS) + data[m.end() :]


def m_bad_time(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    runs = list(_TIMEISH.finditer(data)) or list(_DIGITS.finditer(data))
    if not runs:
        return rng.choice(BAD_TIMES) + b" " + data
    m = rng.choice(runs)
    return data[: m.start()] + rng.choice(BAD_TIMES) + data[m.end() :]


def m_duplicate(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 64))
    return data[:j] + data[i:j] * rng.choice((1, 2, 10, 100)) + data[j:]


def m_delete(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, 32) :]


def m_splice(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    other = rng.choice(pool)
    return data[: _pos(rng, data)] + other[_pos(rng, other) :]


def m_crlf(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    return data[:i] + rng.choice((b"\r", b"\r\n", b"\n", b"\r\r\n", b"\n\r")) + data[i:]


def m_bom(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    return rng.choice((b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\xff\xfe")) + data


def m_long(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    """A very long line: what a runaway print or a binary blob without newlines gives."""
    size = rng.choice((70_000, 140_000, 300_000)) if rng.random() < 0.9 else 1_100_000
    piece = data or b"x"
    return (piece * (size // len(piece) + 1))[:size]


def m_case(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    return data.swapcase() if rng.random() < 0.5 else data.upper()


def m_quote(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    return data[:i] + rng.choice((b'"', b"'", b'""', b"\\", b'\\"', b"`")) + data[i:]


def m_separator(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> bytes:
    i = _pos(rng, data)
    return (
        data[:i]
        + rng.choice((b",", b",,", b";", b"\t", b" ", b":", b"]", b"[", b"{", b"}"))
        + data[i:]
    )


BYTE_OPS: tuple[Callable[[random.Random, bytes, Sequence[bytes]], bytes], ...] = (
    m_flip,
    m_replace,
    m_truncate,
    m_cut_front,
    m_insert_junk,
    m_invalid_utf8,
    m_nul,
    m_odd_text,
    m_huge_number,
    m_huge_number,
    m_bad_time,
    m_bad_time,
    m_duplicate,
    m_delete,
    m_splice,
    m_crlf,
    m_bom,
    m_case,
    m_quote,
    m_separator,
)
#: Long lines cost a reader milliseconds each, so they come once in this many mutations.
LONG_EVERY = 150


def mutate_bytes(rng: random.Random, data: bytes, pool: Sequence[bytes]) -> tuple[bytes, str]:
    hows = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        op = m_long if rng.randrange(LONG_EVERY) == 0 else rng.choice(BYTE_OPS)
        data = op(rng, data, pool)
        hows.append(op.__name__[2:])
    return data, "+".join(hows)


def junk(rng: random.Random) -> tuple[bytes, str]:
    """Input that never was a record."""
    kind = rng.randrange(12)
    if kind == 0:
        return rng.randbytes(rng.choice((1, 16, 256, 4096))), "junk:random-bytes"
    if kind == 1:
        return b"", "junk:empty"
    if kind == 2:
        return rng.choice((b" ", b"\t", b"\r", b"   \t ", b"\x00")), "junk:blank"
    if kind == 3:
        return rng.choice(
            (b"{", b"[", b"}", b"]", b"{}", b"[]", b"null", b"[[", b"{{")
        ), "junk:brace"
    if kind == 4:
        return rng.choice(INVALID_UTF8) * rng.randint(1, 50), "junk:invalid-utf8"
    if kind == 5:
        return b"\x00" * rng.choice((1, 10, 1000)), "junk:nul"
    if kind == 6:
        return json.dumps(random_json(rng, 3)).encode(), "junk:json"
    if kind == 7:
        return rng.choice(ODD_TEXT) * rng.randint(1, 20), "junk:odd-text"
    if kind == 8:
        return rng.choice(HUGE_NUMBERS), "junk:number"
    if kind == 9:
        return rng.choice(BAD_TIMES) + b" " + rng.randbytes(8).hex().encode(), "junk:time"
    if kind == 10:
        depth = rng.choice((100, 1000, 5000))
        return b"[" * depth + b"]" * depth, "junk:deep"
    return b"\xef\xbb\xbf", "junk:bom"


def random_json(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(8 if depth > 0 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return rng.choice(
            (0, -1, 1, 2**63, 2**64, -(2**63) - 1, 10**30, rng.randint(-1000, 10**12))
        )
    if kind == 3:
        return rng.choice((0.0, -0.0, 1.5, 1e308, -1e308, 5e-324))
    if kind == 4:
        return rng.choice(("", "x", "UP", "9" * 30, "\u0661", "1e5", "-5", "[name=a]", "a/b/c"))
    if kind == 5:
        return []
    if kind == 6:
        return [random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(
            ("a", "values", "tags", "updates", "Path", "source", "timestamp", "name", "")
        ): random_json(rng, depth - 1)
        for _ in range(rng.randint(0, 3))
    }
