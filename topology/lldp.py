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

`streams.telemetry.cabling.CablingWatch` does this continuously as LLDP updates stream in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from railtrace.topology.cabling import CablePlan
from railtrace.topology.ends import CablingKind, Endpoint
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
    one-off check of a whole fabric (`streams.telemetry.cabling.CablingWatch` is the
    streaming form).

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
