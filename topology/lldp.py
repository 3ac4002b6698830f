"""The cabling plan checked against what LLDP says is plugged where.

A rail-optimized fabric is only rail-optimized if every NIC sits on its rail's leaf; two
swapped cables silently change which links a job's rings cross, and with them every verdict.
The switches' LLDP neighbour tables (gNMI openconfig-lldp or SNMP LLDP-MIB) name the far end of
each port, so each port can be compared with `cables.csv`:

- miswired: the port has a planned cable, but LLDP names another far end;
- unexpected: LLDP sees a neighbour on a port the plan leaves empty;
- missing: a planned cable on a port of a device that reports LLDP, with no neighbour seen
  (link down, unplugged, or the far end does not speak LLDP).

Each difference is reported from the port that saw it, so a cable swapped between two
switches shows up on both; `missing` is only claimed for devices that have shown at least one
LLDP neighbour, since silence from a device that sends no LLDP data at all proves nothing.

`CablingWatch` does this continuously for one device as its LLDP updates stream in. A
neighbour arrives leaf by leaf and a table fills over a few notifications, so a difference is
only reported once it has held for `settle_ns` of the device's own time (its message
timestamps), and reported once; when it goes away a `resolved` event says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from railtrace.streams.records import CablingEvent, CablingKind, Endpoint
from railtrace.streams.telemetry.lldp import LldpUpdate
from railtrace.topology.cabling import CablePlan
from railtrace.topology.fabric import Fabric


@dataclass(frozen=True, slots=True, order=True)
class Neighbour:
    """One LLDP entry: on port `local`, the device and port at the other end."""

    local: Endpoint
    remote: Endpoint


@dataclass(frozen=True, slots=True, order=True)
class CablingDifference:
    port: Endpoint
    kind: CablingKind
    planned: Endpoint | None
    seen: Endpoint | None

    def describe(self) -> str:
        where = f"{self.port.device}:{self.port.interface}"
        if self.kind is CablingKind.MISWIRED:
            return f"{where} should reach {_name(self.planned)} but LLDP sees {_name(self.seen)}"
        if self.kind is CablingKind.UNEXPECTED:
            return f"{where} has no cable in the plan but LLDP sees {_name(self.seen)}"
        return f"{where} should reach {_name(self.planned)} but LLDP sees nothing there"

    def event(self, ts_ns: int) -> CablingEvent:
        return CablingEvent(
            ts_ns,
            self.port.device,
            self.port.interface,
            self.kind,
            self.planned,
            self.seen,
            self.describe(),
        )


def _name(end: Endpoint | None) -> str:
    return "-" if end is None else f"{end.device}:{end.interface}"


class PlanIndex:
    """The plan as LLDP checks need it: each port's far end, each device's ports, and how to
    turn what LLDP announces into the names `cables.csv` uses."""

    def __init__(self, cables: Iterable[tuple[Endpoint, Endpoint]]) -> None:
        self.far_end: dict[Endpoint, Endpoint] = {}
        self.ports: dict[str, list[str]] = {}
        for a, b in cables:
            for here, there in ((a, b), (b, a)):
                self.far_end[here] = there
                self.ports.setdefault(here.device, []).append(here.interface)

    @classmethod
    def of(cls, plan: CablePlan) -> PlanIndex:
        return cls((c.a, c.b) for c in plan.cables)

    @classmethod
    def of_fabric(cls, fabric: Fabric) -> PlanIndex:
        return cls((link.a, link.b) for link in fabric.links.values())

    def resolve(self, system_name: str, port_id: str, port_desc: str = "") -> Endpoint:
        """The plan's name for a neighbour LLDP announced.

        LLDP agents send a host's FQDN where the plan has the short name, and a port id that
        may be a MAC address with the name only in the port description; the first pairing
        the plan knows wins, else the announcement is kept as it came.

        >>> index = PlanIndex([(Endpoint("hgx-01", "eth0"), Endpoint("leaf1", "swp1"))])
        >>> index.resolve("hgx-01.dc1.example.net", "7c:fe:90:00:00:01", "eth0")
        Endpoint(device='hgx-01', interface='eth0')
        """
        short = system_name.partition(".")[0]
        devices = [d for d in dict.fromkeys((system_name, short)) if d]
        ports = [p for p in dict.fromkeys((port_id, port_desc)) if p]
        for device in devices:
            for port in ports:
                if Endpoint(device, port) in self.far_end:
                    return Endpoint(device, port)
        device = next((d for d in devices if d in self.ports), system_name)
        return Endpoint(device, ports[0] if ports else "")

    def differences(
        self, device: str, seen: dict[str, list[Endpoint]], speaking: bool
    ) -> dict[str, CablingDifference]:
        """Each of `device`'s ports whose neighbours `seen` differ from the plan.

        A port with several neighbours (a stale entry beside a fresh one) is as planned if any
        of them is the planned far end.
        """
        out: dict[str, CablingDifference] = {}
        for interface, remotes in seen.items():
            port = Endpoint(device, interface)
            planned = self.far_end.get(port)
            if not remotes or planned in remotes:
                continue
            kind = CablingKind.UNEXPECTED if planned is None else CablingKind.MISWIRED
            out[interface] = CablingDifference(port, kind, planned, min(remotes))
        if speaking:
            for interface in self.ports.get(device, ()):
                if not seen.get(interface):
                    port = Endpoint(device, interface)
                    out[interface] = CablingDifference(
                        port, CablingKind.MISSING, self.far_end[port], None
                    )
        return out


def check_cabling(
    plan: CablePlan, seen: Iterable[Neighbour], reporting: Iterable[str]
) -> list[CablingDifference]:
    """Every difference between the plan and the LLDP neighbours `seen`, by port, for a
    one-off check of a whole fabric (`CablingWatch` is the streaming form).

    >>> from railtrace.topology.cabling import Cable
    >>> plan = CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("leaf1", "swp1")),
    ...                   Cable(Endpoint("n2", "mlx5_0"), Endpoint("leaf1", "swp2"))])
    >>> seen = [Neighbour(Endpoint("leaf1", "swp1"), Endpoint("n2", "mlx5_0"))]
    >>> [d.describe() for d in check_cabling(plan, seen, {"leaf1"})]
    ['leaf1:swp1 should reach n1:mlx5_0 but LLDP sees n2:mlx5_0', \
'leaf1:swp2 should reach n2:mlx5_0 but LLDP sees nothing there']
    """
    index = PlanIndex.of(plan)
    by_device: dict[str, dict[str, list[Endpoint]]] = {}
    for n in seen:
        by_device.setdefault(n.local.device, {}).setdefault(n.local.interface, []).append(n.remote)
    speaking = set(reporting)
    out: list[CablingDifference] = []
    for device in sorted(speaking | set(by_device)):
        found = index.differences(device, by_device.get(device, {}), device in speaking)
        out += found.values()
    return sorted(out)


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
        if update.replace:
            self.table.clear()
        for interface, neighbour in update.deletes:
            for key in [k for k in self.table if _matches(k, interface, neighbour)]:
                del self.table[key]
        for leaf in update.leaves:
            self.table.setdefault((leaf.interface, leaf.neighbour), {})[leaf.leaf] = leaf.value
        self.speaking = self.speaking or bool(self.table)
        return self._recheck(update.ts_ns)

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
                events.append(diff.event(ts_ns))
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
