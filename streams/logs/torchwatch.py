"""What PyTorch's ProcessGroupNCCL watchdog says besides the timeout itself: how far each rank's
process group got, the heartbeat monitor's abort, and the process being taken down.

The wording changed with nearly every release (the ProcessGroupNCCL.cpp of each version):

- 2.2 to 2.4: `[PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at
  work: 7753, last enqueued NCCL work: 7755, last completed NCCL work: 7752.` and
  `Timeout at NCCL work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.`
- 2.5 to 2.9: `[PG ID 0 PG GUID 0(default_pg) Rank 118]  failure detected by watchdog at work
  sequence id: 2398459 PG status: last enqueued work: 2398578, last completed work: 2398458`
- 2.4 on, on the ranks that did not time out themselves: `Received a dump signal due to a
  collective timeout from  rank 7 ... Last enqueued NCCL work: 56116, last completed NCCL work:
  56116.`
- 2.2 on, the heartbeat monitor: `ProcessGroupNCCL's watchdog got stuck for 600 seconds
  without making progress ...` (after `Heartbeat monitor timed out!`, which says no more).
- every version: `To avoid data inconsistency, we are taking the entire process down.`, and
  2.5 on `Terminating the process after attempting to dump debug info ...`.

Each is reported once per rank and process group (2.4 prints both failure lines for one work,
and a rank is taken down once whichever of the two teardown lines it prints).
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, LogOrigin, WatchdogState
from .common import Where, remember

_TAG = re.compile(r"\[PG (?:ID \d+ PG GUID )?(\d+)(?:\s*\(([^)\]]*)\))? Rank (\d+)\]")
_PLAIN_TAG = re.compile(r"\[Rank (\d+)\]")
_TORCHRUN_RANK = re.compile(r"\[rank(\d+)\]:")
_FAILURE = re.compile(
    r"(?:detected by watchdog at work(?: sequence id)?|Timeout at NCCL work):\s*(-?\d+)"
)
_ENQUEUED = re.compile(r"last enqueued (?:NCCL )?work:\s*(-?\d+)", re.IGNORECASE)
_COMPLETED = re.compile(r"last completed (?:NCCL )?work:\s*(-?\d+)", re.IGNORECASE)
_STUCK = re.compile(r"watchdog got stuck for (\d+) seconds")
_DUMP = "Received a dump signal"
_TEARDOWN = ("taking the entire process down", "Terminating the process after attempting to dump")
#: Reports remembered to say each once, the oldest forgotten first: a rank prints its few
#: within a few lines, and a file holds one rank or one node's eight.
MAX_SEEN = 512
#: Detail kept of a line, enough to recognise it: the heartbeat's message runs to 700 bytes.
MAX_DETAIL = 240


class WatchdogRules:
    """WatchdogState facts of one file, each reported once."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        self._seen: dict[tuple[str, int | None, str, int | None], None] = {}

    def snapshot(self) -> dict[str, Any]:
        """The reports already made, oldest first, as plain JSON."""
        return {"seen": [list(key) for key in self._seen]}

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the state written by `snapshot`."""
        for pg, rank, kind, seq in snap["seen"]:
            key = (str(pg), _opt_int(rank), str(kind), _opt_int(seq))
            remember(self._seen, key, None, MAX_SEEN)

    def handle(self, text: str, ts_ns: int, line_no: int, where: Where) -> list[JobFact]:
        """A WatchdogState for a line that says how far a rank got or that it is aborting;
        [] for any other line (the cheap test first: most lines are none of these)."""
        if "work" not in text and "atchdog" not in text and "process" not in text:
            return []
        seq = enqueued = completed = stuck = None
        if (m := _FAILURE.search(text)) is not None:
            kind, seq = "failure", int(m.group(1))
        elif _DUMP in text:
            kind = "dump"
        elif (m := _STUCK.search(text)) is not None:
            kind, stuck = "heartbeat", int(m.group(1))
        elif any(mark in text for mark in _TEARDOWN):
            kind = "teardown"
        else:
            return []
        if kind in ("failure", "dump"):
            e, c = _ENQUEUED.search(text), _COMPLETED.search(text)
            enqueued = None if e is None else int(e.group(1))
            completed = None if c is None else int(c.group(1))
        pg, rank = _group_and_rank(text)
        # A process is taken down once, whichever line says it and under whichever tag.
        key = ("" if kind == "teardown" else pg, rank, kind, seq)
        if key in self._seen:
            return []
        remember(self._seen, key, None, MAX_SEEN)
        # What follows the c10 prefix (`[E603 17:48:01.005 ProcessGroupNCCL.cpp:2268]`), if any.
        source = text.find("ProcessGroupNCCL")
        at = text.find("]", source) if source >= 0 else -1
        detail = text[at + 1 :].strip() if at >= 0 else text.strip()
        return [
            WatchdogState(
                ts_ns,
                self._job_id,
                where.host or None,
                rank,
                pg,
                kind,
                seq,
                enqueued,
                completed,
                stuck,
                detail[:MAX_DETAIL],
                LogOrigin(self._source, line_no),
            )
        ]


def _group_and_rank(text: str) -> tuple[str, int | None]:
    """The process group as its tag names it and the rank: the launcher's `[rankN]:` (the
    global rank) when there is one, else the tag's rank in the group."""
    pg, rank = "", None
    if (tag := _TAG.search(text)) is not None:
        guid, name, in_group = tag.groups()
        pg, rank = (f"{guid}({name.strip()})" if name else guid), int(in_group)
    elif (plain := _PLAIN_TAG.search(text)) is not None:
        rank = int(plain.group(1))
    if (launcher := _TORCHRUN_RANK.search(text)) is not None:
        rank = int(launcher.group(1))
    return pg, rank


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
