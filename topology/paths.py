"""Which links a flow between two NICs can cross, and how likely it crosses each.

A flow from one NIC to another leaves on its host cable, climbs from its leaf to the lowest
tier that reaches the other leaf, and comes down. Switches spread flows over every equal-cost
next hop (ECMP), each parallel cable counting once, so the chance that a flow crosses a link is
found by pushing probability 1 from the source leaf down the shortest-path DAG towards the
target leaf, split evenly at each switch over its equal-cost cables. Hosts are never transit.

Results are cached per (leaf, leaf) pair: a 2,304-rank job has thousands of flows but only a
few thousand distinct leaf pairs even at 288 nodes.

A job whose NCCL printed no channels may use every pair of its leaves on each rail: tens of
thousands of pairs for a 3,000-node job at 12,500 nodes. Leaves cabled to the very same
switches (a pod's leaves, of every rail, in the reference designs) are twins: swapping two of
them maps the fabric onto itself, so a pair's weights follow from those of one pair of their
twin classes with only the end cables renamed. The mesh is worked out per pair of classes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from railtrace.topology.attrs import ROLE, Role
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric

LinkWeights = dict[str, float]
#: Searches kept, one per target leaf: up to 7,000 switches each at 12,500 nodes (~0.6 MiB).
SEARCHES_KEPT = 256
#: Links kept over the cached leaf pairs: a pair across pods is 2,112 links at 12,500 nodes.
PAIR_LINKS_KEPT = 1_000_000
#: Links kept over the cached meshes (their switch-to-switch part): a 3,125-node job's is 75k.
MESH_LINKS_KEPT = 500_000
# target -> source -> (the real sources, the real targets) the walk between them stands for
_Walks = dict[str, dict[str, tuple[dict[str, None], dict[str, None]]]]
#: A switch's equal-cost cables towards a target: (next switch, link id), one per cable.
Hops = list[tuple[str, str]]


class PathFinder:
    """Path sets over one fabric. Holds only caches; the fabric itself is never changed.

    >>> from railtrace.topology.reference import rail_optimized
    >>> from railtrace.topology.fabric import build_fabric
    >>> design = rail_optimized(nodes=64)
    >>> pf = PathFinder(build_fabric(design.plan))
    >>> a, b = Endpoint(design.hosts[0], "mlx5_0"), Endpoint(design.hosts[40], "mlx5_0")
    >>> w = pf.flow_links(a, b)
    >>> round(sum(w.values()), 6)  # 2 host cables, 1 leaf->spine hop, 1 spine->leaf hop
    4.0
    """

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self._switch_adj: dict[str, dict[str, list[str]]] = {}
        for node, nbrs in fabric.graph.adj.items():
            if fabric.graph.nodes[node][ROLE] == Role.HOST:
                continue
            self._switch_adj[node] = {
                nbr: sorted(keys)
                for nbr, keys in nbrs.items()
                if fabric.graph.nodes[nbr][ROLE] != Role.HOST
            }
        # target -> (hop counts found so far, the search's queue): see `_distances_to`
        self._dist: _Recent[str, tuple[dict[str, int], deque[str]]] = _Recent(SEARCHES_KEPT)
        # sized by links, and one more for the pair itself: an empty answer costs something too
        self._leaf_pairs: _Recent[tuple[str, str], LinkWeights] = _Recent(
            PAIR_LINKS_KEPT, lambda w: len(w) + 1
        )
        self._twins: dict[str, tuple[str, ...]] | None = None
        self._meshes: _Recent[tuple[tuple[str, ...], ...], LinkWeights] = _Recent(
            MESH_LINKS_KEPT, lambda w: len(w) + 1
        )

    def _distances_to(self, target: str, reach: str) -> dict[str, int]:
        """Hop counts to `target`, found far enough to hold `reach` (when it is reachable).

        The breadth-first search stops as soon as `reach` is found and goes on from there for
        the next source: at 12,500 nodes a whole search is ten milliseconds and a job's ring
        flows mostly join leaves of one pod, two hops apart. Found in first-in first-out
        order, every switch nearer to `target` than `reach` is already found then, with its
        final count, and those are all a walk down from `reach` reads.
        """
        search = self._dist.get(target)
        if search is None:
            search = ({target: 0}, deque([target]))
            self._dist.put(target, search)
        dist, queue = search
        adjacency = self._switch_adj
        while reach not in dist and queue:
            node = queue.popleft()
            hops = dist[node] + 1
            for nbr in adjacency[node]:
                if nbr not in dist:
                    dist[nbr] = hops
                    queue.append(nbr)
        return dist

    @staticmethod
    def _walk(
        src: str, dst: str, hops_of: Callable[[str], Hops]
    ) -> Iterator[tuple[str, float, Hops]]:
        """The ECMP split of a flow from `src` to `dst`: each switch it reaches before `dst`,
        tier by tier, with the share of the flow each of its equal-cost cables carries.

        The one walk behind both a flow's weights and a mesh's. Switches of a tier are taken
        in name order, so a switch's share is summed in the same order whoever asks."""
        mass = {src: 1.0}
        frontier = [src]
        while frontier:
            nxt: dict[str, float] = {}
            for node in frontier:
                hops = hops_of(node)
                share = mass[node] / len(hops)
                yield node, share, hops
                for nbr, _ in hops:
                    nxt[nbr] = nxt.get(nbr, 0.0) + share
            mass = nxt
            frontier = [n for n in sorted(nxt) if n != dst]

    def leaf_to_leaf(self, src: str, dst: str) -> LinkWeights:
        """Crossing probability of each switch-to-switch link for a flow from `src` to `dst`."""
        key = (src, dst)
        cached = self._leaf_pairs.get(key)
        if cached is not None:
            return cached
        weights: LinkWeights = {}
        dist = self._distances_to(dst, src)
        if src != dst and src in dist:
            for _, share, hops in self._walk(
                src, dst, lambda node: _nearer(self._switch_adj, node, dist)
            ):
                for _, lid in hops:
                    weights[lid] = weights.get(lid, 0.0) + share
        self._leaf_pairs.put(key, weights)
        return weights

    def flow_links(self, src: Endpoint, dst: Endpoint) -> LinkWeights:
        """Every link a flow between two host NICs may cross, with its crossing probability.

        Unknown NICs (not in the cabling plan) give an empty set: nothing can be blamed on a
        path railtrace cannot place.
        """
        fabric = self.fabric
        src_link, dst_link = fabric.link_at.get(src), fabric.link_at.get(dst)
        src_leaf, dst_leaf = fabric.nic_leaf.get(src), fabric.nic_leaf.get(dst)
        if src_link is None or dst_link is None or src_leaf is None or dst_leaf is None:
            return {}
        if src_leaf != dst_leaf and not self.leaf_to_leaf(src_leaf, dst_leaf):
            return {}
        weights = dict(self.leaf_to_leaf(src_leaf, dst_leaf))
        weights[src_link] = 1.0
        weights[dst_link] = 1.0
        return weights

    def mesh_links(
        self, hosts: Iterable[str], nics_of: Callable[[str], Iterable[str]] | None = None
    ) -> LinkWeights:
        """Every link the traffic of a job on `hosts` may cross when nothing says which hosts
        talk (NCCL at WARN prints no channels): every pair of the hosts on each rail, which
        covers rings and trees in any order, MoE all-to-all and PXN (which keeps traffic on
        its rail).

        A switch-to-switch link weighs what one pair's flow gives it, the most over the
        pairs, not the chance that any of them crosses it: that chance would be near 1 for
        every uplink of a large job, while a ring or a tree crosses a given uplink with a few
        flows, so a fault on an uplink it never used would be blamed as surely as one on its
        own cable. Host cables weigh 1. Hosts under one leaf share its uplinks, and twin
        leaves share their walks (see `_leaf_mesh`): a 3,125-host job at 12,500 nodes walks
        a few hundred pairs of pods, not 38,024 pairs of leaves or 39 million of hosts.
        `nics_of(host)` names the NICs the job uses on a host (those near its GPUs); default:
        all of them.
        """
        fabric = self.fabric
        by_rail: dict[int, dict[str, list[str]]] = {}
        for host in sorted(set(hosts)):
            for nic in fabric.host_nics.get(host, ()) if nics_of is None else nics_of(host):
                ep = Endpoint(host, nic)
                leaf, lid = fabric.nic_leaf.get(ep), fabric.link_at.get(ep)
                if leaf is not None and lid is not None:
                    by_rail.setdefault(fabric.nic_rail[ep], {}).setdefault(leaf, []).append(lid)
        weights: LinkWeights = {}
        talking: list[tuple[str, ...]] = []
        for _, leaves in sorted(by_rail.items()):
            if sum(len(lids) for lids in leaves.values()) < 2:
                continue  # one host on this rail: no flow on it
            for lids in leaves.values():
                weights.update(dict.fromkeys(lids, 1.0))
            talking.append(tuple(sorted(leaves)))
        weights.update(self._leaf_meshes(tuple(talking)))
        return weights

    def _leaf_meshes(self, rails: tuple[tuple[str, ...], ...]) -> LinkWeights:
        """The switch-to-switch part of a mesh: each rail's leaves, every pair of them.

        Kept for the same leaves: a job whose hosts are learnt one line at a time (no
        scheduler record) asks again at each new host, and most of them sit under leaves
        it already has."""
        cached = self._meshes.get(rails)
        if cached is not None:
            return cached
        weights: LinkWeights = {}
        walks: _Walks = {}
        for leaves in rails:
            self._leaf_mesh(list(leaves), walks, weights)
        ends: dict[tuple[str, str], float] = {}
        for dst in sorted(walks):
            self._walks_to(dst, walks[dst], weights, ends)
        for (u, v), p in ends.items():
            for lid in self._switch_adj[u][v]:
                _raise_one(weights, lid, p)
        self._meshes.put(rails, weights)
        return weights

    def _twin_classes(self) -> dict[str, tuple[str, ...]]:
        """Each leaf's twins (itself included, by name): the leaves cabled to the same
        switches with as many cables each."""
        if self._twins is None:
            by_key: dict[tuple[tuple[str, int], ...], list[str]] = {}
            for leaf in sorted(set(self.fabric.nic_leaf.values())):
                nbrs = self._switch_adj.get(leaf, {})
                key = tuple(sorted((nbr, len(lids)) for nbr, lids in nbrs.items()))
                by_key.setdefault(key, []).append(leaf)
            self._twins = {leaf: tuple(c) for c in by_key.values() for leaf in c}
        return self._twins

    def _leaf_mesh(self, leaves: list[str], walks: _Walks, weights: LinkWeights) -> None:
        """Plan the walks that give each link the most any flow from a leaf to a later one
        (by name) of `leaves` gives it.

        Per pair of twin classes, the walk runs between two of their members (their first,
        or first two) and its cables leaving the source or entering the target are renamed
        to every real pair's. Two twins are never on a walk between others (they reach no
        switch the end one does not), so only the end cables differ between pairs. A pod's
        leaves of every rail are twins here, so the rails of a job share their walks."""
        twins = self._twin_classes()
        present: dict[tuple[str, ...], list[str]] = {}
        for leaf in leaves:
            present.setdefault(twins.get(leaf, (leaf,)), []).append(leaf)
        for c2, targets in present.items():
            for c1, sources in present.items():
                real_src = [a for a in sources if a < targets[-1]]
                if not real_src:
                    continue
                real_dst = [b for b in targets if b > sources[0]]
                src, dst = c1[0], c2[1] if c1 == c2 else c2[0]
                if any(b in self._switch_adj.get(src, {}) for b in c2):
                    # Leaves cabled to each other: the end cables are not a rename away.
                    for a in real_src:
                        for b in real_dst:
                            if a < b:
                                _raise(weights, self.leaf_to_leaf(a, b))
                    continue
                ends = walks.setdefault(dst, {}).setdefault(src, ({}, {}))
                ends[0].update(dict.fromkeys(real_src))
                ends[1].update(dict.fromkeys(real_dst))

    def _walks_to(
        self,
        dst: str,
        walks: dict[str, tuple[dict[str, None], dict[str, None]]],
        weights: LinkWeights,
        ends: dict[tuple[str, str], float],
    ) -> None:
        """The walks of `_leaf_mesh` that end at `dst`, sharing its hop counts and each
        switch's cables towards it. A switch inside the walks weighs the most any of them
        sends through it; the end cables, renamed to the real pairs', go to `ends` as the
        most any walk sends over them, per pair of switches."""
        dist: dict[str, int] = {}
        for src in walks:
            dist = self._distances_to(dst, src)
        toward = _Toward(self._switch_adj, dist)
        inside: dict[str, float] = {}
        for src, (real_src, real_dst) in sorted(walks.items()):
            if src not in dist:
                continue  # no way between the two classes
            for node, share, hops in self._walk(src, dst, toward.hops):
                p = min(share, 1.0)
                if node == src:  # the source's own cables: every real source's
                    for nbr in dict.fromkeys(nbr for nbr, _ in hops):
                        for a in real_src:
                            if p > ends.get((a, nbr), 0.0):
                                ends[a, nbr] = p
                    continue
                if p > inside.get(node, 0.0):
                    inside[node] = p
                if hops[0][0] == dst:  # the cables into the target: every real target's
                    for b in real_dst:
                        if p > ends.get((node, b), 0.0):
                            ends[node, b] = p
        for node, p in inside.items():
            for nbr, lid in toward.hops(node):
                if nbr != dst:
                    _raise_one(weights, lid, p)

    def candidate_paths(
        self, src: Endpoint, dst: Endpoint, limit: int = 10_000
    ) -> Iterator[tuple[str, ...]]:
        """Enumerate the explicit link-by-link paths (the ECMP set), for display and checks.

        The count multiplies with every tier, so callers that only need weights should use
        `flow_links`; `limit` bounds the enumeration.
        """
        fabric = self.fabric
        src_link, dst_link = fabric.link_at.get(src), fabric.link_at.get(dst)
        src_leaf, dst_leaf = fabric.nic_leaf.get(src), fabric.nic_leaf.get(dst)
        if src_link is None or dst_link is None or src_leaf is None or dst_leaf is None:
            return
        dist = self._distances_to(dst_leaf, src_leaf)
        if src_leaf not in dist:
            return
        emitted = 0
        stack: list[tuple[str, tuple[str, ...]]] = [(src_leaf, (src_link,))]
        while stack and emitted < limit:
            node, path = stack.pop()
            if node == dst_leaf:
                emitted += 1
                yield (*path, dst_link)
                continue
            for nbr in sorted(self._switch_adj[node], reverse=True):
                if dist.get(nbr) == dist[node] - 1:
                    for lid in reversed(self._switch_adj[node][nbr]):
                        stack.append((nbr, (*path, lid)))


