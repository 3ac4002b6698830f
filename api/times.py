"""Times in requests: what `since`, `until` and `at` accept, and the windows they make.

One reading for everyone: an ISO-8601 time (UTC when it has no offset) or a bare number of
Unix **seconds**, whatever its size (pydantic alone reads a number above 2e10 as milliseconds,
so `1700000000000` would have meant 2023 and `17000000000` the year 2508). Every time must lie
in the range the store can hold (`records.EARLIEST_NS`..`LATEST_NS`, 1970 to 2106): outside it
the request is a 422 that says so, never a 500 from date arithmetic past year 9999, nor an
answer from another year.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import BeforeValidator

from railtrace.api.deps import invalid
from railtrace.streams.records import EARLIEST_NS, LATEST_NS

NS = 1_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EARLIEST = EPOCH + timedelta(microseconds=EARLIEST_NS // 1000)
LATEST = EPOCH + timedelta(microseconds=LATEST_NS // 1000)
#: How the bounds read in error messages and in the OpenAPI document.
RANGE_TEXT = f"between {EARLIEST:%Y-%m-%dT%H:%M:%SZ} and {LATEST:%Y-%m-%dT%H:%M:%SZ} (exclusive)"
ACCEPTED = f"ISO-8601 (UTC if no offset) or Unix seconds, {RANGE_TEXT}"

_SECONDS = re.compile(r"[+-]?\d{1,15}(?:\.\d{1,9})?")


def _seconds_or_iso(value: object) -> object:
    """A bare number as Unix seconds; anything else is left to pydantic's ISO parsing."""
    if isinstance(value, str) and _SECONDS.fullmatch(value.strip()):
        seconds = float(value)
        if not EARLIEST_NS / NS <= seconds < LATEST_NS / NS:
            raise ValueError(f"{value} Unix seconds is not {RANGE_TEXT}")
        return EPOCH + timedelta(seconds=seconds)
    return value


#: A request time: see the module docstring.
Instant = Annotated[datetime, BeforeValidator(_seconds_or_iso)]


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _ns(t: datetime) -> int:
    return (t - EPOCH) // timedelta(microseconds=1) * 1000


def check_instant(param: str, t: datetime | None) -> int | None:
    """`t` in nanoseconds, or a 422 naming `param` when it lies outside the store's range."""
    if t is None:
        return None
    try:
        u = _utc(t)
    except (OverflowError, ValueError):  # an offset that moves it past year 1 or 9999
        raise invalid(param, f"{param} must be {RANGE_TEXT}") from None
    if not EARLIEST <= u < LATEST:
        raise invalid(param, f"{param} must be {RANGE_TEXT}")
    return _ns(u)


def window(
    since: datetime | None,
    until: datetime | None,
    *,
    default: timedelta,
    longest: timedelta,
    now: datetime | None = None,
) -> tuple[int, int]:
    """[since, until) in nanoseconds from what was given: `default` long, ending now, when
    neither is; a 422 for a window that is empty, inverted, longer than `longest`, or reaches
    outside the store's range."""
    start = check_instant("since", since)
    end = check_instant("until", until)
    span = _ns(EPOCH + default)
    if end is None:
        end = start + span if start is not None else _ns(now or datetime.now(UTC))
    if start is None:
        start = end - span
    if not start >= EARLIEST_NS or end > LATEST_NS:
        which = "since" if start < EARLIEST_NS else "until"
        raise invalid(which, f"the window must lie {RANGE_TEXT}")
    if start >= end:
        raise invalid("since", "since must be before until")
    if end - start > _ns(EPOCH + longest):
        raise invalid("until", f"the window may be at most {math.ceil(longest.days)} days")
    return start, end
