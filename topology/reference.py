"""A generator of the NVIDIA-style rail-optimized, non-blocking reference fabric.

Scalable units (SUs) of 32 8-GPU nodes; NIC `mlx5_r` of every node in an SU goes to that SU's
rail-r leaf, so each SU has one leaf per rail. Each leaf has as many uplinks as downlinks
(radix/2 each), so the fabric is non-blocking.

- Two tiers when every leaf fits under one spine layer (leaves <= radix): every leaf reaches
  every spine with `u` parallel cables, u being the largest power of two with leaves*u <= radix,
  and radix/2/u spines. 64 nodes: 16 leaves, 8 spines, 4 cables per leaf-spine pair.
- Three tiers beyond that (288 nodes with radix 64): pods of radix/2 leaves (4 SUs) each with
  radix/2 spines, one cable from every leaf to every spine of its pod; spine j of every pod goes
  up to super-spine plane j, whose members split its radix/2 uplinks evenly.

Spines are shared by all rails (as in NVIDIA's SuperPOD designs), so cross-rail traffic can
cross the fabric through a spine. Interface names follow each switch's platform: Cumulus `swpN`,
SONiC `EthernetN` (lane-numbered, 8 lanes per 800G port), Arista `EthernetN/1`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import Endpoint

SU_NODES = 32
RAILS = 8
DEFAULT_PLATFORMS = {"leaf": "cumulus", "spine": "sonic", "super-spine": "arista"}


def port_name(platform: str, n: int) -> str:
    """The n-th (1-based) 800G port's interface name on a platform.

    >>> port_name("cumulus", 3), port_name("sonic", 3), port_name("arista", 3)
    ('swp3', 'Ethernet16', 'Ethernet3/1')
    """
    if platform == "cumulus":
        return f"swp{n}"
    if platform == "sonic":
        return f"Ethernet{(n - 1) * 8}"
    if platform == "arista":
        return f"Ethernet{n}/1"
    raise ValueError(f"unknown platform {platform!r}; expected cumulus, sonic or arista")


@dataclass(slots=True)
class ReferenceDesign:
    plan: CablePlan
    hosts: list[str] = field(default_factory=list)
    leaves: list[str] = field(default_factory=list)
    spines: list[str] = field(default_factory=list)
    super_spines: list[str] = field(default_factory=list)
    platform: dict[str, str] = field(default_factory=dict)
    rails: int = RAILS

    def nic(self, host_index: int, rail: int) -> Endpoint:
        return Endpoint(self.hosts[host_index], f"mlx5_{rail}")


class _Ports:
    """Hands out the next free port of each switch, named for its platform."""

    def __init__(self, platform: dict[str, str]) -> None:
        self.platform = platform
        self.next: dict[str, int] = {}

    def take(self, device: str) -> Endpoint:
        n = self.next.get(device, 0) + 1
        self.next[device] = n
        return Endpoint(device, port_name(self.platform[device], n))


def rail_optimized(
    nodes: int,
    rails: int = RAILS,
    radix: int = 64,
    platforms: dict[str, str] | None = None,
) -> ReferenceDesign:
    """Generate the cable plan of a `nodes`-node rail-optimized fabric.

    >>> d = rail_optimized(64)
    >>> len(d.hosts), len(d.leaves), len(d.spines), len(d.super_spines), len(d.plan.cables)
    (64, 16, 8, 0, 1024)
    >>> d = rail_optimized(288)
    >>> len(d.leaves), len(d.spines), len(d.super_spines)
    (72, 96, 64)
    """
    if nodes < 1 or rails < 1:
        raise ValueError("nodes and rails must be positive")
    half = radix // 2
    if half < SU_NODES or rails > half:
        raise ValueError(f"radix {radix} too small for {SU_NODES}-node SUs with {rails} rails")
    plat = {**DEFAULT_PLATFORMS, **(platforms or {})}
    sus = math.ceil(nodes / SU_NODES)
    design = ReferenceDesign(plan=CablePlan(), rails=rails)
    ports = _Ports(design.platform)
    cables = design.plan.cables

    def add(device: str, role: str, into: list[str]) -> str:
        design.platform[device] = plat[role]
        into.append(device)
        return device

    design.hosts = [f"hgx-su{i // SU_NODES + 1:02d}-{i % SU_NODES + 1:02d}" for i in range(nodes)]
    leaf_of: dict[tuple[int, int], str] = {}
    for su in range(sus):
        for rail in range(rails):
            leaf_of[su, rail] = add(f"leaf-su{su + 1:02d}-r{rail}", "leaf", design.leaves)
    for i, host in enumerate(design.hosts):
        for rail in range(rails):
            cables.append(
                Cable(Endpoint(host, f"mlx5_{rail}"), ports.take(leaf_of[i // SU_NODES, rail]))
            )
    # Leaf uplinks start after the downlink block, as on a real leaf.
    for leaf in design.leaves:
        ports.next[leaf] = half
    leaves = design.leaves
    if len(leaves) <= radix:
        per_pair = 1 << int(math.log2(radix // len(leaves))) if len(leaves) <= half else 1
        per_pair = min(per_pair, half)
        spines = [
            add(f"spine-{j + 1:02d}", "spine", design.spines) for j in range(half // per_pair)
        ]
        for leaf in leaves:
            for spine in spines:
                for _ in range(per_pair):
                    cables.append(Cable(ports.take(leaf), ports.take(spine)))
        return design
    pod_leaves = half
    pods = [leaves[i : i + pod_leaves] for i in range(0, len(leaves), pod_leaves)]
    per_plane = math.ceil(len(pods) * half / radix)
    planes = [
        [
            add(f"superspine-{j + 1:02d}-{k + 1}", "super-spine", design.super_spines)
            for k in range(per_plane)
        ]
        for j in range(half)
    ]
    for p, pod in enumerate(pods):
        pod_spines = [
            add(f"spine-p{p + 1}-{j + 1:02d}", "spine", design.spines) for j in range(half)
        ]
        for leaf in pod:
            for spine in pod_spines:
                cables.append(Cable(ports.take(leaf), ports.take(spine)))
        for j, spine in enumerate(pod_spines):
            ports.next[spine] = half
            for u in range(half):
                cables.append(Cable(ports.take(spine), ports.take(planes[j][u % per_plane])))
    return design
