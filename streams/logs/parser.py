"""One input file (or stream) of a job's ranks, fed line by line, turned into JobFacts.

The parser never raises on input: whatever arrives (binary junk, NUL bytes, invalid UTF-8,
megabyte lines), the good lines around it still yield their facts, and a line that clearly
meant something but could not be read becomes a DeadLetter that says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..records import DeadLetter, JobFact
from .common import NOWHERE, Malformed, Where
from .kernel import KernelRules
from .nccl import NcclRules, match_prefix
from .pytorch import TorchRules
from .ras import RasRules
from .timestamps import Clock

#: Longest line parsed; anything beyond is cut off (and reported) so one runaway line cannot
#: stall the stream or blow up memory.
MAX_LINE_BYTES = 64 * 1024
#: DeadLetters kept per parser; later ones are counted in `malformed` but not stored.
MAX_DEAD_LETTERS = 1000
#: Bytes of a malformed line kept in its DeadLetter, enough to recognise it, bounded in memory.
MAX_DEAD_LETTER_RAW = 4096
_PIECES = re.compile(r"\r\n?|\n")


@dataclass
class ParseStats:
    """What happened to the input, so losses are visible rather than silent.

    Every line is counted once: `malformed` if it produced a DeadLetter (a cut-off line may
    still yield facts, counted in `facts`), else `skipped` if it yielded no fact.
    """

    lines: int = 0
    facts: int = 0
    skipped: int = 0
    malformed: int = 0
    dead_letters: list[DeadLetter] = field(default_factory=list)


class LogParser:
    """Stateful per input file: carries the last timestamp, the year, the current communicator
    per (host, pid, tid), and the host of the last NCCL line (lent to PyTorch and kernel lines).
    """

    def __init__(self, job_id: str, source: str, year_hint: int | None = None) -> None:
        self.job_id = job_id
        self.source = source
        self.stats = ParseStats()
        self._clock = Clock(year_hint)
        self._where = NOWHERE
        self._nccl = NcclRules(job_id, source)
        self._torch = TorchRules(job_id, source)
        self._kernel = KernelRules(job_id, source)
        self._ras = RasRules(job_id, source)

    def feed(self, line: str | bytes) -> list[JobFact]:
        """Facts of one input line (a trailing newline is ignored). Never raises."""
        stats = self.stats
        stats.lines += 1
        line_no = stats.lines
        facts: list[JobFact] = []
        problem: Malformed | None = None
        try:
            text, size = _decode(line)
            if size > MAX_LINE_BYTES:
                unit = "bytes" if isinstance(line, bytes) else "characters"
                problem = Malformed(
                    "line-length",
                    f"line of {size} {unit} cut to the first {MAX_LINE_BYTES} before parsing",
                )
            # Progress bars rewrite their line with CR, and a caller may hand over a chunk
            # with several lines: each piece is parsed as a line of its own.
            pieces = _PIECES.split(text) if "\r" in text or "\n" in text else (text,)
            for piece in pieces:
                try:
                    facts.extend(self._piece(piece, line_no))
                except Malformed as exc:
                    problem = problem or exc
        except Exception as exc:  # the contract is "never raises": report it instead
            problem = Malformed("internal", f"parser error {type(exc).__name__}: {exc}")
        stats.facts += len(facts)
        if problem is not None:
            stats.malformed += 1
            if len(stats.dead_letters) < MAX_DEAD_LETTERS:
                stats.dead_letters.append(self._dead_letter(problem, line, line_no))
        elif not facts:
            stats.skipped += 1
        return facts

    def _piece(self, text: str, line_no: int) -> list[JobFact]:
        prefixed = match_prefix(text) if " NCCL " in text else None
        found, lead_end = self._clock.stamp(text, c10=prefixed is None)
        ts_ns = found if found is not None else self._clock.last_ns
        if prefixed is not None:
            if prefixed.host != self._where.host or prefixed.pid != self._where.pid:
                self._where = Where(prefixed.host, prefixed.pid)
            return self._nccl.handle(prefixed, ts_ns, line_no)
        if "NVRM: Xid" in text:
            return self._kernel.handle(text, lead_end, ts_ns, line_no, self._where)
        body = text[lead_end:]
        facts = self._torch.handle(body, ts_ns, line_no, self._where)
        return facts or self._ras.handle(body, ts_ns, line_no)

    def _dead_letter(self, problem: Malformed, line: str | bytes, line_no: int) -> DeadLetter:
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "backslashreplace")
        return DeadLetter(
            source=self.source,
            reason=problem.reason,
            raw=raw[:MAX_DEAD_LETTER_RAW],
            line_no=line_no,
            extra={"rule": problem.rule, "job_id": self.job_id},
        )


def _decode(line: str | bytes) -> tuple[str, int]:
    """The text of a line, capped, without its newline or NUL bytes, and its original size."""
    if isinstance(line, bytes):
        size = len(line)
        text = line[:MAX_LINE_BYTES].decode("utf-8", errors="replace")
    else:
        size = len(line)
        text = line[:MAX_LINE_BYTES]
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text.rstrip("\r\n"), size


def parse_lines(
    lines: Iterable[str | bytes], *, job_id: str, source: str, year_hint: int | None = None
) -> tuple[list[JobFact], ParseStats]:
    """Parse a whole file's lines with one LogParser; returns the facts in input order."""
    parser = LogParser(job_id, source, year_hint)
    facts: list[JobFact] = []
    for line in lines:
        facts.extend(parser.feed(line))
    return facts, parser.stats
