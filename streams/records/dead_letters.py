"""The record of input that could not be used."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Input that could not be used, with the reason; counted and kept, never fatal."""

    source: str
    reason: str
    raw: bytes = b""
    line_no: int = 0
    extra: dict[str, str] = field(default_factory=dict)
