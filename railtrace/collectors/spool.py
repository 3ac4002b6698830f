"""A bounded, ordered queue on local disk between a collector and the broker.

Everything a collector emits is appended here first and sent from here, so a broker that is
away or slow costs disk, not data: the queue drains in order when the broker returns, and a
restarted collector resends what was not yet acknowledged (at-least-once; the pipeline and the
store drop the repeats). When the queue passes its size limit the oldest samples go first, and
are counted by stream; state changes (oper-status, traps, hang lines) are never dropped, so a
spool full of nothing but state changes may grow past its limit (logged).

Layout: segment files `<first seq>.seg` of length-prefixed records with a CRC (a torn record at
the end of the last segment, from a crash mid-write, is cut off on open), and `cursor`, the
position of the first record not yet acknowledged, replaced atomically.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from railtrace.collectors.emit import Outgoing

log = logging.getLogger(__name__)

# seq, ts_ns (-1: none), flags, len(stream), len(key), len(value), crc32 of the rest
_HEAD = struct.Struct("<QqBHII I")
_STATE = 1
SEGMENT_BYTES = 4 * 1024 * 1024
READ_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Position:
    """Where a record ends: acknowledging it acknowledges everything before it."""

    segment: int  # the segment's first sequence number
    offset: int  # byte offset just past the record


def _encode(seq: int, m: Outgoing) -> bytes:
    stream = m.stream.encode()
    body = stream + m.key + m.value
    flags = _STATE if m.state_change else 0
    ts = -1 if m.ts_ns is None else m.ts_ns
    crc = zlib.crc32(struct.pack("<QqB", seq, ts, flags) + body)
    return _HEAD.pack(seq, ts, flags, len(stream), len(m.key), len(m.value), crc) + body


def _read(data: bytes, at: int) -> tuple[int, Outgoing, int] | None:
    """(seq, message, end offset) of the record at `at`, or None if it is torn or damaged."""
    if at + _HEAD.size > len(data):
        return None
    seq, ts, flags, ls, lk, lv, crc = _HEAD.unpack_from(data, at)
    start = at + _HEAD.size
    end = start + ls + lk + lv
    if end > len(data):
        return None
    body = data[start:end]
    if zlib.crc32(struct.pack("<QqB", seq, ts, flags) + body) != crc:
        return None
    message = Outgoing(
        body[:ls].decode(),
        body[ls : ls + lk],
        body[ls + lk :],
        state_change=bool(flags & _STATE),
        ts_ns=None if ts < 0 else ts,
    )
    return seq, message, end


class Spool:
    """The disk queue of one collector process; not shared between processes."""

    def __init__(self, directory: Path, max_bytes: int, segment_bytes: int = SEGMENT_BYTES):
        self.dir = directory
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.dropped: Counter[str] = Counter()
        directory.mkdir(parents=True, exist_ok=True)
        self._segments: list[int] = sorted(int(p.stem) for p in directory.glob("*.seg"))
        self._cursor = self._load_cursor()
        self._next_seq = self._recover()
        self._sizes = {s: self._path(s).stat().st_size for s in self._segments}
        self._tail: BinaryIO | None = (
            self._path(self._segments[-1]).open("ab") if self._segments else None
        )

    # -- writing ------------------------------------------------------------------------------

    def append(self, message: Outgoing) -> None:
        record = _encode(self._next_seq, message)
        if self._tail is None or self._sizes[self._segments[-1]] >= self.segment_bytes:
            self._roll()
        assert self._tail is not None
        self._tail.write(record)
        self._tail.flush()
        self._sizes[self._segments[-1]] += len(record)
        self._next_seq += 1
        if self.size_bytes() > self.max_bytes:
            self._make_room()

    def _roll(self) -> None:
        if self._tail is not None:
            self._tail.close()
        self._segments.append(self._next_seq)
        self._sizes[self._next_seq] = 0
        self._tail = self._path(self._next_seq).open("ab")

    def _make_room(self) -> None:
        """Drop the samples of the oldest segments until the spool fits, keeping their state
        changes in place (the segment is rewritten under its own name, so order holds)."""
        for first in list(self._segments[:-1]):
            if self.size_bytes() <= self.max_bytes:
                return
            kept, dropped = [], Counter[str]()
            start = self._cursor.offset if self._cursor.segment == first else 0
            data = self._path(first).read_bytes()
            at = start
            while (got := _read(data, at)) is not None:
                seq, message, at = got
                if message.state_change:
                    kept.append(_encode(seq, message))
                else:
                    dropped[message.stream] += 1
            if not dropped:
                continue
            body = b"".join(kept)
            tmp = self._path(first).with_suffix(".tmp")
            tmp.write_bytes(body)
            os.replace(tmp, self._path(first))
            self._sizes[first] = len(body)
            if self._cursor.segment == first:
                self._save_cursor(Position(first, 0))
            self.dropped.update(dropped)
            log.warning(
                "spool full: dropped the oldest samples",
                extra={"dropped": dict(dropped), "spool_bytes": self.size_bytes()},
            )
        if self.size_bytes() > self.max_bytes:
            log.warning(
                "spool over its limit with state changes only",
                extra={"spool_bytes": self.size_bytes(), "max_bytes": self.max_bytes},
            )

    # -- reading ------------------------------------------------------------------------------

    def peek(self, limit: int) -> list[tuple[Position, Outgoing]]:
        """Up to `limit` records from the first unacknowledged one, in order."""
        out: list[tuple[Position, Outgoing]] = []
        for first in self._segments:
            if first < self._cursor.segment:
                continue
            at = self._cursor.offset if first == self._cursor.segment else 0
            with self._path(first).open("rb") as f:
                f.seek(at)
                data, base = f.read(READ_BYTES), at
                while len(out) < limit:
                    got = _read(data, at - base)
                    if got is None:
                        more = f.read(READ_BYTES)
                        if not more:
                            break
                        data = data[at - base :] + more
                        base = at
                        continue
                    _, message, end = got
                    at = base + end
                    out.append((Position(first, at), message))
            if len(out) >= limit:
                break
        return out

    def ack(self, upto: Position) -> None:
        """Everything up to `upto` reached the broker: move the cursor, delete spent segments."""
        self._save_cursor(upto)
        for first in list(self._segments[:-1]):
            if first >= upto.segment:
                break
            self._path(first).unlink(missing_ok=True)
            self._segments.remove(first)
            del self._sizes[first]

    def size_bytes(self) -> int:
        """Bytes on disk not yet acknowledged (whole segments: a close upper bound)."""
        return sum(n for s, n in self._sizes.items() if s >= self._cursor.segment) - (
            self._cursor.offset if self._cursor.segment in self._sizes else 0
        )

    def empty(self) -> bool:
        return not self.peek(1)

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()
            self._tail = None

    # -- files --------------------------------------------------------------------------------

    def _path(self, first: int) -> Path:
        return self.dir / f"{first:020d}.seg"

    def _load_cursor(self) -> Position:
        try:
            segment, offset = (self.dir / "cursor").read_text().split()
            return Position(int(segment), int(offset))
        except (OSError, ValueError):
            return Position(self._segments[0] if self._segments else 0, 0)

    def _save_cursor(self, position: Position) -> None:
        tmp = self.dir / "cursor.tmp"
        tmp.write_text(f"{position.segment} {position.offset}\n")
        os.replace(tmp, self.dir / "cursor")
        self._cursor = position

    def _recover(self) -> int:
        """The next sequence number; cuts a torn record off the end of the last segment."""
        if not self._segments:
            return 0
        last = self._path(self._segments[-1])
        data = last.read_bytes()
        at, seq = 0, self._segments[-1] - 1
        while (got := _read(data, at)) is not None:
            seq, _, at = got
        if at < len(data):
            log.warning("spool: cut a torn record", extra={"segment": last.name, "at": at})
            with last.open("r+b") as f:
                f.truncate(at)
        return seq + 1
