"""Times written on the lines themselves, turned into integer nanoseconds since the epoch (UTC).

A capture mixes clocks: a log shipper's ISO-8601 prefix, NCCL's `[%F %T]` stamp, PyTorch's
year-less `[E1206 18:44:12.715298746 file:line]`, vLLM's `INFO 02-03 13:14:04 file:line]`,
`dmesg -T` and syslog prefixes. The stamp at the very start of a line comes from the outermost
writer (shipper, syslog, mpirun) and is preferred; only without one do stamps inside the line
count. Times without a zone (`dmesg -T`, syslog, PyTorch's c10 prefix, vLLM's, NCCL's own
stamp) are the writing host's wall clock: they are read in the site's zone (`site.timezone` in
the settings, UTC unless set), daylight saving included.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, tzinfo
from functools import lru_cache
from typing import Any

from ..records import in_time_range

_MONTHS = {
    "Jan": 1,
    "Feb": 2,
    "Mar": 3,
    "Apr": 4,
    "May": 5,
    "Jun": 6,
    "Jul": 7,
    "Aug": 8,
    "Sep": 9,
    "Oct": 10,
    "Nov": 11,
    "Dec": 12,
}
_MONTH_ALT = "|".join(_MONTHS)
_FRACTION = r"(?:[.,](\d{1,9})\d*)?"
_ISO_CORE = r"(\d{4})[-/](\d{2})[-/](\d{2})[T ](\d{2}):(\d{2}):(\d{2})" + _FRACTION
_ZONE = r"(?: ?(Z|[+-]\d{2}(?::?\d{2})?))?"

# Anchored stamps, tried only at the start of a line.
_LEAD_ISO = re.compile(_ISO_CORE + _ZONE + r"(?!\d)")
_LEAD_BRACKET_ISO = re.compile(r"\[" + _ISO_CORE + _ZONE + r"[^\]]{0,48}\]")
_LEAD_CTIME = re.compile(
    r"\[?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (" + _MONTH_ALT + r") +(\d{1,2}) "
    r"(\d{2}):(\d{2}):(\d{2})" + _FRACTION + r" (\d{4})\]?"
)
_LEAD_SYSLOG = re.compile(
    r"(" + _MONTH_ALT + r") +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})" + _FRACTION + " "
)
# `dmesg --decode --time-format iso`: "kern  :err   : 2025-05-27T04:18:56,089671+00:00 ...".
_LEAD_DMESG_DECODE = re.compile(r"[a-z]+ *: *[a-z]+ *: ")

# Stamps searched anywhere when the line does not start with one.
_ANY_BRACKET_ISO = re.compile(r"\[" + _ISO_CORE + _ZONE + r"[^\]]{0,48}\]")
# c10 logging `[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]` (month not zero-padded,
# day padded, so "E321" is March 21) and glog `E1206 18:44:12.715298 12345 file.cc:607]`.
# c10 prints CLOCK_MONOTONIC's nanoseconds after the wall-clock second, so the fraction is
# kept as printed but only the second is trustworthy.
_GLOG = re.compile(
    r"\b[IWEF](\d{1,2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9})\d*)?(?: +\d+)? [\w.\-]+:\d+\]"
)
# vLLM's logger `INFO 02-03 13:14:04 llm_engine.py:706]` (later `[core.py:88]`): level,
# month-day and time to the second, then file:line. Searched anywhere, as a worker's tag
# (`(VllmWorkerProcess pid=1159) `) or a viewer's gutter may stand before it.
_VLLM = re.compile(
    r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) "
    r"\[?[\w.\-/]+:\d+\]"
)

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_NS = 1_000_000_000
_HALF_YEAR_MONTHS = 6


@lru_cache(maxsize=8192)
def _epoch_day(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01; cached because a file repeats the same few dates millions of times."""
    return date(year, month, day).toordinal() - _EPOCH_ORDINAL


def _zone_seconds(zone: str | None) -> int:
    if not zone or zone == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) >= 4 else 0
    return sign * (hours * 3600 + minutes * 60)


