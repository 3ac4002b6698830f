"""A raw input line made into text the rules can read: within a length, without its newline
or NUL bytes, decoded whatever its bytes.

Apart from the parser because the host scraper's tail cuts long lines by the same rule
(`bounded`), and neither should carry the other's state to share it.
"""

from __future__ import annotations

from typing import TypeVar

#: Longest line parsed; anything beyond is cut off (and reported) so one runaway line cannot
#: stall the stream or blow up memory; a progress bar's line keeps its newest renders instead
#: (`bounded`).
MAX_LINE_BYTES = 64 * 1024
_Text = TypeVar("_Text", str, bytes)


def decode(line: str | bytes) -> tuple[str, bool]:
    """The text of a line within MAX_LINE_BYTES, without its newline or NUL bytes, and whether
    it had to be cut (not when it only lost bar renders a later one overwrote)."""
    if isinstance(line, bytes):
        kept, cut = bounded(line.rstrip(b"\r\n"), MAX_LINE_BYTES)
        text = kept.decode("utf-8", errors="replace")
    else:
        text, cut = bounded(line.rstrip("\r\n"), MAX_LINE_BYTES)
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text, cut


def bounded(raw: _Text, limit: int) -> tuple[_Text, bool]:
    """`raw` within `limit`, and whether anything was lost but bar renders a later render
    overwrote: a progress bar's line keeps its first piece (a shipper's stamp, srun's label)
    and its newest renders after carriage returns, as a terminal shows the newest; any other
    line keeps its first `limit`. Shared by the parser and the host scraper's tail, so both
    keep the same part of a long line."""
    if len(raw) <= limit:
        return raw, False
    cr = b"\r" if isinstance(raw, bytes) else "\r"
    first = raw.find(cr)
    if 0 <= first <= limit // 2:
        tail = raw.find(cr, len(raw) - (limit - first))
        if tail > first:
            return raw[:first] + raw[tail:], False
    return raw[:limit], True
