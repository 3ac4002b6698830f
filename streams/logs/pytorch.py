"""PyTorch's side of a failure: watchdog timeouts and the NCCL errors it rethrows.

PyTorch repeats itself: the same `WorkNCCL(...)` text is logged by the watchdog, again in the
`what():` of the exception that kills the process, and again in the Python traceback. Facts
are therefore emitted once per (rank, seq, op) for timeouts, and once per (kind, peer, time,
process) for errors, so a single stall does not look like several.

Those repeats follow each other within a few lines, so the memory of what was reported only
needs to reach back a little way: it is capped (see MAX_TIMEOUTS_PER_RANK, MAX_TIMEOUT_RANKS,
MAX_ERRORS_SEEN) so a job that keeps timing out for weeks keeps a fixed-size state.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import CollectiveTimeout, JobFact, LogOrigin, NetError
from .common import Malformed, Where, remember
from .netmsg import classify, classify_exception

_ANCHOR = "operation timeout: WorkNCCL("
_RAN_FOR = re.compile(r"\)\s*ran for (\d+) millisecond")
_SEQ = re.compile(r"SeqNum=(\d+)")
_OP = re.compile(r"OpType=(\w+)")
_TIMEOUT = re.compile(r"Timeout\(ms\)=(\d+)")
_RANK_TAG = re.compile(r"Rank (\d+)\]\s*Watchdog caught")
_TORCHRUN_RANK = re.compile(r"\[rank(\d+)\]:")
_TORCHRUN_PREFIX = re.compile(r"^\s*\[rank\d+\]:\s?")
_LAST_ERROR = "Last error:"
_NS_PER_MS = 1_000_000

#: Timeouts remembered per rank, the oldest forgotten first. The watchdog line, the `what():` and
#: the traceback of one timeout come together; a rank only interleaves a few (one per process
#: group that stalls at once), so 16 leaves ample room. An older (seq, op) that is printed
#: again after 16 newer ones of its rank is reported a second time.
MAX_TIMEOUTS_PER_RANK = 16
#: Ranks whose timeouts are remembered (the least recently timed-out rank forgotten first). A
#: file normally carries one rank or one node's eight, so this only matters for a whole-job
#: log, where a rank's repeats would have to be more than 512 other ranks' timeouts apart.
MAX_TIMEOUT_RANKS = 512
#: Rethrown errors remembered, the oldest forgotten first. Their key includes the time, and
#: repeats share the time of the first copy, so only the latest few can ever match again.
MAX_ERRORS_SEEN = 256


class TorchRules:
    """Watchdog timeouts and rethrown NCCL errors of one file, each reported once."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        # rank -> {(seq, op)}, both levels in recency order (see `remember`).
        self._timeouts_seen: dict[int | None, dict[tuple[int | None, str], None]] = {}
        self._errors_seen: dict[tuple[str, str | None, int, str, int], None] = {}
        self._awaiting_last_error = False

    def snapshot(self) -> dict[str, Any]:
        """The dedup memory and the pending `Last error:` flag as plain JSON, oldest first."""
        return {
            "timeouts_seen": [
                [rank, [[seq, op] for seq, op in seen]]
                for rank, seen in self._timeouts_seen.items()
            ],
            "errors_seen": [list(key) for key in self._errors_seen],
            "awaiting_last_error": self._awaiting_last_error,
        }

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the state written by `snapshot` (into a fresh instance)."""
        for rank, pairs in snap["timeouts_seen"]:
            seen: dict[tuple[int | None, str], None] = {}
            for seq, op in pairs:
                remember(seen, (_opt_int(seq), str(op)), None, MAX_TIMEOUTS_PER_RANK)
            remember(self._timeouts_seen, _opt_int(rank), seen, MAX_TIMEOUT_RANKS)
        for kind, peer, ts_ns, host, pid in snap["errors_seen"]:
            key = (str(kind), None if peer is None else str(peer), int(ts_ns), str(host), int(pid))
            remember(self._errors_seen, key, None, MAX_ERRORS_SEEN)
        self._awaiting_last_error = bool(snap["awaiting_last_error"])

    def handle(self, text: str, ts_ns: int, line_no: int, where: Where) -> list[JobFact]:
        """Facts from a line without an NCCL prefix; [] when it is not PyTorch's business."""
        if self._awaiting_last_error:
            body = _TORCHRUN_PREFIX.sub("", text, count=1).strip()
            if not body:
                return []
            self._awaiting_last_error = False
            found = None
            if "WorkNCCL(" not in text and classify_exception(body) is None:
                found = classify(body)
            if found is not None:
                return self._error(found[0], found[1], body, ts_ns, line_no, where)
            # Not the error text `Last error:` announced (a stray one, or the text never
            # came): the line is read as itself, a watchdog timeout perhaps.
        if "WorkNCCL(" in text:
            return self._timeout(text, ts_ns, line_no, where)
        # Every error-code text and "Last error:" contain "rror"; cheap exit for all other lines.
        if "rror" not in text and "etry count" not in text:
            return []
        body = _TORCHRUN_PREFIX.sub("", text, count=1).strip()
        kind = classify_exception(body)
        if kind is not None:
            peer = None
            at = body.find(_LAST_ERROR)
            if at >= 0:
                rest = body[at + len(_LAST_ERROR) :].strip()
                if rest:
                    found = classify(rest)
                    peer = found[1] if found else None
                else:
                    self._awaiting_last_error = True
            return self._error(kind, peer, body, ts_ns, line_no, where)
        if body.endswith(_LAST_ERROR):
            self._awaiting_last_error = True
            return []
        if "etry count" in body:
            found = classify(body)
            if found is not None:
                return self._error(found[0], found[1], body, ts_ns, line_no, where)
        return []

    def _error(
        self, kind: str, peer: str | None, detail: str, ts_ns: int, line_no: int, where: Where
    ) -> list[JobFact]:
        key = (kind, peer, ts_ns, where.host, where.pid)
        if key in self._errors_seen:
            return []
        remember(self._errors_seen, key, None, MAX_ERRORS_SEEN)
        origin = LogOrigin(self._source, line_no)
        return [NetError(ts_ns, self._job_id, where.host, where.pid, kind, peer, detail, origin)]

    def _timeout(self, text: str, ts_ns: int, line_no: int, where: Where) -> list[JobFact]:
        at = text.find(_ANCHOR)
        if at < 0:
            return []
        body = text[at + len(_ANCHOR) :]
        ran = _RAN_FOR.search(body)
        fields = body[: ran.start()] if ran else body
        seq_m, op_m, timeout_m = _SEQ.search(fields), _OP.search(fields), _TIMEOUT.search(fields)
        if seq_m is None and op_m is None:
            raise Malformed(
                "torch-watchdog", "watchdog timeout without SeqNum or OpType in WorkNCCL(...)"
            )
        rank_m = _RANK_TAG.search(text) or _TORCHRUN_RANK.search(text)
        rank = int(rank_m.group(1)) if rank_m else None
        seq = int(seq_m.group(1)) if seq_m else None
        op = op_m.group(1) if op_m else ""
        seen = self._timeouts_seen.get(rank)
        if seen is not None and (seq, op) in seen:
            return []
        if seen is None:
            seen = {}
        remember(self._timeouts_seen, rank, seen, MAX_TIMEOUT_RANKS)
        remember(seen, (seq, op), None, MAX_TIMEOUTS_PER_RANK)
        ran_for = int(ran.group(1)) if ran else None
        # A file that has shown no time yet gives ts 0 ("unknown"); keep the start unknown too.
        started = ts_ns - ran_for * _NS_PER_MS if ran_for is not None and ts_ns else ts_ns
        return [
            CollectiveTimeout(
                ts_ns,
                self._job_id,
                where.host or None,
                rank,
                seq,
                op,
                int(timeout_m.group(1)) if timeout_m else None,
                ran_for,
                started,
                LogOrigin(self._source, line_no),
            )
        ]


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
