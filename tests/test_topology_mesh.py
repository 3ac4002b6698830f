"""The links a job without channel lines may cross: every pair of its leaves on each rail,
worked out once per pair of twin classes and renamed onto the real pairs."""

from __future__ import annotations

import collections
import itertools
import random
from collections.abc import Callable, Iterable

import pytest

from railtrace.topology import PathFinder, build_fabric, rail_optimized
from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import LinkWeights


def _every_pair(
    fabric: Fabric, hosts: list[str], nics_of: Callable[[str], Iterable[str]] | None = None
) -> LinkWeights:
    """The mesh by its definition: a flow between any two of the job's NICs on a rail, a link
    weighing the most one of them gives it (and a host cable 1)."""
    pf = PathFinder(fabric)
    rails: dict[int, list[Endpoint]] = collections.defaultdict(list)
    for host in sorted(set(hosts)):
        for nic in fabric.host_nics.get(host, ()) if nics_of is None else nics_of(host):
            if Endpoint(host, nic) in fabric.nic_leaf:
                rails[fabric.nic_rail[Endpoint(host, nic)]].append(Endpoint(host, nic))
    weights: LinkWeights = {}
    walked: set[tuple[str, str]] = set()
    for a, b in itertools.chain.from_iterable(
        itertools.combinations(on, 2) for on in rails.values()
    ):
        weights[fabric.link_at[a]] = weights[fabric.link_at[b]] = 1.0
        pair = (
            min(fabric.nic_leaf[a], fabric.nic_leaf[b]),
            max(fabric.nic_leaf[a], fabric.nic_leaf[b]),
        )
        if pair in walked:
            continue
        walked.add(pair)
        for lid, p in pf.leaf_to_leaf(*pair).items():
            weights[lid] = max(weights.get(lid, 0.0), min(p, 1.0))
    return weights


def _rail(leaf: str) -> str:
    return leaf.rsplit("-r", 1)[1]


