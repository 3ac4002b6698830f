"""tqdm progress bars of training loops: the only step report PyTorch Lightning (NeMo 1 too) and
Hugging Face Transformers' Trainer print by default.

- Lightning: `Epoch 0:  12%|█▏   | 120/1000 [00:45<05:30,  2.66it/s, v_num=0, loss=2.3]`, its
  step count restarting every epoch; NeMo 1 drops the rate and adds `train_step_timing in s=X`
  to the postfix. Its other bars (`Validation DataLoader 0:`, `Sanity Checking`, `Testing`) and
  any other described bar (`Loading checkpoint shards:`) are not training steps.
- Trainer: a bar without a description, `  5%|▌  | 50/1000 [01:23<26:12,  1.66s/it]`, counting
  optimizer steps up to `max_steps`. Its evaluation bar looks the same but is drawn one row
  below (tqdm ends each of its renders with the cursor-up escape `ESC[A`), which is what tells
  them apart; an evaluation-only run's bar cannot be told from a training one.

Without a terminal the bar may lose its `|███|` part (`  4% 99/2238 [...]`), a copy of the log
may number its lines (`[1745]   1%|...`), and a syslog relay may escape the carriage return as
`#015` and ESC as `#033`; all of these are read. A render is a report only when it carries a
pace; the first ones say `?it/s`, and an HF loss dict (`{'loss': ...}`) carries none at all,
so those yield nothing rather than a made-up pace.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .common import Malformed

_TIME = r"\d+(?::\d\d)+"
# n/total (or n and "it" when the total is unknown), then [elapsed<remaining, rate, postfix];
# a trailing cursor-up marks a bar drawn below another one (an evaluation bar).
_TAIL = (
    r"\s*(?P<n>\d+)(?:/(?P<total>\d+|\?)|it)"
    rf" \[(?P<elapsed>{_TIME})(?:<(?:{_TIME}|\?))?(?P<rest>[^\]]*)\]"
    r"(?P<nested>\s*(?:\x1b|#033)?\[A)?"
)
_LIGHTNING = re.compile(r"(?<![A-Za-z])Epoch \d+:[\s:]*(?:\d{1,3}%)?(?:\|[^|]*\|)?" + _TAIL)
# A bare bar starts its render: the line itself, one behind a line counter (`[1745] `), a
# torchrun or mpirun tag, or an escaped CR. The other rules find their lines wherever a counter
# puts them; a bar is told from a described one (`Loading checkpoint shards:  50%|...`) only
# by what comes before it, so what may come before it is listed here.
_BARE = re.compile(
    r"(?:^(?:\[\d+\] )?|\[rank\d+\]:|<std(?:out|err)>:|#015)\s*\d{1,3}%(?:\|[^|]*\||\s)" + _TAIL
)
_RATE = re.compile(r"(\?|\d+(?:\.\d+)?)(it/s|s/it)")
_NEMO_TIMING = re.compile(r"train_step_timing in s=([^,\]]*)")
#: Half a unit of the last of the two decimals tqdm prints a rate with.
_RATE_RESOLUTION = 0.005


@dataclass(frozen=True, slots=True)
class BarReport:
    """One training bar render that carries a pace."""

    step: int
    step_ms: float
    #: The run's last step, when the bar counts the whole run (the Trainer's, not Lightning's).
    total: int | None


def read_bar(text: str) -> BarReport | None:
    """The report of a training bar render, None for any other text and for a render without
    a pace; Malformed for a training bar whose pace is printed but cannot be read."""
    if "Epoch " in text and " [" in text:
        return _lightning(text)
    if "%" in text and " [" in text:
        return _trainer(text)
    return None


def positive(value: str, what: str) -> float:
    """`value` as a number > 0, else Malformed naming `what` (a pace of 0, a NaN or an
    infinity is no pace, and a unit or format change upstream must be seen)."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (number > 0 and math.isfinite(number)):
        raise Malformed("progress", f"{what} {value!r} is not a number > 0")
    return number


def _last_render(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The newest render of a bar drawn in the top row: an escaped CR can leave several
    renders in one piece, and renders drawn below belong to another bar."""
    last = None
    for m in pattern.finditer(text):
        if m.group("nested") is None:
            last = m
    return last


def _lightning(text: str) -> BarReport | None:
    m = _last_render(_LIGHTNING, text)
    if m is None:
        return None
    n = int(m.group("n"))
    rest = m.group("rest")
    timing = _nemo_timing(rest)
    if timing is not None:
        return BarReport(n, timing, None)
    rate = _printed_rate(rest, "Lightning")
    if rate is None:
        return None
    step_ms = rate.unsmoothed_ms(_seconds(m.group("elapsed")), n)
    # Lightning's total is the epoch's batches: the run goes on after it.
    return None if step_ms is None else BarReport(n, step_ms, None)


def _trainer(text: str) -> BarReport | None:
    m = _last_render(_BARE, text)
    if m is None:
        return None
    rate = _printed_rate(m.group("rest"), "Trainer")
    step_ms = None if rate is None else rate.ms()
    if step_ms is None:
        return None
    total = m.group("total")
    return BarReport(int(m.group("n")), step_ms, int(total) if total.isdigit() else None)


@dataclass(frozen=True, slots=True)
class _Rate:
    """A bar's rate as tqdm printed it: two decimals, in it/s or (slower than 1 it/s, unless
    the bar format forbids it) s/it."""

    value: float
    per_second: bool

    def ms(self) -> float | None:
        """Time per step; None for `0.00it/s`, which only says "slower than 200 s"."""
        if self.value == 0:
            return None
        return 1000.0 / self.value if self.per_second else 1000.0 * self.value

    def unsmoothed_ms(self, elapsed_s: int, n: int) -> float | None:
        """Time per step of a bar that is not smoothed, Lightning's: its rate is n / elapsed,
        and since Lightning 2 always in it/s, so a 140 s step reads `0.01it/s`. Of the two
        renderings of that one rate the more precise is taken: elapsed (to the second) / n,
        once the elapsed time says more than the two decimals do."""
        printed = self.ms()
        if n == 0 or elapsed_s == 0:
            return printed
        if printed is None or _RATE_RESOLUTION / self.value > 1 / elapsed_s:
            return 1000.0 * elapsed_s / n
        return printed


def _printed_rate(rest: str, who: str) -> _Rate | None:
    """The rate of a render, None when it has none (`?it/s` before the first step, or a bar
    format without one, like NeMo 1's)."""
    if not rest.startswith(","):
        return None
    first = rest[1:].split(",", 1)[0].strip()
    if "=" in first:
        return None  # the postfix: this bar format prints no rate
    m = _RATE.fullmatch(first)
    if m is None:
        raise Malformed("progress", f"{who} bar rate {first!r} is neither it/s nor s/it")
    if m.group(1) == "?":
        return None
    return _Rate(float(m.group(1)), m.group(2) == "it/s")


def _nemo_timing(rest: str) -> float | None:
    """NeMo's own step time in the postfix, in ms; None when absent or not yet measured
    (NeMo prints `train_step_timing in s=` with no value before the first one)."""
    m = _NEMO_TIMING.search(rest)
    if m is None or not m.group(1).strip():
        return None
    return 1000.0 * positive(m.group(1).strip(), "NeMo train_step_timing")


def _seconds(elapsed: str) -> int:
    """tqdm's `[h:]mm:ss` (hours unbounded) in seconds."""
    seconds = 0
    for part in elapsed.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds
