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

For the collector's metrics and health the spool keeps its unacknowledged size as a running
total (appends are the hot path) and, in memory, when records were appended (one mark per
second at most), so the age of the oldest unsent record is known to within a second. A backlog
found on open is dated by its segments' last writes: an age that is then a lower bound.
"""

from __future__ import annotations

import logging
import os
import struct
import time
import zlib
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from railtrace.collectors.emit import Outgoing
from railtrace.private import open_appending, private_dir, private_opener

log = logging.getLogger(__name__)

# seq, ts_ns (-1: none), flags, len(stream), len(key), len(value), crc32 of the rest
_HEAD = struct.Struct("<QqBHII I")
_STATE = 1
SEGMENT_BYTES = 4 * 1024 * 1024
READ_BYTES = 256 * 1024
#: At most one append-time mark per this many seconds: the resolution of `oldest_age_s`.
MARK_EVERY_S = 1.0


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

    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        segment_bytes: int = SEGMENT_BYTES,
        clock: Callable[[], float] = time.time,
    ):
        self.dir = directory
        self._clock = clock
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.dropped: Counter[str] = Counter()
        private_dir(directory)
        self._segments: list[int] = sorted(int(p.stem) for p in directory.glob("*.seg"))
        self._cursor = self._load_cursor()
        self._next_seq = self._recover()
        self._drop_acknowledged_segments()
        self._sizes = {s: self._path(s).stat().st_size for s in self._segments}
        # Every segment is at or after the cursor's (see _drop_acknowledged_segments).
        self._unacked = sum(self._sizes.values()) - self._cursor.offset
        # (segment, offset, wall time): the record at that position, and every later one, was
        # appended at or after that time; a mark is made at most once per MARK_EVERY_S, so the
        # last mark at or before a record dates it to within that (until drops move marks).
        self._marks: deque[tuple[int, int, float]] = deque(self._marks_on_open())
        self._tail: BinaryIO | None = (
            open_appending(self._path(self._segments[-1])) if self._segments else None
        )

    # -- writing ------------------------------------------------------------------------------

    def append(self, message: Outgoing) -> None:
        record = _encode(self._next_seq, message)
        if self._tail is None or self._sizes[self._segments[-1]] >= self.segment_bytes:
            self._roll()
        assert self._tail is not None
        segment = self._segments[-1]
        now = self._clock()
        if not self._unacked:
            self._marks.clear()  # what they dated is all acknowledged
        if not self._marks or now - self._marks[-1][2] >= MARK_EVERY_S:
            self._marks.append((segment, self._sizes[segment], now))
        self._tail.write(record)
        self._tail.flush()
        self._sizes[segment] += len(record)
        self._unacked += len(record)
        self._next_seq += 1
        if self._unacked > self.max_bytes:
            self._make_room()

    def _roll(self) -> None:
        if self._tail is not None:
            self._tail.close()
        self._segments.append(self._next_seq)
        self._sizes[self._next_seq] = 0
        self._tail = open_appending(self._path(self._next_seq))

    def _make_room(self) -> None:
        """Drop the samples of the oldest segments until the spool fits, keeping their state
        changes in place (the segment is rewritten under its own name, so order holds)."""
        for first in list(self._segments[:-1]):
            if self.size_bytes() <= self.max_bytes:
                return
            kept, dropped = [], Counter[str]()
            old_at, new_at = [], []  # where each kept record was, and will be
            start = self._cursor.offset if self._cursor.segment == first else 0
            data = self._path(first).read_bytes()
            at, size = start, 0
            while (got := _read(data, at)) is not None:
                was = at
                seq, message, at = got
                if message.state_change:
                    old_at.append(was)
                    new_at.append(size)
                    kept.append(_encode(seq, message))
                    size += len(kept[-1])
                else:
                    dropped[message.stream] += 1
            if not dropped:
                continue
            body = b"".join(kept)
            tmp = self._path(first).with_suffix(".tmp")
            with open(tmp, "wb", opener=private_opener) as out:
                out.write(body)
            os.replace(tmp, self._path(first))
            self._unacked += len(body) - (self._sizes[first] - start)
            self._sizes[first] = len(body)
            if self._cursor.segment == first:
                self._save_cursor(Position(first, 0))
            self._move_marks(first, old_at, new_at)
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
        old = self._cursor
        if upto.segment == old.segment:
            self._unacked -= upto.offset - old.offset
        else:
            passed = (n for s, n in self._sizes.items() if old.segment <= s < upto.segment)
            self._unacked -= sum(passed) - old.offset + upto.offset
        self._save_cursor(upto)
        for first in list(self._segments[:-1]):
            if first >= upto.segment:
                break
            self._path(first).unlink(missing_ok=True)
            self._segments.remove(first)
            del self._sizes[first]
        if not self._unacked:
            self._marks.clear()
        self._prune_marks()

    def size_bytes(self) -> int:
        """Bytes on disk not yet acknowledged."""
        return self._unacked

    def segment_count(self) -> int:
        return len(self._segments)

    def oldest_age_s(self) -> float:
        """Seconds since the oldest unacknowledged record was appended (never less, and less
        than a second more; a lower bound for a backlog found on open); 0 when there is none."""
        if not self._unacked or not self._marks:
            return 0.0
        return max(0.0, self._clock() - self._marks[0][2])

    def empty(self) -> bool:
        return not self.peek(1)

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()
            self._tail = None

    # -- files --------------------------------------------------------------------------------

    def _path(self, first: int) -> Path:
        return self.dir / f"{first:020d}.seg"

    def _marks_on_open(self) -> list[tuple[int, int, float]]:
        """A segment was begun after its predecessor's last write; the oldest one can only be
        dated by its own last write, which makes the age of a backlog found on open a lower
        bound until the drain reaches the next segment."""
        times = [self._path(s).stat().st_mtime for s in self._segments]
        return [
            (s, self._cursor.offset if i == 0 else 0, times[max(0, i - 1)])
            for i, s in enumerate(self._segments)
        ]

    def _move_marks(self, first: int, old_at: list[int], new_at: list[int]) -> None:
        """Segment `first` was rewritten keeping the records at `old_at`, now at `new_at`: a
        mark moves to the first kept record at or after it (appended no earlier than the
        mark), or to the start of the next segment when none was kept after it."""
        following = self._segments[self._segments.index(first) + 1]

        def move(segment: int, offset: int, t: float) -> tuple[int, int, float]:
            if segment != first:
                return segment, offset, t
            i = bisect_left(old_at, offset)
            return (first, new_at[i], t) if i < len(old_at) else (following, 0, t)

        marks: deque[tuple[int, int, float]] = deque()
        for mark in sorted(move(*mark) for mark in self._marks):
            if marks and marks[-1][:2] == mark[:2]:
                marks.pop()  # marks moved onto one record: the latest dates it best
            marks.append(mark)
        self._marks = marks
        self._prune_marks()

    def _prune_marks(self) -> None:
        """Forget marks superseded by a later one at or before the next record to send (a
        cursor at the end of its segment, or of segments emptied by drops, points past them)."""
        segment, offset = self._cursor.segment, self._cursor.offset
        for following in self._segments:
            if following > segment and offset >= self._sizes[segment]:
                segment, offset = following, 0
        marks = self._marks
        while len(marks) > 1 and marks[1][:2] <= (segment, offset):
            marks.popleft()

    def _drop_acknowledged_segments(self) -> None:
        """Keep the invariant every count relies on: no segment before the cursor's, and the
        cursor in a segment on disk. A crash between saving the cursor and deleting spent
        segments leaves some behind; a cursor whose segment is gone points at nothing."""
        for first in [s for s in self._segments if s < self._cursor.segment]:
            self._path(first).unlink(missing_ok=True)
            self._segments.remove(first)
        if self._segments and self._cursor.segment != self._segments[0]:
            log.warning(
                "spool cursor points at no segment: resending from the oldest one",
                extra={"cursor": self._cursor.segment, "first_segment": self._segments[0]},
            )
            self._save_cursor(Position(self._segments[0], 0))
        elif not self._segments and self._cursor != Position(self._next_seq, 0):
            self._save_cursor(Position(self._next_seq, 0))

    def _load_cursor(self) -> Position:
        try:
            segment, offset = (self.dir / "cursor").read_text().split()
            return Position(int(segment), int(offset))
        except (OSError, ValueError):
            return Position(self._segments[0] if self._segments else 0, 0)

    def _save_cursor(self, position: Position) -> None:
        tmp = self.dir / "cursor.tmp"
        with open(tmp, "w", opener=private_opener) as out:
            out.write(f"{position.segment} {position.offset}\n")
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
