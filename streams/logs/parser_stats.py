"""What a parser counts of its input, and the dead letters it reports for lines it could not
read, so that losses are visible rather than silent.

Apart from the parser because its callers read the counts and drain the dead letters (the
replay, the stream worker, the Xid collector, the host log scraper); the rest of its state is
its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import DeadLetter
from .common import Malformed

#: Bytes of a malformed line kept in its DeadLetter, enough to recognise it, bounded in memory.
MAX_DEAD_LETTER_RAW = 4096


@dataclass
class ParseStats:
    """What happened to the input, so losses are visible rather than silent.

    Every line parsed is counted once in `lines`: `malformed` if it produced a DeadLetter (a
    cut-off line may still yield facts, counted in `facts`), else `skipped` if it yielded no
    fact. A line not parsed because its position was already consumed (a redelivery after a
    crash) is counted only in `redelivered`.
    """

    lines: int = 0
    facts: int = 0
    skipped: int = 0
    malformed: int = 0
    redelivered: int = 0
    #: Every DeadLetter not yet taken: the owner drains them (`take_dead_letters`) as it
    #: stores them, so that all are stored and memory stays bounded by what it feeds at once.
    dead_letters: list[DeadLetter] = field(default_factory=list)

    def take_dead_letters(self) -> list[DeadLetter]:
        taken, self.dead_letters = self.dead_letters, []
        return taken


def dead_letter(
    problem: Malformed, line: str | bytes, line_no: int, source: str, job_id: str
) -> DeadLetter:
    """The DeadLetter of a line of `source` that `problem` kept from being read, with its
    first MAX_DEAD_LETTER_RAW bytes."""
    raw = line if isinstance(line, bytes) else line.encode("utf-8", "backslashreplace")
    return DeadLetter(
        source=source,
        reason=problem.reason,
        raw=raw[:MAX_DEAD_LETTER_RAW],
        line_no=line_no,
        extra={"rule": problem.rule, "job_id": job_id},
    )
