"""gNMI timestamps read in the unit they were really sent in.

gNMI stamps a notification in nanoseconds since the Unix epoch, but some switch OSes send
milliseconds or seconds (and a few microseconds) in the same field. Read as nanoseconds, such a
stamp is a moment in January 1970, and every rate and verdict built on it is filed there. The
units cannot be confused by magnitude: the times from 2000 to 2106 (the end of what railtrace
holds, `records.LATEST_NS`) in seconds, milliseconds, microseconds and nanoseconds are four
ranges that do not overlap, each a thousand times the one before. So a stamp is read in the one
unit that puts it in that span, and refused when none does: a switch whose clock was never set
counts from 1970 in nanoseconds, which lands between the ranges, and is no time to trust.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from ..records import LATEST_NS

__all__ = ["EARLIEST_PLAUSIBLE_NS", "StampError", "StampUnit", "read_stamp"]

#: 2000-01-01T00:00:00Z: no gNMI notification was sent earlier (gNMI dates from 2016), and the
#: span from here to LATEST_NS is narrower than a factor of 1000, which keeps the units apart.
EARLIEST_PLAUSIBLE_NS: Final = 946_684_800 * 1_000_000_000


class StampUnit(StrEnum):
    """The unit a stamp was read in."""

    NS = "ns"
    US = "us"
    MS = "ms"
    S = "s"


#: (unit, ns per unit, the first and the end of the plausible span in that unit), ns first.
_RANGES: Final = tuple(
    (unit, factor, -(-EARLIEST_PLAUSIBLE_NS // factor), LATEST_NS // factor)
    for unit, factor in (
        (StampUnit.NS, 1),
        (StampUnit.US, 1_000),
        (StampUnit.MS, 1_000_000),
        (StampUnit.S, 1_000_000_000),
    )
)


class StampError(ValueError):
    """A stamp that is no time from 2000 to 2106 in any unit; the message says so."""


def read_stamp(value: int) -> tuple[int, StampUnit]:
    """`value` as nanoseconds since the epoch, and the unit it was read in.

    >>> read_stamp(1_700_000_000_123_456_789)
    (1700000000123456789, <StampUnit.NS: 'ns'>)
    >>> read_stamp(1_700_000_000_123)
    (1700000000123000000, <StampUnit.MS: 'ms'>)
    >>> read_stamp(1_700_000_000)
    (1700000000000000000, <StampUnit.S: 's'>)
    >>> try:  # a clock never set: three days after 1970, in ns
    ...     read_stamp(3 * 86_400 * 10**9)
    ... except StampError as exc:
    ...     print(exc)
    timestamp 259200000000000 is no time from 2000 to 2106 in ns, us, ms or s
    """
    for unit, factor, first, end in _RANGES:
        if first <= value < end:
            return value * factor, unit
    raise StampError(f"timestamp {value} is no time from 2000 to 2106 in ns, us, ms or s")
