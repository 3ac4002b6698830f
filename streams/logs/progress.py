"""Trainers' step reports: the only sign in the logs that a job is still moving, and how fast.

A hang is silent until PyTorch's watchdog fires (ten minutes by default) and a gray failure
never makes NCCL complain at all; the step lines are what show both early: they stop, or they
slow down. These families are read:

- Megatron-LM: `iteration  201/  250000 | consumed samples: ... | elapsed time per iteration
  (ms): 139113.4 | ...`, time stamped by the `[YYYY-MM-DD HH:MM:SS]` it prints before;
- torchtitan: `[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss: ...
  tps: 7,282 ...`, whose stamp has no brackets and is read here;
- NeMo 2's progress printer: `Training epoch 0, iteration 120/149 | lr: ... | global_step: 120
  | ... | train_step_timing in s: 0.03146`;
- DeepSpeed's throughput timer: `epoch=0/micro_step=34/global_step=34,
  RunningAvgSamplesPerSec=..., CurrSamplesPerSec=8.009...` (before 0.8: `0/17,
  RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...`). Its pace is in samples per second, kept
  in `tokens_per_s` as the job's own throughput unit, for comparison with the job's earlier
  reports only (a job that also prints a step time, Megatron-DeepSpeed's line or the Trainer's
  bar, has two kinds of report, not to be judged together). Its `step=10, skipped=0,
  lr=[...]` lines carry no pace, and the older `0/40, SamplesPerSec=...` is an average since
  the start, which hides a slowdown: neither is a report;
- nanoGPT and lit-llama: `iter 1631: loss 4.0863, time 561.94ms` (lit-llama: `time: ...ms,
  speed: 1771 toks/s/device`), the time of the last iteration; their `step 250: train loss
  ..., val loss ...` evaluation lines carry no pace;
- nanochat: `step 00004/21400 (0.02%) | loss: ... | dt: 989.44ms | tok/sec: 529,882 | ...`,
  counting from 0, so the last step it prints is the one before its total; its midtraining
  prints no total, and build-nanogpt the step alone (`step     4 | loss: ... | dt: ...`). Its
  `Step 00250 | Validation bpb: ...` lines carry no pace;
- tqdm progress bars of PyTorch Lightning (NeMo 1 too) and of Hugging Face Transformers'
  Trainer, see `progress_bars`. The Trainer's `{'loss': ..., 'epoch': ...}` dicts carry no
  step time and are not reports.
"""

from __future__ import annotations

import math
import re