def _nearer(adjacency: dict[str, dict[str, list[str]]], node: str, dist: dict[str, int]) -> Hops:
    """`node`'s cables one hop nearer the target `dist` counts hops to."""
    nearer = dist[node] - 1
    return [
        (nbr, lid)
        for nbr, lids in adjacency[node].items()
        if dist.get(nbr) == nearer
        for lid in lids
    ]


class _Toward:
    """Each switch's cables one hop nearer a target, found the cheaper way per tier.

    Read from the switch itself, a cable costs a look at each of its neighbours: a
    super-spine has a hundred, and a mesh walks a thousand of them per target. Read from
    the tier below, every switch of a tier is found at once for the neighbours of that
    tier, which are few near the target. A tier is read from below as soon as reading its
    switches one by one has cost more than that would (at most twice the cheaper way)."""

    def __init__(self, adjacency: dict[str, dict[str, list[str]]], dist: dict[str, int]):
        self._adj = adjacency
        self._dist = dist
        self._hops: dict[str, Hops] = {}
        self._tiers: dict[int, list[str]] = {}
        # per tier, what reading it from below costs, and what reading its switches one by
        # one has cost so far (once read from below, every switch of the tier is in _hops)
        self._below: dict[int, int] = {}
        self._spent: dict[int, int] = {}

    def hops(self, node: str) -> Hops:
        found = self._hops.get(node)
        if found is not None:
            return found
        tier = self._dist[node]
        adjacency = self._adj
        spent = self._spent.get(tier, 0) + len(adjacency[node])
        below = self._below.get(tier)
        if below is None:
            if not self._tiers:
                for n, d in self._dist.items():
                    self._tiers.setdefault(d, []).append(n)
            below = self._below[tier] = sum(len(adjacency[n]) for n in self._tiers[tier - 1])
        if spent > below:
            self._from_below(tier)
            return self._hops[node]
        self._spent[tier] = spent
        found = self._hops[node] = _nearer(adjacency, node, self._dist)
        return found

    def _from_below(self, tier: int) -> None:
        found: dict[str, Hops] = {}
        dist = self._dist
        for lower in self._tiers[tier - 1]:
            for upper, lids in self._adj[lower].items():
                if dist.get(upper) == tier:
                    found.setdefault(upper, []).extend((lower, lid) for lid in lids)
        for upper, hops in found.items():
            self._hops.setdefault(upper, hops)


