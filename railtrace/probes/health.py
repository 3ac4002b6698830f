"""A process's health as `/healthz` reports it and its `healthy` metric counts it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Health:
    """`ok` when none of the role's rules is broken; `problems` names those that are, and
    `detail` says what each rule read."""

    role: str
    ok: bool
    problems: list[str]
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "ok": self.ok, "problems": self.problems, **self.detail}
