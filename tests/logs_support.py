"""Helpers shared by the tests of railtrace.streams.logs: fixture access and expected times."""

from __future__ import annotations

import calendar
from pathlib import Path
from typing import TypeVar

from railtrace.streams.logs import ParseStats, parse_lines
from railtrace.streams.records import JobFact

REAL = Path(__file__).parent / "fixtures" / "logs" / "real"
JOB = "job-1"
T = TypeVar("T")


def real_lines(name: str) -> list[bytes]:
    """The lines of a real-sample fixture, as bytes, exactly as stored."""
    return (REAL / name).read_bytes().splitlines()


def parse_real(name: str, year_hint: int | None = 2024) -> tuple[list[JobFact], ParseStats]:
    return parse_lines(real_lines(name), job_id=JOB, source=name, year_hint=year_hint)


def parse_text(text: str, year_hint: int | None = 2024) -> tuple[list[JobFact], ParseStats]:
    return parse_lines(text.splitlines(), job_id=JOB, source="inline", year_hint=year_hint)


def utc_ns(
    year: int, month: int, day: int, hh: int, mm: int, ss: int, ns: int = 0, offset_min: int = 0
) -> int:
    """Expected epoch nanoseconds, computed independently of the parser (calendar.timegm)."""
    seconds = calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0)) - offset_min * 60
    return seconds * 1_000_000_000 + ns


def of_type(facts: list[JobFact], kind: type[T]) -> list[T]:
    return [f for f in facts if isinstance(f, kind)]