K = TypeVar("K")
V = TypeVar("V")


class _Recent(Generic[K, V]):
    """A cache that forgets the least recently used entries past a total size, so a worker
    that judges jobs for weeks holds the paths of the recent ones, not of every pair of
    leaves it ever met (at 12,500 nodes those would be gigabytes)."""

    def __init__(self, limit: int, size: Callable[[V], int] = lambda _: 1) -> None:
        self._limit = limit
        self._size = size
        self._held = 0
        self._entries: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self._entries.pop(key, None)
        if value is not None:
            self._entries[key] = value  # now the most recent
        return value

    def put(self, key: K, value: V) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._held -= self._size(old)
        self._entries[key] = value
        self._held += self._size(value)
        while self._held > self._limit and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            self._held -= self._size(self._entries.pop(oldest))

    def __len__(self) -> int:
        return len(self._entries)


def _raise_one(weights: LinkWeights, lid: str, p: float) -> None:
    if p > weights.get(lid, 0.0):
        weights[lid] = p


def _raise(weights: LinkWeights, more: LinkWeights) -> None:
    for lid, p in more.items():
        _raise_one(weights, lid, min(p, 1.0))


def union_weights(per_flow: Iterable[LinkWeights]) -> LinkWeights:
    """Chance that at least one of several independent flows crosses each link.

    >>> union_weights([{"l1": 0.5}, {"l1": 0.5, "l2": 1.0}])
    {'l1': 0.75, 'l2': 1.0}
    """
    miss: dict[str, float] = {}
    for weights in per_flow:
        for lid, p in weights.items():
            miss[lid] = miss.get(lid, 1.0) * (1.0 - min(p, 1.0))
    return {lid: 1.0 - m for lid, m in miss.items()}
