"""Trainers' step reports: the only sign in the logs that a job is still moving, and how fast.

A hang is silent until PyTorch's watchdog fires (ten minutes by default) and a gray failure
never makes NCCL complain at all; the step lines are what show both early: they stop, or they
slow down. Two families are read:

- Megatron-LM: `iteration  201/  250000 | consumed samples: ... | elapsed time per iteration
  (ms): 139113.4 | ...`, time stamped by the `[YYYY-MM-DD HH:MM:SS]` it prints before;
- torchtitan: `[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss: ...
  tps: 7,282 ...`, whose stamp has no brackets and is read here.
"""

from __future__ import annotations

import math
import re

from ..records import JobFact, LogOrigin, Progress
from .common import Malformed, Where
from .timestamps import to_ns

_MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_ELAPSED = re.compile(
    r"elapsed time per iteration \(ms\):\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\d.])"
)
_TITAN = re.compile(r"\bstep:\s*(\d+)\s")
_TPS = re.compile(r"\btps:\s*([0-9][0-9,]*(?:\.\d+)?)")
# torchtitan colours its metrics by default; the escapes would hide the field names.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TITAN_STAMP = re.compile(
    r"\[titan\] (\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
)


class ProgressRules:
    """Step lines of one file; stateless, each line stands alone."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source

    def handle(
        self, text: str, ts_ns: int, line_no: int, where: Where, stamped: bool = False
    ) -> list[JobFact]:
        """A Progress for a step line, [] for any other; Malformed when a step line's pace
        cannot be read (a format change upstream should be seen, not silently ignored).

        `stamped`: the line began with a stamp (a shipper's), which wins over torchtitan's
        own: that one is local time without a zone.
        """
        if "iteration" in text and "elapsed time per iteration" in text:
            m = _MEGATRON.search(text)
            pace = _ELAPSED.search(text)
            if m is None or pace is None:
                raise Malformed("progress", "Megatron step line without its iteration or time")
            step_ms = float(pace.group(1))
            if not (step_ms > 0 and math.isfinite(step_ms)):
                raise Malformed("progress", f"Megatron step time {pace.group(1)} ms is not > 0")
            step, total = int(m.group(1)), int(m.group(2))
            return [self._fact(ts_ns, step, step_ms, None, line_no, where, total)]
        if "step:" in text and "tps:" in text:
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            if "validat" in text:
                return []  # a validation pass: forward only, its own counter and pace
            m = _TITAN.search(text)
            tps = _TPS.search(text)
            if m is None or tps is None:
                raise Malformed("progress", "torchtitan step line without its step or tps")
            rate = float(tps.group(1).replace(",", ""))
            if not rate > 0:
                raise Malformed("progress", f"torchtitan tps {tps.group(1)} is not > 0")
            stamp = None if stamped else _TITAN_STAMP.search(text)
            if stamp is not None:
                y, mo, d, hh, mm, ss, frac = stamp.groups()
                try:
                    ts_ns = to_ns(int(y), int(mo), int(d), (int(hh), int(mm), int(ss)), frac)
                except ValueError as exc:
                    raise Malformed("progress", f"torchtitan stamp unreadable: {exc}") from exc
            return [self._fact(ts_ns, int(m.group(1)), None, rate, line_no, where)]
        return []

    def _fact(
        self,
        ts_ns: int,
        step: int,
        step_ms: float | None,
        tokens_per_s: float | None,
        line_no: int,
        where: Where,
        total: int | None = None,
    ) -> Progress:
        return Progress(
            ts_ns,
            self._job_id,
            where.host or None,
            step,
            step_ms,
            tokens_per_s,
            LogOrigin(self._source, line_no),
            total,
        )
