"""The cluster a world's dimensions describe: its devices, their names and its cables.

Rail-optimized as the GPU reference designs build it: in each scalable unit, NIC port r of
every node goes to the unit's leaf for rail r (one leaf per rail and plane); every leaf's
uplinks go to the spines of its plane (spread evenly, so a leaf may have several parallel
cables to one spine); with three tiers, scalable units are grouped into pods, each pod with its
own spines, and every spine goes up to the super-spines of its plane.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import NamedTuple

from railtrace.world.dimensions import Dimensions

RAILS = 8
#: Scalable units per pod in a three-tier fabric.
POD_UNITS = 2


class Port(NamedTuple):
    device: str
    name: str


@dataclass(frozen=True, slots=True)
class Cable:
    """`a` is the lower end (the host, or the leaf of an uplink), `b` the upper end."""

    a: Port
    b: Port
    tier: str  # "host" (NIC to leaf), "uplink" (leaf to spine), "spine" (spine to super-spine)

    def other(self, device: str) -> Port:
        return self.b if self.a.device == device else self.a

    @property
    def name(self) -> str:
        """The cable as the accuracy tables name it: its two ends, sorted."""
        return "--".join(sorted(f"{p.device}:{p.name}" for p in (self.a, self.b)))


@dataclass(slots=True)
class Cluster:
    dims: Dimensions
    hosts: list[str] = field(default_factory=list)
    unit_of: dict[str, int] = field(default_factory=dict)
    #: (host, rail, plane) -> the NIC port.
    nic: dict[tuple[str, int, int], Port] = field(default_factory=dict)
    #: (unit, rail, plane) -> leaf name.
    leaf: dict[tuple[int, int, int], str] = field(default_factory=dict)
    #: (pod, plane) -> spine names.
    spines: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    #: plane -> super-spine names.
    supers: dict[int, list[str]] = field(default_factory=dict)
    cables: list[Cable] = field(default_factory=list)
    at: dict[Port, Cable] = field(default_factory=dict)
    #: device -> its cables towards the next tier up, in port order.
    up: dict[str, list[Cable]] = field(default_factory=dict)
    address: dict[Port, str] = field(default_factory=dict)
    #: The InfiniBand-style local id of each NIC port (destination-based routing keys on it).
    lid: dict[Port, int] = field(default_factory=dict)
    switch_ports: dict[str, int] = field(default_factory=dict)

    @property
    def planes(self) -> int:
        return self.dims.planes

    def pod_of(self, unit: int) -> int:
        return unit // POD_UNITS if self.dims.tiers == 3 else 0

    def switches(self) -> list[str]:
        return sorted(self.switch_ports)

    def connect(self, a: Port, b: Port, tier: str) -> Cable:
        cable = Cable(a, b, tier)
        self.cables.append(cable)
        self.at[a] = cable
        self.at[b] = cable
        self.up.setdefault(a.device, []).append(cable)
        return cable


def port_name(vendor: str, number: int, planes: int) -> str:
    """The `number`th front-panel port (from 1) as the vendor names it; a 400G port of a
    two-plane fabric is half the lanes of an 800G one."""
    if vendor == "cumulus":
        return f"swp{number}"
    if vendor == "sonic":
        lanes = 8 if planes == 1 else 4
        return f"Ethernet{(number - 1) * lanes}"
    if vendor == "eos":
        return f"Ethernet{number}/1"
    return f"Ethernet1/{number}"  # NX-OS


class _Names:
    """Device names in one of a few site conventions."""

    def __init__(self, rng: random.Random, planes: int) -> None:
        self.style = rng.randrange(3)
        self.site = rng.choice(("ams1", "iad2", "dfw3", "sjc4"))
        self.planes = planes
        self.counts = {1: 0, 2: 0, 3: 0}
        self.host_style = rng.randrange(4)

    def host(self, unit: int, slot: int, index: int) -> str:
        if self.host_style == 0:
            return f"gpu-su{unit + 1:02d}-{slot + 1:02d}"
        if self.host_style == 1:
            return f"gpu{index + 1:04d}"
        if self.host_style == 2:
            return f"r{unit + 1:02d}-n{slot + 1:02d}"
        return f"b300n{index + 1:03d}"

    def switch(self, tier: int, label: str) -> str:
        self.counts[tier] += 1
        n = self.counts[tier]
        if self.style == 0:
            return label
        if self.style == 1:
            return f"sw{tier}-{n:04d}"
        kind = {1: "lf", 2: "sp", 3: "ssp"}[tier]
        return f"{self.site}-{kind}{n:03d}"


def build(dims: Dimensions, rng: random.Random) -> Cluster:
    """The cluster of `dims`; `rng` draws only names."""
    cluster = Cluster(dims)
    names = _Names(rng, dims.planes)
    units = dims.nodes // dims.su_nodes
    pods = -(-units // POD_UNITS) if dims.tiers == 3 else 1
    uplinks = max(1, dims.su_nodes // dims.oversubscription)
    plane_tag = ("a", "b")
    for plane in range(dims.planes):
        tag = plane_tag[plane] if dims.planes > 1 else ""
        for pod in range(pods):
            cluster.spines[(pod, plane)] = [
                names.switch(2, f"spine{tag}-p{pod + 1}-{k + 1:02d}") for k in range(dims.spines)
            ]
        if dims.tiers == 3:
            cluster.supers[plane] = [
                names.switch(3, f"super{tag}-{k + 1:02d}") for k in range(max(2, dims.spines // 2))
            ]
    for unit in range(units):
        for rail in range(RAILS):
            for plane in range(dims.planes):
                tag = plane_tag[plane] if dims.planes > 1 else ""
                label = f"leaf-su{unit + 1:02d}-r{rail}{tag}"
                cluster.leaf[(unit, rail, plane)] = names.switch(1, label)
    next_port: dict[str, int] = {}

    def port(device: str) -> Port:
        next_port[device] = next_port.get(device, 0) + 1
        return Port(device, port_name(dims.vendor, next_port[device], dims.planes))

    index = 0
    for unit in range(units):
        for slot in range(dims.su_nodes):
            host = names.host(unit, slot, index)
            cluster.hosts.append(host)
            cluster.unit_of[host] = unit
            for rail in range(RAILS):
                for plane in range(dims.planes):
                    nic = Port(host, f"mlx5_{rail * dims.planes + plane}")
                    cluster.nic[(host, rail, plane)] = nic
                    cluster.address[nic] = (
                        f"10.{rail * dims.planes + plane}.{index // 250}.{index % 250 + 1}"
                    )
                    cluster.lid[nic] = len(cluster.lid) + 1
                    cluster.connect(nic, port(cluster.leaf[(unit, rail, plane)]), "host")
            index += 1
    for (unit, _rail, plane), leaf in sorted(cluster.leaf.items()):
        spines = cluster.spines[(cluster.pod_of(unit), plane)]
        for k in range(uplinks):
            cluster.connect(port(leaf), port(spines[k % len(spines)]), "uplink")
    for (_pod, plane), spines in sorted(cluster.spines.items()):
        for spine in spines:
            for sup in cluster.supers.get(plane, []):
                cluster.connect(port(spine), port(sup), "spine")
    cluster.switch_ports = dict(next_port)  # only switches are numbered: hosts name NICs
    return cluster


def cables_csv(cluster: Cluster) -> str:
    """The plan as NetBox's cable bulk import takes it."""
    rows = ["side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name"]
    for c in cluster.cables:
        rows.append(
            f"{c.a.device},dcim.interface,{c.a.name},{c.b.device},dcim.interface,{c.b.name}"
        )
    return "\n".join(rows) + "\n"


def hosts_csv(cluster: Cluster) -> str:
    rows = ["device,interface,ip"]
    rows += [f"{p.device},{p.name},{ip}" for p, ip in sorted(cluster.address.items())]
    return "\n".join(rows) + "\n"
