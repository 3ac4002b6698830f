"""One open log file read forward in whole lines, and the signs that it was rotated or cut.

A `Tail` holds the file open by descriptor, so a file renamed away by logrotate can still be
read to its end while the path already names a new file. It splits on b"\\n" only (as
`railtrace replay --kafka` does, so line numbers agree), returns each complete line with the
byte offset just after its newline (the offset to resume from once that line is delivered),
and keeps an unfinished last line back until its newline arrives. A line longer than
`max_line_bytes` is cut, except a progress bar's: tqdm redraws its line after a carriage
return at every step and ends it only with a log message, so it keeps its first piece (a
shipper's stamp, srun's label) and its newest renders, by the parser's own rule (`bounded`).

Content identity: a file's device and inode name it while it is open, and its first bytes
(`head`) recognise it across restarts, when an inode number may have been reused or the file
truncated and regrown past the old offset.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from railtrace.streams.logs import bounded

log = logging.getLogger(__name__)

#: Bytes at the start of a file remembered to recognise the same content later.
HEAD_BYTES = 64


@dataclass(frozen=True, slots=True)
class Line:
    """A complete line (without its newline) and the byte offset just after it."""

    text: str
    end: int
    cut: bool = False


def decode(raw: bytes) -> str:
    """Text of a line as the replay path decodes it: UTF-8, bad bytes replaced."""
    return raw.decode("utf-8", errors="replace")


class Tail:
    """An open file read forward from a byte offset; see the module docstring."""

    def __init__(self, path: str, fd: int, offset: int, max_line_bytes: int) -> None:
        st = os.fstat(fd)
        self.path = path
        self.fd = fd
        self.dev = st.st_dev
        self.ino = st.st_ino
        self.pos = offset  # bytes consumed: complete lines and the pending tail
        self._pending = bytearray()
        self._pending_cut = False
        self._max_line = max_line_bytes
        self.head = os.pread(fd, HEAD_BYTES, 0)

    @classmethod
    def open(cls, path: str, offset: int, max_line_bytes: int) -> Tail | None:
        """The file at `path` opened at `offset`, or None if it cannot be opened now."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            log.debug("cannot open log file", extra={"path": path, "error": str(exc)})
            return None
        try:
            return cls(path, fd, offset, max_line_bytes)
        except OSError:
            os.close(fd)
            return None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @property
    def identity(self) -> tuple[int, int]:
        return (self.dev, self.ino)

    @property
    def has_pending(self) -> bool:
        return bool(self._pending) or self._pending_cut

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def replaced(self, committed: int) -> bool:
        """True when the content was cut since it was read: the file is shorter than what was
        read (copytruncate, `> file`), or it was cut and has regrown past that point, which
        shows as other first bytes or no newline just before the committed offset."""
        size = self.size()
        if size < self.pos:
            return True
        if size == self.pos:
            return False
        if self.head and os.pread(self.fd, len(self.head), 0) != self.head:
            return True
        return committed > 0 and os.pread(self.fd, 1, committed - 1) != b"\n"

    def refresh_head(self) -> None:
        """Remember more of the first bytes while the file is still shorter than HEAD_BYTES."""
        if len(self.head) < HEAD_BYTES:
            self.head = os.pread(self.fd, HEAD_BYTES, 0)

    def read(self, limit: int) -> list[Line]:
        """The complete lines among the next `limit` bytes (fewer at end of file)."""
        data = os.pread(self.fd, limit, self.pos)
        if not data:
            return []
        start_pos = self.pos
        self.pos += len(data)
        self.refresh_head()
        lines: list[Line] = []
        begin = 0
        while True:
            nl = data.find(b"\n", begin)
            if nl < 0:
                self._keep(data[begin:])
                break
            self._keep(data[begin:nl])
            lines.append(Line(decode(bytes(self._pending)), start_pos + nl + 1, self._pending_cut))
            self._pending.clear()
            self._pending_cut = False
            begin = nl + 1
        return lines

    def take_partial(self) -> Line | None:
        """The unfinished last line, as a line of its own: for a file that will not grow again
        (rotated away, cut, or gone). None if there is none."""
        if not self.has_pending:
            return None
        line = Line(decode(bytes(self._pending)), self.pos, self._pending_cut)
        self._pending.clear()
        self._pending_cut = False
        return line

    def _keep(self, piece: bytes) -> None:
        if self._pending_cut:
            return
        self._pending += piece
        if len(self._pending) > self._max_line:
            kept, self._pending_cut = bounded(bytes(self._pending), self._max_line)
            self._pending[:] = kept