from ..records import JobFact, LogOrigin, Progress
from .common import Malformed, Where
from .progress_bars import positive, read_bar
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
_NEMO = re.compile(r"\bTraining epoch \d+, iteration (\d+)/(\d+) \|")
_NEMO_TIMING = re.compile(r"\btrain_step_timing in s: ([^\s|]*)")
# The global step (since 0.8) or, before, the step count after the epoch.
_DS_STEP = re.compile(r"(?:/global_step=|\b\d+/)(\d+), RunningAvgSamplesPerSec=")
_DS_RATE = re.compile(r"\bCurrSamplesPerSec=([^,\s]*)")
# nanoGPT / lit-llama: the loss right after the iteration is what tells the line apart from
# any other `iter N:`; the time after it (forks add fields between), with or without its
# colon, is the pace.
_ITER = re.compile(r"\biter (\d+): loss .*?, time:? ([^,\s]+)")
_ITER_SPEED = re.compile(r", speed: ([^,\s]*) toks/s")
# nanochat: the step, its total and the share done when printed, the loss, then the step time.
_NANOCHAT = re.compile(
    r"\bstep +(\d+)(?:/(\d+))?(?: \([^()|]*%[^()|]*\))? \| loss: .*?\| dt: ([^|\s]*)"
)
_NANOCHAT_TPS = re.compile(r"\| tok/sec: ([^|\s]*)")


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
        if "train_step_timing in s: " in text:
            return [self._nemo(text, ts_ns, line_no, where)]
        if "CurrSamplesPerSec=" in text:
            return [self._deepspeed(text, ts_ns, line_no, where)]
        if ": loss " in text and "iter " in text:
            m = _ITER.search(text)
            if m is not None:
                return [self._nanogpt(m, text, ts_ns, line_no, where)]
        if "| dt: " in text and "step " in text:
            m = _NANOCHAT.search(text)
            if m is not None:
                return [self._nanochat(m, text, ts_ns, line_no, where)]
        bar = read_bar(text)
        if bar is None:
            return []
        return [self._fact(ts_ns, bar.step, bar.step_ms, None, line_no, where, bar.total)]

    def _nemo(self, text: str, ts_ns: int, line_no: int, where: Where) -> Progress:
        """NeMo 2's line; its iteration counts up to `max_steps` when the run sets one, as
        NeMo 2's LLM recipes do."""
        m = _NEMO.search(text)
        timing = _NEMO_TIMING.search(text)
        if m is None or timing is None:
            raise Malformed("progress", "NeMo step line without its iteration or step time")
        step_ms = 1000.0 * positive(timing.group(1), "NeMo train_step_timing")
        return self._fact(ts_ns, int(m.group(1)), step_ms, None, line_no, where, int(m.group(2)))

    def _deepspeed(self, text: str, ts_ns: int, line_no: int, where: Where) -> Progress:
        """DeepSpeed's throughput line: `CurrSamplesPerSec` is the last step's, the running
        average would hide a slowdown behind the job's whole history."""
        m = _DS_STEP.search(text)
        rate = _DS_RATE.search(text)
        if m is None or rate is None:
            raise Malformed("progress", "DeepSpeed throughput line without its step or rate")
        samples_per_s = positive(rate.group(1), "DeepSpeed CurrSamplesPerSec")
        return self._fact(ts_ns, int(m.group(1)), None, samples_per_s, line_no, where)

    def _nanogpt(
        self, m: re.Match[str], text: str, ts_ns: int, line_no: int, where: Where
    ) -> Progress:
        """nanoGPT's (and lit-llama's) line; lit-llama adds its throughput per device."""
        step_ms = _ms(m.group(2), "nanoGPT iteration time")
        speed = _ITER_SPEED.search(text)
        tokens_per_s = None if speed is None else positive(speed.group(1), "lit-llama speed")
        return self._fact(ts_ns, int(m.group(1)), step_ms, tokens_per_s, line_no, where)

    def _nanochat(
        self, m: re.Match[str], text: str, ts_ns: int, line_no: int, where: Where
    ) -> Progress:
        """nanochat's line. Its step is the index of the step just done, from 0: of a run of
        `total` steps the last it prints is `total - 1`, the step the run ends at."""
        step_ms = _ms(m.group(3), "nanochat dt")
        tps = _NANOCHAT_TPS.search(text)
        rate = None if tps is None else positive(tps.group(1).replace(",", ""), "nanochat tok/sec")
        total = None if m.group(2) is None else int(m.group(2)) - 1
        return self._fact(ts_ns, int(m.group(1)), step_ms, rate, line_no, where, total)

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


def _ms(value: str, what: str) -> float:
    """A time printed as `561.94ms`, in ms; Malformed for another unit or no number > 0."""
    if not value.endswith("ms"):
        raise Malformed("progress", f"{what} {value!r} is not in ms")
    return positive(value[:-2], what)


def latest_reports(facts: list[JobFact]) -> list[JobFact]:
    """The facts of one input line without the step reports that a later one of the same
    instant replaces.

    A progress bar redraws its line with CR, so one line can hold hundreds of renders, all
    carrying the line's one time (the stamp a shipper put before it, or the last one seen).
    Of reports at one instant only the newest is true of it; the pace check would otherwise
    keep the oldest, as it ignores a report no newer than the last it took.
    """
    newest: set[int] = set()
    kept: list[JobFact] = []
    for fact in reversed(facts):
        if isinstance(fact, Progress):
            if fact.ts_ns in newest:
                continue
            newest.add(fact.ts_ns)
        kept.append(fact)
    kept.reverse()
    return kept
