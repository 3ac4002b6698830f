"""The cabled fabric as a networkx MultiGraph, with roles and rails inferred from its shape.

Roles come from the graph, never from device names: hosts are the devices whose cabled
interfaces are RDMA devices (the names NCCL prints, e.g. `mlx5_0`), leaves are the switches
one hop from a host, spines one hop further, super-spines beyond. A leaf's rail is the NIC
position (among each host's cabled NICs) most of its host ports have; a NIC's rail is then
the rail of the leaf it is cabled to, so a host whose NICs are named unlike the others (DGX's
compute NICs mlx5_0,3,4,5,6,9,10,11 beside storage NICs) or that lacks a cable keeps every
other NIC on its true rail. Only a NIC cabled to no leaf falls back to its position.
Parallel cables between two switches are normal in a rail fabric, hence a MultiGraph keyed by
link id.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import dataclass, field

import networkx as nx

from railtrace.topology.attrs import IF_OF, RAIL, ROLE, TIER, Role
from railtrace.topology.cabling import CablePlan
from railtrace.topology.ends import Endpoint, LinkRef
from railtrace.topology.gids import address_of_gid, gid_key
from railtrace.topology.gpunics import GpuNics

#: RDMA device names as the kernel and NCCL print them (Mellanox/NVIDIA, Broadcom, Intel,
#: AMD Pensando, Marvell/QLogic, Cornelis, AWS EFA, and udev-renamed RoCE/IB ports).
RDMA_DEVICE = re.compile(
    r"^(mlx[45]_(bond_)?\d+|bnxt_re\d+|irdma\d*[-_]?\w*|ionic_\d+|qedr\d+|hfi1_\d+|efa_\d+|"
    r"erdma_\d+|rocep\w+|ibp\w+|roce\w*\d+)$"
)

_TIER_ROLES = {0: Role.HOST, 1: Role.LEAF, 2: Role.SPINE, 3: Role.SUPER_SPINE}


def link_id(a: Endpoint, b: Endpoint) -> str:
    """A stable id for a cable, the same whichever end is named first.

    >>> link_id(Endpoint("leaf1", "swp1"), Endpoint("node1", "mlx5_0"))
    'leaf1:swp1--node1:mlx5_0'
    >>> link_id(Endpoint("node1", "mlx5_0"), Endpoint("leaf1", "swp1"))
    'leaf1:swp1--node1:mlx5_0'
    """
    lo, hi = sorted(((a.device, a.interface), (b.device, b.interface)))
    return f"{lo[0]}:{lo[1]}--{hi[0]}:{hi[1]}"


def _natural(name: str) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


@dataclass(slots=True)
class Fabric:
    """A built fabric: the graph plus the indexes every lookup on the hot path needs."""

    graph: nx.MultiGraph
    links: dict[str, LinkRef] = field(default_factory=dict)
    link_at: dict[Endpoint, str] = field(default_factory=dict)
    nic_leaf: dict[Endpoint, str] = field(default_factory=dict)
    nic_rail: dict[Endpoint, int] = field(default_factory=dict)
    host_nics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: (host, rail) -> the host's NIC on that rail (the first by name, should two share one).
    rail_nic: dict[tuple[str, int], str] = field(default_factory=dict)
    address_of: dict[str, Endpoint] = field(default_factory=dict)
    #: Links cabled unlike the plan (see `asbuilt`), with what the plan says instead.
    as_built: dict[str, str] = field(default_factory=dict)
    #: Which NICs each GPU sends through (`gpunics`), per host, and for hosts not named.
    gpu_nics: dict[str, GpuNics] = field(default_factory=dict)
    default_gpu_nics: GpuNics | None = None
    #: RoCE GID (`gids.gid_key`) -> its NIC, from the hosts' `show_gids` tables.
    gid_nic: dict[str, Endpoint] = field(default_factory=dict)
    # device -> its cabled ports and their links, indexed on first use (see `ports`)
    _device_ports: dict[str, list[tuple[Endpoint, str]]] | None = field(
        default=None, repr=False, compare=False
    )

    def role(self, device: str) -> Role | None:
        data = self.graph.nodes.get(device)
        return None if data is None else Role(data[ROLE])

    def rail(self, device: str) -> int | None:
        data = self.graph.nodes.get(device)
        return None if data is None else data.get(RAIL)

    def hosts(self) -> list[str]:
        return sorted(self.host_nics)

    def switches(self, role: Role | None = None) -> list[str]:
        return sorted(
            n
            for n, d in self.graph.nodes(data=True)
            if d[ROLE] != Role.HOST and (role is None or d[ROLE] == role)
        )

    def ports(self, device: str) -> list[tuple[Endpoint, str]]:
        """`device`'s cabled ports, each with its link id, in plan order. Indexed on first
        use: only pause-spreading and the simulator ask a device for all its ports."""
        if self._device_ports is None:
            self._device_ports = {}
            for ep, lid in self.link_at.items():
                self._device_ports.setdefault(ep.device, []).append((ep, lid))
        return self._device_ports.get(device, [])

    def job_nics(self, host: str, gpus: tuple[int, ...]) -> tuple[str, ...]:
        """The cabled NICs of `host` that a job holding its GPUs `gpus` sends through: those
        closest to the GPUs, when the host's GPU-to-NIC map is known; every cabled NIC when
        it is not, when `gpus` is not known, or when the map names none of the cabled NICs
        (names spelled unlike cables.csv must not take a host's traffic away)."""
        cabled = self.host_nics.get(host, ())
        known = self.gpu_nics.get(host, self.default_gpu_nics)
        near = known.nics_of(gpus) if known is not None and gpus else None
        if near is None:
            return cabled
        used = tuple(n for n in cabled if n in near)
        return used or cabled

    def nic_of_gid(self, gid: str) -> Endpoint | None:
        """The NIC a RoCE GID belongs to: by the hosts' GID tables, else by the address it
        stands for in hosts.csv; None when neither knows it (see `gids`).

        >>> from railtrace.topology.cabling import Cable
        >>> f = build_fabric(CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("sw", "p1"))]),
        ...                  {"10.0.0.1": Endpoint("n1", "mlx5_0")})
        >>> f.nic_of_gid("::ffff:10.0.0.1"), f.nic_of_gid("::ffff:10.0.0.9")
        (Endpoint(device='n1', interface='mlx5_0'), None)
        """
        key = gid_key(gid)
        if key is None:
            return None
        nic = self.gid_nic.get(key)
        if nic is not None:
            return nic
        address = address_of_gid(key)
        return None if address is None else self.address_of.get(address)

    def host_link(self, nic: Endpoint) -> str | None:
        """The link id of the cable from a host NIC to its leaf."""
        return self.link_at.get(nic)


def build_fabric(plan: CablePlan, addresses: dict[str, Endpoint] | None = None) -> Fabric:
    """Build the graph from a cable plan and infer roles, tiers and rails.

    >>> from railtrace.topology.cabling import Cable
    >>> plan = CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("sw-a", "p1")),
    ...                   Cable(Endpoint("sw-a", "p9"), Endpoint("sw-b", "p1"))])
    >>> f = build_fabric(plan)
    >>> f.role("n1"), f.role("sw-a"), f.role("sw-b"), f.rail("sw-a")
    (<Role.HOST: 'host'>, <Role.LEAF: 'leaf'>, <Role.SPINE: 'spine'>, 0)
    """
    graph = nx.MultiGraph()
    fabric = Fabric(graph=graph, address_of=dict(addresses or {}))
    host_ifaces: dict[str, set[str]] = {}
    for cable in plan.cables:
        lid = link_id(cable.a, cable.b)
        ref = LinkRef(lid, *sorted((cable.a, cable.b), key=lambda e: (e.device, e.interface)))
        fabric.links[lid] = ref
        fabric.link_at[cable.a] = lid
        fabric.link_at[cable.b] = lid
        graph.add_edge(
            cable.a.device,
            cable.b.device,
            key=lid,
            **{IF_OF: {cable.a.device: cable.a.interface, cable.b.device: cable.b.interface}},
        )
        for end in (cable.a, cable.b):
            if RDMA_DEVICE.match(end.interface):
                host_ifaces.setdefault(end.device, set()).add(end.interface)
    for ep in fabric.address_of.values():
        host_ifaces.setdefault(ep.device, set())
    _assign_tiers(fabric, set(host_ifaces) & set(graph.nodes))
    for host in sorted(host_ifaces):
        if host not in graph:
            continue
        nics = tuple(
            sorted(
                (i for i in host_ifaces[host] if Endpoint(host, i) in fabric.link_at), key=_natural
            )
        )
        fabric.host_nics[host] = nics
        for rail, nic in enumerate(nics):
            ep = Endpoint(host, nic)
            fabric.nic_rail[ep] = rail
            peer = _peer_device(fabric, ep)
            if peer is not None and graph.nodes[peer][ROLE] == Role.LEAF:
                fabric.nic_leaf[ep] = peer
    _assign_leaf_rails(fabric)
    for host, nics in fabric.host_nics.items():
        for nic in nics:
            ep = Endpoint(host, nic)
            leaf = fabric.nic_leaf.get(ep)
            if leaf is not None:
                fabric.nic_rail[ep] = graph.nodes[leaf][RAIL]
            fabric.rail_nic.setdefault((host, fabric.nic_rail[ep]), nic)
    return fabric


def _peer_device(fabric: Fabric, ep: Endpoint) -> str | None:
    lid = fabric.link_at.get(ep)
    if lid is None:
        return None
    ref = fabric.links[lid]
    return ref.b.device if ref.a == ep else ref.a.device


def _assign_tiers(fabric: Fabric, hosts: set[str]) -> None:
    """Breadth-first from every host at once: the hop count is the tier."""
    graph = fabric.graph
    tier: dict[str, int] = dict.fromkeys(hosts, 0)
    queue = deque(sorted(hosts))
    while queue:
        node = queue.popleft()
        for nbr in sorted(graph.adj[node]):
            if nbr not in tier:
                tier[nbr] = tier[node] + 1
                queue.append(nbr)
    for node in graph.nodes:
        t = tier.get(node)
        graph.nodes[node][TIER] = t
        graph.nodes[node][ROLE] = _TIER_ROLES.get(t, Role.SWITCH) if t is not None else Role.SWITCH


def _assign_leaf_rails(fabric: Fabric) -> None:
    votes: dict[str, Counter[int]] = {}
    for nic, leaf in fabric.nic_leaf.items():
        votes.setdefault(leaf, Counter())[fabric.nic_rail[nic]] += 1
    for leaf, counter in votes.items():
        rail, _ = min(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        fabric.graph.nodes[leaf][RAIL] = rail


class PortLinks:
    """Switch port -> cable id, memoised: the lookup made for every sample on the hot path.

    >>> from railtrace.topology.cabling import Cable
    >>> fabric = build_fabric(CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("sw", "p1"))]))
    >>> links = PortLinks(fabric)
    >>> links("sw", "p1"), links("sw", "p9")
    ('n1:mlx5_0--sw:p1', '')
    """

    def __init__(self, fabric: Fabric) -> None:
        self._link_at = fabric.link_at
        self._cache: dict[tuple[str, str], str] = {}

    def __call__(self, device: str, interface: str) -> str:
        """The cable id, or "" when the plan has no such cable."""
        key = (device, interface)
        lid = self._cache.get(key)
        if lid is None:
            lid = self._cache[key] = self._link_at.get(Endpoint(device, interface), "")
        return lid
