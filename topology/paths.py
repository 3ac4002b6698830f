"""Which links a flow between two NICs can cross, and how likely it crosses each.

A flow from one NIC to another leaves on its host cable, climbs from its leaf to the lowest
tier that reaches the other leaf, and comes down. Switches spread flows over every equal-cost
next hop (ECMP), each parallel cable counting once, so the chance that a flow crosses a link is
found by pushing probability 1 from the source leaf down the shortest-path DAG towards the
target leaf, split evenly at each switch over its equal-cost cables. Hosts are never transit.

Results are cached per (leaf, leaf) pair: a 2,304-rank job has thousands of flows but only a
few thousand distinct leaf pairs even at 288 nodes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from railtrace.topology.attrs import ROLE, Role
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric

LinkWeights = dict[str, float]


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
        self._dist: dict[str, tuple[dict[str, int], deque[str]]] = {}
        self._leaf_pairs: dict[tuple[str, str], LinkWeights] = {}

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
            search = self._dist[target] = ({target: 0}, deque([target]))
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

    def leaf_to_leaf(self, src: str, dst: str) -> LinkWeights:
        """Crossing probability of each switch-to-switch link for a flow from `src` to `dst`."""
        key = (src, dst)
        cached = self._leaf_pairs.get(key)
        if cached is not None:
            return cached
        weights: LinkWeights = {}
        dist = self._distances_to(dst, src)
        if src != dst and src in dist:
            mass = {src: 1.0}
            frontier = [src]
            while frontier:
                nxt: dict[str, float] = {}
                for node in frontier:
                    hops = [
                        (nbr, lid)
                        for nbr, lids in self._switch_adj[node].items()
                        if dist.get(nbr) == dist[node] - 1
                        for lid in lids
                    ]
                    share = mass[node] / len(hops)
                    for nbr, lid in hops:
                        weights[lid] = weights.get(lid, 0.0) + share
                        nxt[nbr] = nxt.get(nbr, 0.0) + share
                mass = nxt
                frontier = [n for n in sorted(nxt) if n != dst]
        self._leaf_pairs[key] = weights
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
        own cable. Host cables weigh 1. Computed per leaf pair (hosts under one leaf share its
        uplinks): a 288-host job costs a few hundred leaf pairs, not 41,000 host pairs.
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
        for _, leaves in sorted(by_rail.items()):
            if sum(len(lids) for lids in leaves.values()) < 2:
                continue  # one host on this rail: no flow on it
            for lids in leaves.values():
                weights.update(dict.fromkeys(lids, 1.0))
            names = sorted(leaves)
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    for lid, p in self.leaf_to_leaf(a, b).items():
                        weights[lid] = max(weights.get(lid, 0.0), min(p, 1.0))
        return weights

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
