"""Stamps without a zone are the host's wall clock, read in the site's zone (`site.timezone`):
a cluster logging in local time was judged hours off its switches' UTC telemetry."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

import pytest
from logs_support import JOB, of_type, real_lines, utc_ns
from pydantic import ValidationError

from railtrace.settings import SiteSettings
from railtrace.streams.logs import LogParser
from railtrace.streams.records import XidEvent

BERLIN = ZoneInfo("Europe/Berlin")


def _times(parser: LogParser, lines: list[str]) -> list[int]:
    return [f.ts_ns for line in lines for f in parser.feed(line)]


def test_dmesg_t_stamps_are_read_in_the_site_zone_summer_and_winter() -> None:
    lines = [
        "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 79, GPU has fallen off the bus.",
        "[Mon Dec  2 08:00:00 2024] NVRM: Xid (PCI:0000:00:05): 79, GPU has fallen off the bus.",
    ]
    assert _times(LogParser(JOB, "k", 2024), lines) == [
        utc_ns(2024, 7, 31, 23, 14, 18),
        utc_ns(2024, 12, 2, 8, 0, 0),
    ]
    # Berlin is two hours ahead of UTC in July (summer time) and one in December.
    assert _times(LogParser(JOB, "k", 2024, local=BERLIN), lines) == [
        utc_ns(2024, 7, 31, 21, 14, 18),
        utc_ns(2024, 12, 2, 7, 0, 0),
    ]


def test_a_stamp_that_carries_its_zone_keeps_it_whatever_the_site_zone() -> None:
    line = "2024-07-31T23:14:18Z hgx1 kernel: NVRM: Xid (PCI:0000:00:05): 79, GPU has fallen off"
    for local in (UTC, BERLIN):
        assert _times(LogParser(JOB, "k", 2024, local=local), [line]) == [
            utc_ns(2024, 7, 31, 23, 14, 18)
        ]


def test_the_real_dmesg_excerpt_shifts_by_the_zone_and_a_restored_parser_keeps_it() -> None:
    lines = real_lines("akash_244_dmesg_T_xid.log")
    plain = LogParser(JOB, "k", 2024)
    utc = [x.ts_ns for x in of_type([f for line in lines for f in plain.feed(line)], XidEvent)]
    parser = LogParser(JOB, "k", 2024, local=BERLIN)
    first = of_type([f for line in lines[:4] for f in parser.feed(line)], XidEvent)
    restored = LogParser.restore(parser.snapshot(), BERLIN)
    rest = of_type([f for line in lines[4:] for f in restored.feed(line)], XidEvent)
    assert [x.ts_ns for x in first + rest] == [t - 2 * 3600 * 10**9 for t in utc]


def test_a_zone_this_machine_does_not_know_is_refused_with_what_to_give() -> None:
    with pytest.raises(ValidationError, match="IANA name"):
        SiteSettings(timezone="Mars/Olympus_Mons")
    assert SiteSettings(timezone="America/Chicago").zone == ZoneInfo("America/Chicago")
