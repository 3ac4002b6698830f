"""The plan checked against LLDP as the neighbour tables stream in, one device at a time.

A neighbour arrives leaf by leaf and a table fills over a few notifications, so a difference
(`topology.lldp`) is only reported once it has held for `settle_ns` of the device's own time
(its message timestamps), and reported once; when it goes away a `resolved` event says so.
"""

from __future__ import annotations

from typing import Any

from railtrace.streams.records import CablingEvent
from railtrace.streams.telemetry.lldp import LldpUpdate
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.lldp import CablingDifference, PlanIndex


def cabling_event(d: CablingDifference, ts_ns: int) -> CablingEvent:
    """The record a settled difference is reported as."""
    return CablingEvent(
        ts_ns, d.port.device, d.port.interface, d.kind, d.planned, d.seen, d.describe()
    )


_Key = tuple[str, str]  # (local interface, neighbour id)


class CablingWatch:
    """One device's LLDP neighbour table, checked against the plan as it changes.

    Kept by whoever folds the device's raw telemetry (the worker's telemetry stage), and
    snapshotted with the rest of the device's state.
    """

    def __init__(self, device: str, plan: PlanIndex, settle_ns: int) -> None:
        self.device = device
        self.plan = plan
        self.settle_ns = settle_ns
        self.table: dict[_Key, dict[str, str]] = {}
        self.speaking = False
        self.pending: dict[str, tuple[CablingDifference, int]] = {}
        self.reported: dict[str, CablingDifference] = {}

    def apply(self, update: LldpUpdate) -> list[CablingEvent]:
        """Fold one update in and return the events it settles or resolves."""
        self.fold(update)
        return self._recheck(update.ts_ns)

    def fold(self, update: LldpUpdate) -> None:
        """Fold one update into the table without checking it against the plan: a replay,
        which reads the tables only once all are in, would otherwise check a whole switch
        once per port's notification (minutes at 12,500 nodes)."""
        if update.replace:
            self.table.clear()
        for interface, neighbour in update.deletes:
            for key in [k for k in self.table if _matches(k, interface, neighbour)]:
                del self.table[key]
        for leaf in update.leaves:
            self.table.setdefault((leaf.interface, leaf.neighbour), {})[leaf.leaf] = leaf.value
        self.speaking = self.speaking or bool(self.table)

    def tick(self, ts_ns: int) -> list[CablingEvent]:
        """The device's clock moved (any message from it): report what has now settled."""
        return self._settle(ts_ns) if self.pending else []

    def neighbours(self) -> dict[str, list[Endpoint]]:
        """Each local interface's neighbours, named as the plan names them."""
        out: dict[str, list[Endpoint]] = {}
        for (interface, _), leaves in sorted(self.table.items()):
            name = leaves.get("system-name") or leaves.get("chassis-id", "")
            remote = self.plan.resolve(
                name, leaves.get("port-id", ""), leaves.get("port-description", "")
            )
            out.setdefault(interface, []).append(remote)
        return out

    def _recheck(self, ts_ns: int) -> list[CablingEvent]:
        now = self.plan.differences(self.device, self.neighbours(), self.speaking)
        events = []
        for interface in [i for i in self.reported if i not in now]:
            gone = self.reported.pop(interface)
            events.append(
                CablingEvent(
                    ts_ns,
                    self.device,
                    interface,
                    CablingKind.RESOLVED,
                    gone.planned,
                    gone.planned,
                    f"{self.device}:{interface} is cabled as planned again ({gone.kind} before)",
                )
            )
        pending: dict[str, tuple[CablingDifference, int]] = {}
        for interface, diff in now.items():
            if self.reported.get(interface) == diff:
                continue
            held = self.pending.get(interface)
            pending[interface] = held if held is not None and held[0] == diff else (diff, ts_ns)
        self.pending = pending
        return events + self._settle(ts_ns)

    def _settle(self, ts_ns: int) -> list[CablingEvent]:
        events = []
        for interface, (diff, since) in list(self.pending.items()):
            if ts_ns - since >= self.settle_ns:
                del self.pending[interface]
                self.reported[interface] = diff
                events.append(cabling_event(diff, ts_ns))
        return events

    def snapshot(self) -> dict[str, Any]:
        return {
            "table": [[i, n, leaves] for (i, n), leaves in sorted(self.table.items())],
            "speaking": self.speaking,
            "pending": [[_diff_out(d), since] for d, since in self.pending.values()],
            "reported": [_diff_out(d) for d in self.reported.values()],
        }

    @classmethod
    def restore(
        cls, snap: dict[str, Any], device: str, plan: PlanIndex, settle_ns: int
    ) -> CablingWatch:
        watch = cls(device, plan, settle_ns)
        watch.table = {(str(i), str(n)): dict(leaves) for i, n, leaves in snap["table"]}
        watch.speaking = bool(snap["speaking"])
        for raw, since in snap["pending"]:
            diff = _diff_in(raw, device)
            watch.pending[diff.port.interface] = (diff, int(since))
        for raw in snap["reported"]:
            diff = _diff_in(raw, device)
            watch.reported[diff.port.interface] = diff
        return watch


def _matches(key: _Key, interface: str | None, neighbour: str | None) -> bool:
    return (interface is None or key[0] == interface) and (neighbour is None or key[1] == neighbour)


def _end_out(end: Endpoint | None) -> list[str] | None:
    return None if end is None else [end.device, end.interface]


def _end_in(raw: Any) -> Endpoint | None:
    return None if raw is None else Endpoint(str(raw[0]), str(raw[1]))


def _diff_out(d: CablingDifference) -> list[Any]:
    return [d.port.interface, d.kind.value, _end_out(d.planned), _end_out(d.seen)]


def _diff_in(raw: list[Any], device: str) -> CablingDifference:
    interface, kind, planned, seen = raw
    return CablingDifference(
        Endpoint(device, str(interface)), CablingKind(kind), _end_in(planned), _end_in(seen)
    )