def _irregular(nodes: int, rng: random.Random) -> Fabric:
    """A reference plan as built in the field: uplinks missing, a doubled cable, and two
    leaves cabled to each other, so some leaves have no twin and some twins lose theirs."""
    design = rail_optimized(nodes)
    cables = list(design.plan.cables)
    leaves = set(design.leaves)
    uplinks = [c for c in cables if c.a.device in leaves and c.b.device not in design.hosts]
    uplinks += [c for c in cables if c.b.device in leaves and c.a.device not in design.hosts]
    dropped = set(map(id, rng.sample(uplinks, max(1, len(uplinks) // 40))))
    cables = [c for c in cables if id(c) not in dropped]
    kept = [c for c in uplinks if id(c) not in dropped]
    for n, c in enumerate(rng.sample(kept, 3)):
        cables.append(Cable(Endpoint(c.a.device, f"extra{n}a"), Endpoint(c.b.device, f"extra{n}b")))
    a, b = rng.sample(sorted(leaves), 2)
    cables.append(Cable(Endpoint(a, "cross0"), Endpoint(b, "cross0")))
    # Every leaf of one rail in one pod cabled to a leaf of that rail elsewhere, named before
    # them: they stay twins, and the walk from that leaf to each of them is one hop.
    twins = PathFinder(build_fabric(design.plan))._twin_classes()
    options = [
        (c, leaf)
        for c in sorted({c for c in twins.values() if len(c) > 1})
        for leaf in sorted(leaves - set(c))
        if leaf < c[0] and len([t for t in c if _rail(t) == _rail(leaf)]) > 1
    ]
    if options:  # at 64 nodes, a rail's leaves are all twins
        pod, far = rng.choice(options)
        for n, leaf in enumerate(t for t in pod if _rail(t) == _rail(far)):
            cables.append(Cable(Endpoint(leaf, "cross1"), Endpoint(far, f"cross1-{n}")))
    return build_fabric(CablePlan(cables))


@pytest.mark.parametrize("nodes", [64, 288])
@pytest.mark.parametrize("seed", range(6))
def test_the_mesh_equals_every_pair_walked_one_by_one(nodes: int, seed: int) -> None:
    rng = random.Random(seed)
    design = rail_optimized(nodes)
    fabric = build_fabric(design.plan) if seed % 2 == 0 else _irregular(nodes, rng)
    hosts = sorted(fabric.host_nics)
    for size in (2, 3, rng.randint(4, 40), rng.randint(41, len(hosts)), len(hosts)):
        job = rng.sample(hosts, size)
        assert PathFinder(fabric).mesh_links(job) == _every_pair(fabric, job), (size, job)


def test_the_mesh_of_a_job_on_some_of_its_hosts_nics_equals_every_pair() -> None:
    design = rail_optimized(288)
    fabric = build_fabric(design.plan)
    rng = random.Random(7)
    job = rng.sample(sorted(fabric.host_nics), 60)
    half = {h: fabric.host_nics[h][:4] if i % 3 else fabric.host_nics[h] for i, h in enumerate(job)}
    got = PathFinder(fabric).mesh_links(job, lambda h: half[h])
    assert got == _every_pair(fabric, job, lambda h: half[h])
    assert got != PathFinder(fabric).mesh_links(job)


def test_twin_leaves_are_walked_once_per_pair_of_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 288 nodes a pod holds four leaves of each rail, all cabled to its spines: a job
    over two pods walks a rail once per ordered pair of pods, not once per pair of leaves."""
    design = rail_optimized(288)
    fabric = build_fabric(design.plan)
    pf = PathFinder(fabric)
    twins = pf._twin_classes()
    rail0 = sorted({fabric.nic_leaf[Endpoint(h, fabric.host_nics[h][0])] for h in design.hosts})
    classes = sorted({twins[leaf] for leaf in rail0})
    assert len(classes) >= 2 and len(classes[0]) >= 2, classes
    job_leaves = set(classes[0]) | set(classes[1])
    job = [
        h
        for h in design.hosts
        if fabric.nic_leaf[Endpoint(h, fabric.host_nics[h][0])] in job_leaves
    ]
    walks = []
    real_walk = PathFinder._walk

    def counting(src, dst, hops_of):
        walks.append((src, dst))
        return real_walk(src, dst, hops_of)

    def rail0_only(host: str) -> tuple[str, ...]:
        return fabric.host_nics[host][:1]

    monkeypatch.setattr(PathFinder, "_walk", staticmethod(counting))
    got = pf.mesh_links(job, rail0_only)
    on_rail0 = len([leaf for leaf in job_leaves if _rail(leaf) == "0"])
    pairs = on_rail0 * (on_rail0 - 1) // 2
    assert len(walks) <= 4 < pairs == 28, (walks, pairs)
    monkeypatch.undo()
    assert got == _every_pair(fabric, job, rail0_only)


def test_leaves_cabled_to_a_whole_pod_keep_the_pairs_own_cable() -> None:
    """Every rail-0 leaf of pod 2 is cabled to the first rail-0 leaf of pod 1: they stay
    twins. A job on that leaf and on the second of them crosses their cable, never the
    first's."""
    design = rail_optimized(288)
    pod2 = ["leaf-su05-r0", "leaf-su06-r0", "leaf-su07-r0", "leaf-su08-r0"]
    far = "leaf-su01-r0"
    cables = list(design.plan.cables)
    cables += [
        Cable(Endpoint(leaf, "cross"), Endpoint(far, f"cross{n}")) for n, leaf in enumerate(pod2)
    ]
    fabric = build_fabric(CablePlan(cables))
    pf = PathFinder(fabric)
    assert pf._twin_classes()[pod2[1]] == tuple(pod2)

    def under(leaf: str) -> str:
        return next(h for h in design.hosts if fabric.nic_leaf.get(Endpoint(h, "mlx5_0")) == leaf)

    job = [under(far), under(pod2[1])]
    got = pf.mesh_links(job, lambda h: ("mlx5_0",))
    assert got == _every_pair(fabric, job, lambda h: ("mlx5_0",))
    assert fabric.link_at[Endpoint(pod2[1], "cross")] in got
    assert fabric.link_at[Endpoint(pod2[0], "cross")] not in got


def test_a_long_lived_path_finder_keeps_recent_paths_within_its_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker meets new jobs for weeks: the searches and leaf pairs it keeps stay within
    their bounds, and what it forgot it works out again the same."""
    from railtrace.topology import paths

    design = rail_optimized(288)
    fabric = build_fabric(design.plan)
    unbounded = PathFinder(fabric)
    monkeypatch.setattr(paths, "SEARCHES_KEPT", 5)
    monkeypatch.setattr(paths, "PAIR_LINKS_KEPT", 5_000)
    bounded = PathFinder(fabric)
    rng = random.Random(3)
    hosts = sorted(fabric.host_nics)
    for _ in range(300):
        a, b = rng.sample(hosts, 2)
        nic = f"mlx5_{rng.randrange(8)}"
        flow = (Endpoint(a, nic), Endpoint(b, nic))
        assert bounded.flow_links(*flow) == unbounded.flow_links(*flow)
        assert len(bounded._dist) <= 5
        assert bounded._leaf_pairs._held <= 5_000
    assert len(unbounded._dist) > 50 and unbounded._leaf_pairs._held > 50_000


def test_a_mesh_grown_host_by_host_equals_one_worked_out_afresh() -> None:
    """A job known only from its lines grows a host at a time, mostly under leaves it already
    has: each answer is what a finder that never saw the smaller job gives."""
    design = rail_optimized(288)
    fabric = build_fabric(design.plan)
    grown = PathFinder(fabric)
    rng = random.Random(11)
    hosts = rng.sample(sorted(fabric.host_nics), 70)
    for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 70):
        assert grown.mesh_links(hosts[:n]) == PathFinder(fabric).mesh_links(hosts[:n]), n
