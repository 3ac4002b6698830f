"""What a collector hands to delivery, and the one call it makes to do so.

Collectors know nothing of Kafka: they build raw messages in the formats of the raw topics
(`railtrace.kafka.topics`) and await `emit(Outgoing(...))`. Delivery decides how
they reach the broker; a full spool drops the oldest samples first and never a state change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One raw message for topic `stream` ("gnmi", "snmp", "logs", "scheduler" or
    "node-events")."""

    stream: str
    key: bytes
    value: bytes
    # Oper-status changes, traps, hang lines: kept when a full spool has to drop something.
    state_change: bool = False
    ts_ns: int | None = None


class Emit(Protocol):
    async def __call__(self, message: Outgoing) -> None: ...


@dataclass
class Collected:
    """An Emit that keeps everything in memory: for tests and `--dry-run`."""

    messages: list[Outgoing] = field(default_factory=list)

    async def __call__(self, message: Outgoing) -> None:
        self.messages.append(message)

    def on(self, stream: str) -> list[Outgoing]:
        return [m for m in self.messages if m.stream == stream]
