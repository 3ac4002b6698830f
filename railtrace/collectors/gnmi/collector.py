"""The gNMI collector: every configured target dialled at once, each in its own task."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ..emit import Emit
from ..errors import CollectorFailedError
from .config import GnmiTarget
from .session import TargetSession, TargetStatus

log = logging.getLogger(__name__)


class GnmiCollector:
    """Holds one TargetSession per target; `statuses` shows each target's state while running.

    Target names must be unique: a name is the Kafka key and the device in every record.
    """

    def __init__(self, targets: Sequence[GnmiTarget], emit: Emit) -> None:
        names = [t.name for t in targets]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate gNMI target names: {', '.join(duplicates)}")
        self.sessions = [TargetSession(t, emit) for t in targets]

    @property
    def statuses(self) -> dict[str, TargetStatus]:
        return {s.target.name: s.status for s in self.sessions}

    async def run(self) -> None:
        """Run until cancelled; raise CollectorFailedError once every target has failed for
        good (each one's reason in the message), or at once when there is no target."""
        if not self.sessions:
            raise CollectorFailedError("no gNMI target: collect.gnmi lists none")
        log.info("gnmi collector starting", extra={"targets": len(self.sessions)})
        async with asyncio.TaskGroup() as group:
            for session in self.sessions:
                group.create_task(session.run(), name=f"gnmi:{session.target.name}")
        reasons = "; ".join(f"{name}: {s.last_error}" for name, s in self.statuses.items())
        raise CollectorFailedError(f"every gNMI target failed, none is left: {reasons}")


async def run(targets: Sequence[GnmiTarget], emit: Emit) -> None:
    """Collect from every target, handing each notification to `emit` (see GnmiCollector)."""
    await GnmiCollector(targets, emit).run()
