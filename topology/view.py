"""The fabric as a plain graph for people and pages: devices with their role and rail, cables
with the rail they carry, cut down to one rail or to the links one job may cross.

Pure; the API serves it as `/v1/topology`. A cable's rail is the rail of the host NIC it plugs
(host links) or of the leaf it leaves (leaf uplinks); cables above the leaves carry every rail,
so they have none and a rail view stops at its leaves' uplinks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from railtrace.topology.attrs import RAIL, ROLE, TIER, Role
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric


@dataclass(frozen=True, slots=True)
class DeviceView:
    name: str
    role: Role
    tier: int | None
    rail: int | None


@dataclass(frozen=True, slots=True)
class LinkView:
    link_id: str
    a: Endpoint
    b: Endpoint
    rail: int | None
    weight: float | None = None  # the chance a job's traffic crosses it (job views only)


@dataclass(frozen=True, slots=True)
class TopologyView:
    devices: list[DeviceView]
    links: list[LinkView]


def link_rail(fabric: Fabric, a: Endpoint, b: Endpoint) -> int | None:
    """The rail a cable carries, None above the leaves.

    >>> from railtrace.topology import build_fabric
    >>> from railtrace.topology.cabling import Cable, CablePlan
    >>> f = build_fabric(CablePlan([Cable(Endpoint("n1", "mlx5_1"), Endpoint("leaf", "p1")),
    ...                             Cable(Endpoint("n1", "mlx5_0"), Endpoint("leaf0", "p1"))]))
    >>> link_rail(f, Endpoint("n1", "mlx5_1"), Endpoint("leaf", "p1"))
    1
    """
    for nic in (a, b):
        if nic in fabric.nic_rail:
            return fabric.nic_rail[nic]
    roles = {end.device: fabric.graph.nodes[end.device].get(ROLE) for end in (a, b)}
    leaves = [d for d, role in roles.items() if role == Role.LEAF]
    if len(leaves) == 1:
        rail = fabric.graph.nodes[leaves[0]].get(RAIL)
        return rail if isinstance(rail, int) else None
    return None


def topology_view(
    fabric: Fabric, rail: int | None = None, weights: Mapping[str, float] | None = None
) -> TopologyView:
    """The whole fabric, or only the cables of `rail`, or only those with a weight in
    `weights` (a job's links); the devices are those the chosen cables touch."""
    links = []
    for ref in sorted(fabric.links.values(), key=lambda r: r.link_id):
        lrail = link_rail(fabric, ref.a, ref.b)
        if rail is not None and lrail != rail:
            continue
        weight = None
        if weights is not None:
            weight = weights.get(ref.link_id)
            if not weight:
                continue
        links.append(LinkView(ref.link_id, ref.a, ref.b, lrail, weight))
    touched = {end.device for link in links for end in (link.a, link.b)}
    if rail is None and weights is None:
        touched = set(fabric.graph.nodes)
    devices = []
    for name in sorted(touched):
        data = fabric.graph.nodes[name]
        tier, drail = data.get(TIER), data.get(RAIL)
        devices.append(
            DeviceView(
                name,
                Role(data[ROLE]),
                tier if isinstance(tier, int) else None,
                drail if isinstance(drail, int) else None,
            )
        )
    return TopologyView(devices, links)
