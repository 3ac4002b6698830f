"""The fabric as it is cabled, when LLDP shows it differs from the plan.

Attribution walks a job's traffic over cables. If two of a host's cables were swapped at the
leaves, the NIC that NCCL names sits on another leaf than the plan says, its flows cross other
links, and a port's counters belong to another cable than the plan's: blaming the plan's cable
sends the engineer to the wrong NIC. So the plan's cables at a miswired port are replaced by
the cable LLDP sees there, and each replaced cable keeps a note of what the plan said.
"""

from __future__ import annotations

from collections.abc import Iterable

from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.fabric import Fabric, build_fabric, link_id
from railtrace.topology.lldp import CablingDifference


def as_built(
    plan: CablePlan, differences: Iterable[CablingDifference]
) -> tuple[CablePlan, dict[str, str]]:
    """The plan with every miswired port's cable replaced by the one LLDP sees, and a note per
    replacing cable (by link id) naming the plan's cables it replaces.

    Only MISWIRED differences change cables: a port LLDP sees nothing on may just be down, and
    an unexpected neighbour on an unplanned port carries no job the plan knows of.

    >>> from railtrace.topology.lldp import CablingDifference as D
    >>> plan = CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("leaf0", "swp1")),
    ...                   Cable(Endpoint("n1", "mlx5_1"), Endpoint("leaf1", "swp1"))])
    >>> swapped = [D(Endpoint("leaf0", "swp1"), CablingKind.MISWIRED,
    ...              Endpoint("n1", "mlx5_0"), Endpoint("n1", "mlx5_1")),
    ...            D(Endpoint("leaf1", "swp1"), CablingKind.MISWIRED,
    ...              Endpoint("n1", "mlx5_1"), Endpoint("n1", "mlx5_0"))]
    >>> built, notes = as_built(plan, swapped)
    >>> sorted(link_id(c.a, c.b) for c in built.cables)
    ['leaf0:swp1--n1:mlx5_1', 'leaf1:swp1--n1:mlx5_0']
    >>> notes['leaf0:swp1--n1:mlx5_1']
    'cabled unlike the plan (LLDP): the plan has n1:mlx5_0 <-> leaf0:swp1; n1:mlx5_1 <-> leaf1:swp1'
    """
    seen: set[tuple[Endpoint, Endpoint]] = set()
    for d in differences:
        if d.kind is CablingKind.MISWIRED and d.seen is not None:
            a, b = sorted((d.port, d.seen))
            seen.add((a, b))
    if not seen:
        return plan, {}
    touched = {end for pair in seen for end in pair}
    kept = [c for c in plan.cables if c.a not in touched and c.b not in touched]
    replaced = [c for c in plan.cables if c.a in touched or c.b in touched]
    notes: dict[str, str] = {}
    for a, b in sorted(seen):
        was = [
            f"{c.a.device}:{c.a.interface} <-> {c.b.device}:{c.b.interface}"
            for c in replaced
            if {c.a, c.b} & {a, b}
        ]
        notes[link_id(a, b)] = "cabled unlike the plan (LLDP): the plan has " + "; ".join(was)
    built = CablePlan([*kept, *(Cable(a, b) for a, b in sorted(seen))])
    built.errors = list(plan.errors)
    return built, notes


def cabled_fabric(
    plan: CablePlan, differences: Iterable[CablingDifference], planned: Fabric
) -> Fabric | None:
    """The fabric as cabled, with its notes; None when nothing is miswired (the plan holds).
    What was read beside the plan (`planned`'s NIC addresses, its GPU-to-NIC maps, its GID
    tables) holds for the cabled fabric too: a swapped cable moves no GPU and no GID."""
    built, notes = as_built(plan, differences)
    if not notes:
        return None
    fabric = build_fabric(built, planned.address_of)
    fabric.as_built = notes
    fabric.gpu_nics = dict(planned.gpu_nics)
    fabric.default_gpu_nics = planned.default_gpu_nics
    fabric.gid_nic = dict(planned.gid_nic)
    return fabric
