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
switches shows up on both; `missing` is only claimed for devices in `reporting`, since silence
from a device that sends no LLDP data at all proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from railtrace.streams.records import Endpoint
from railtrace.topology.cabling import CablePlan


class Difference(StrEnum):
    MISWIRED = "miswired"
    UNEXPECTED = "unexpected"
    MISSING = "missing"


@dataclass(frozen=True, slots=True, order=True)
class Neighbour:
    """One LLDP entry: on port `local`, the device and port at the other end."""

    local: Endpoint
    remote: Endpoint


@dataclass(frozen=True, slots=True, order=True)
class CablingDifference:
    port: Endpoint
    kind: Difference
    planned: Endpoint | None
    seen: Endpoint | None

    def describe(self) -> str:
        where = f"{self.port.device}:{self.port.interface}"
        if self.kind is Difference.MISWIRED:
            return f"{where} should reach {_name(self.planned)} but LLDP sees {_name(self.seen)}"
        if self.kind is Difference.UNEXPECTED:
            return f"{where} has no cable in the plan but LLDP sees {_name(self.seen)}"
        return f"{where} should reach {_name(self.planned)} but LLDP sees nothing there"


def _name(end: Endpoint | None) -> str:
    return "-" if end is None else f"{end.device}:{end.interface}"


def check_cabling(
    plan: CablePlan, seen: Iterable[Neighbour], reporting: Iterable[str]
) -> list[CablingDifference]:
    """Every difference between the plan and the LLDP neighbours `seen`, by port.

    >>> from railtrace.topology.cabling import Cable
    >>> plan = CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("leaf1", "swp1")),
    ...                   Cable(Endpoint("n2", "mlx5_0"), Endpoint("leaf1", "swp2"))])
    >>> seen = [Neighbour(Endpoint("leaf1", "swp1"), Endpoint("n2", "mlx5_0"))]
    >>> [d.describe() for d in check_cabling(plan, seen, {"leaf1"})]
    ['leaf1:swp1 should reach n1:mlx5_0 but LLDP sees n2:mlx5_0', \
'leaf1:swp2 should reach n2:mlx5_0 but LLDP sees nothing there']
    """
    far_end: dict[Endpoint, Endpoint] = {}
    for cable in plan.cables:
        far_end[cable.a] = cable.b
        far_end[cable.b] = cable.a
    observed: dict[Endpoint, Endpoint] = {}
    for n in seen:
        observed[n.local] = n.remote
    out = []
    for port, remote in observed.items():
        planned = far_end.get(port)
        if planned is None:
            out.append(CablingDifference(port, Difference.UNEXPECTED, None, remote))
        elif planned != remote:
            out.append(CablingDifference(port, Difference.MISWIRED, planned, remote))
    speaking = set(reporting)
    for port, planned in far_end.items():
        if port.device in speaking and port not in observed:
            out.append(CablingDifference(port, Difference.MISSING, planned, None))
    return sorted(out)
