"""Bytes as the readers see them: a file's text as the capture reader decodes it, a CSV row
as NetBox writes it. Inputs are built as bytes and handed over through these, so that what a
reader gets is what it would get from a real file."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence


def text_as_read(data: bytes) -> str:
    """What the capture reader makes of a file's bytes: `Path.read_text(errors="replace")`,
    which also turns CRLF and lone CRs into newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()


def csv_line(fields: Sequence[str]) -> bytes:
    """One CSV record as NetBox writes it (fields holding a comma, quote or newline quoted)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow(fields)
    return buf.getvalue().removesuffix("\r\n").encode()