@lru_cache(maxsize=8192)
def _local_offset(local: tzinfo, year: int, month: int, day: int, hour: int, minute: int) -> int:
    """Seconds `local` is ahead of UTC at that wall-clock minute (the earlier reading of an
    hour that daylight saving repeats); cached like `_epoch_day`."""
    offset = datetime(year, month, day, hour, minute, tzinfo=local).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def to_ns(
    year: int,
    month: int,
    day: int,
    hms: tuple[int, int, int],
    fraction: str | None,
    zone: str | None = None,
    local: tzinfo = UTC,
) -> int:
    """Nanoseconds since the epoch; raises ValueError for an impossible date or time. A stamp
    without `zone` is wall-clock time in `local`."""
    hour, minute, second = hms
    if hour > 23 or minute > 59 or second > 60:
        raise ValueError("time of day out of range")
    seconds = _epoch_day(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    if zone:
        seconds -= _zone_seconds(zone)
    elif local is not UTC:
        seconds -= _local_offset(local, year, month, day, hour, minute)
    frac_ns = int(fraction.ljust(9, "0")) if fraction else 0
    ts = seconds * _NS + frac_ns
    if not in_time_range(ts):
        raise ValueError("outside the times railtrace holds (1970 to 2106)")
    return ts


class Clock:
    """The time of one input file: the last stamp seen and the year to lend to year-less stamps.

    Year-less stamps (PyTorch's c10 prefix, classic syslog) take the year of the last line that
    carried a full date, else `year_hint`, else the current UTC year; a month more than half a
    year away from that reference date is taken to sit across a New Year boundary.
    """

    def __init__(self, year_hint: int | None, local: tzinfo = UTC) -> None:
        self.last_ns = 0
        self._local = local
        self._default_year = year_hint if year_hint is not None else datetime.now(UTC).year
        self._ref_year: int | None = None
        self._ref_month = 1

    def snapshot(self) -> dict[str, Any]:
        """The clock's state as plain JSON values.

        The resolved default year is kept rather than the hint: a parser made without a hint
        and restored after New Year must go on lending the year it started with.
        """
        return {
            "last_ns": self.last_ns,
            "year": self._default_year,
            "ref_year": self._ref_year,
            "ref_month": self._ref_month,
        }

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the state written by `snapshot`."""
        self.last_ns = int(snap["last_ns"])
        self._default_year = int(snap["year"])
        ref_year = snap["ref_year"]
        self._ref_year = None if ref_year is None else int(ref_year)
        self._ref_month = int(snap["ref_month"])

    def stamp(self, line: str, *, c10: bool = True) -> tuple[int | None, int]:
        """Return the time written on `line` (None if it has none) and where its leading stamp ends.

        The second value lets kernel lines find the host that syslog writes right after the time.
        `c10=False` skips the search for PyTorch's and vLLM's stamps, which NCCL-prefixed lines
        never carry.
        """
        found = self._leading(line)
        if found is not None:
            ts, end = found
        else:
            ts, end = self._inner(line, c10), 0
        if ts is not None:
            self.last_ns = ts
        return ts, end

    def _leading(self, line: str) -> tuple[int | None, int] | None:
        if not line:
            return None
        first = line[0]
        if first.isdigit():
            m = _LEAD_ISO.match(line)
            return (self._full(m), m.end()) if m else None
        if first == "[":
            m = _LEAD_BRACKET_ISO.match(line)
            if m:
                return self._full(m), m.end()
            return self._ctime(line)
        if first.isupper():
            return self._ctime(line) or self._syslog(line)
        if first.islower():
            d = _LEAD_DMESG_DECODE.match(line)
            if d:
                m = _LEAD_ISO.match(line, d.end())
                if m:
                    return self._full(m), m.end()
        return None

    def _inner(self, line: str, c10: bool) -> int | None:
        if "[2" in line:
            m = _ANY_BRACKET_ISO.search(line)
            if m:
                return self._full(m)
        if c10 and "] " in line:
            g = _GLOG.search(line)
            if g:
                month, day, hh, mm, ss, frac = g.groups()
                return self._yearless(int(month), int(day), (int(hh), int(mm), int(ss)), frac)
            v = _VLLM.search(line)
            if v:
                month, day, hh, mm, ss = v.groups()
                return self._yearless(int(month), int(day), (int(hh), int(mm), int(ss)), None)
        return None

    def _full(self, m: re.Match[str]) -> int | None:
        year, month, day, hh, mm, ss, frac, zone = m.groups()
        return self._dated(int(year), int(month), int(day), (int(hh), int(mm), int(ss)), frac, zone)

    def _ctime(self, line: str) -> tuple[int | None, int] | None:
        m = _LEAD_CTIME.match(line)
        if not m:
            return None
        mon, day, hh, mm, ss, frac, year = m.groups()
        hms = (int(hh), int(mm), int(ss))
        return self._dated(int(year), _MONTHS[mon], int(day), hms, frac, None), m.end()

    def _syslog(self, line: str) -> tuple[int | None, int] | None:
        m = _LEAD_SYSLOG.match(line)
        if not m:
            return None
        mon, day, hh, mm, ss, frac = m.groups()
        hms = (int(hh), int(mm), int(ss))
        return self._yearless(_MONTHS[mon], int(day), hms, frac), m.end()

    def _dated(
        self,
        year: int,
        month: int,
        day: int,
        hms: tuple[int, int, int],
        frac: str | None,
        zone: str | None,
    ) -> int | None:
        try:
            ts = to_ns(year, month, day, hms, frac, zone, self._local)
        except ValueError:
            return None
        self._ref_year, self._ref_month = year, month
        return ts

    def _yearless(
        self, month: int, day: int, hms: tuple[int, int, int], frac: str | None
    ) -> int | None:
        year = self._default_year
        if self._ref_year is not None:
            year = self._ref_year
            if month - self._ref_month > _HALF_YEAR_MONTHS:
                year -= 1
            elif self._ref_month - month > _HALF_YEAR_MONTHS:
                year += 1
        try:
            return to_ns(year, month, day, hms, frac, None, self._local)
        except ValueError:
            return None
