"""One generated input (its records, good and garbage), and what its reader made of it.

A crash is named by its exception type and the innermost frame in railtrace's own code, so
that inputs failing the same way group under one signature whatever path led there.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The repository root (this file is benchmarks/fuzzing/cases.py).
ROOT = Path(__file__).resolve().parents[2]
#: Source directories whose frames name where a crash happened.
PRODUCT_DIRS = ("railtrace", "streams", "topology", "api")


@dataclass(slots=True)
class Item:
    """One record of an input: a good one (`good` >= 0, untouched) or garbage (`how` it was
    made). `where` names the file of a multi-file input (replay)."""

    data: bytes
    good: int = -1
    how: str = ""
    where: str = ""


@dataclass
class Case:
    reader: str
    index: int
    items: list[Item]
    ctx: dict[str, Any] = field(default_factory=dict)

    def goods(self) -> list[Item]:
        return [i for i in self.items if i.good >= 0]

    def copy(self, items: list[Item]) -> Case:
        return Case(self.reader, self.index, items, dict(self.ctx))


@dataclass
class Result:
    crash: str | None = None
    exc: BaseException | None = None
    lost: list[str] = field(default_factory=list)
    superseded: int = 0
    dead: int = 0
    checked: int = 0
    hang: bool = False

    def signature(self) -> str | None:
        if self.crash is not None:
            return self.crash
        if self.lost:
            return "lost: " + self.lost[0].split(" | ")[0]
        return None


def _product_file(filename: str) -> str | None:
    """`streams/telemetry/gnmic.py` for a frame in railtrace's own code, else None."""
    path = Path(filename).resolve()
    for part in PRODUCT_DIRS:
        if path.is_relative_to(ROOT / part):
            return str(path.relative_to(ROOT))
    return None


def _where_raised(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [(f, name) for f in frames if (name := _product_file(f.filename)) is not None]
    if mine:
        frame, name = mine[-1]
        return f"{name}:{frame.lineno}"
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def crash_of(exc: BaseException) -> tuple[str, BaseException]:
    """A crash's signature (type and the innermost product frame), and the exception for its
    traceback (formatted only for inputs that are written out: formatting costs more than
    most inputs)."""
    return f"crash: {type(exc).__name__} at {_where_raised(exc)}", exc


def trace_of(exc: BaseException | None) -> str:
    return "" if exc is None else "".join(traceback.format_exception(exc))[-4000:]
