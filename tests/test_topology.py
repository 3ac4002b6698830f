"""The fabric model: cabling plans, the reference design, roles from shape, and path sets."""

from __future__ import annotations

import random

import pytest

from railtrace.topology import PathFinder, build_fabric, parse_cables_csv, rail_optimized
from railtrace.topology.attrs import Role
from railtrace.topology.cabling import Cable, CablePlan, parse_hosts_csv
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import link_id
from railtrace.topology.paths import union_weights

HEADER = "side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name"


@pytest.mark.parametrize(
    ("nodes", "leaves", "spines", "super_spines", "cables"),
    [(64, 16, 8, 0, 1024), (128, 32, 16, 0, 2048), (288, 72, 96, 64, 2304 + 2304 + 3072)],
)
def test_reference_design_sizes_are_non_blocking(nodes, leaves, spines, super_spines, cables):
    design = rail_optimized(nodes)
    assert (len(design.leaves), len(design.spines), len(design.super_spines)) == (
        leaves,
        spines,
        super_spines,
    )
    assert len(design.plan.cables) == cables
    fabric = build_fabric(design.plan)
    for leaf in design.leaves:
        ups = sum(
            1
            for n in fabric.graph.adj[leaf]
            for _ in fabric.graph.adj[leaf][n]
            if fabric.role(n) != Role.HOST
        )
        downs = sum(1 for n in fabric.graph.adj[leaf] if fabric.role(n) == Role.HOST)
        assert downs <= ups == 32


def test_roles_and_rails_come_from_shape_not_names():
    design = rail_optimized(128)
    rng = random.Random(3)
    names = {
        d: f"dev{rng.randrange(10**9):09d}" for d in design.hosts + design.leaves + design.spines
    }
    renamed = CablePlan(
        [
            Cable(
                Endpoint(names[c.a.device], c.a.interface),
                Endpoint(names[c.b.device], c.b.interface),
            )
            for c in design.plan.cables
        ]
    )
    fabric = build_fabric(renamed)
    assert {fabric.role(names[h]) for h in design.hosts} == {Role.HOST}
    assert {fabric.role(names[s]) for s in design.spines} == {Role.SPINE}
    for leaf in design.leaves:
        assert fabric.role(names[leaf]) == Role.LEAF
        assert fabric.rail(names[leaf]) == int(leaf.rsplit("-r", 1)[1])


def test_link_ids_are_stable_whichever_end_is_named_first():
    a, b = Endpoint("leaf1", "swp1"), Endpoint("node1", "mlx5_0")
    assert link_id(a, b) == link_id(b, a) == "leaf1:swp1--node1:mlx5_0"


def test_same_leaf_flow_uses_only_the_two_host_cables():
    design = rail_optimized(64)
    pf = PathFinder(build_fabric(design.plan))
    w = pf.flow_links(design.nic(0, 3), design.nic(5, 3))
    assert w == {
        "hgx-su01-01:mlx5_3--leaf-su01-r3:swp1": 1.0,
        "hgx-su01-06:mlx5_3--leaf-su01-r3:swp6": 1.0,
    }


def test_cross_leaf_flow_spreads_evenly_over_the_ecmp_set():
    design = rail_optimized(64)
    fabric = build_fabric(design.plan)
    pf = PathFinder(fabric)
    w = pf.flow_links(design.nic(0, 0), design.nic(40, 0))
    uplinks = [p for lid, p in w.items() if lid.startswith("leaf-su01-r0:")]
    assert len(uplinks) == 32  # 8 spines x 4 parallel cables
    assert all(p == pytest.approx(1 / 32) for p in uplinks)
    assert sum(w.values()) == pytest.approx(4.0)
    paths = list(pf.candidate_paths(design.nic(0, 0), design.nic(40, 0)))
    assert len(paths) == 32 * 4
    assert all(set(p) <= set(w) for p in paths)


def test_cross_rail_flow_goes_through_a_spine():
    design = rail_optimized(64)
    pf = PathFinder(build_fabric(design.plan))
    w = pf.flow_links(design.nic(0, 0), design.nic(1, 5))
    assert any("spine" in lid for lid in w)
    assert sum(w.values()) == pytest.approx(4.0)


def test_three_tier_cross_pod_flow_climbs_to_super_spines():
    design = rail_optimized(288)
    pf = PathFinder(build_fabric(design.plan))
    w = pf.flow_links(design.nic(0, 0), design.nic(200, 0))
    assert any("superspine" in lid for lid in w)
    assert sum(w.values()) == pytest.approx(6.0)


def test_unknown_nic_has_no_path():
    design = rail_optimized(64)
    pf = PathFinder(build_fabric(design.plan))
    assert pf.flow_links(Endpoint("nope", "mlx5_0"), design.nic(1, 0)) == {}


def test_union_of_flows_is_probability_at_least_one_crosses():
    assert union_weights([{"x": 0.5}, {"x": 0.5}, {"y": 1.0}]) == {"x": 0.75, "y": 1.0}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            "n1,dcim.interface,mlx5_0,leaf,dcim.interface,swp1\n"
            "n2,dcim.interface,mlx5_0,leaf,dcim.interface,swp1\n",
            "is already cabled on line 3",
        ),
        ("n1,dcim.frontport,p1,leaf,dcim.interface,swp1\n", "not an interface-to-interface"),
        ("n1,dcim.interface,,leaf,dcim.interface,swp1\n", "empty device or interface"),
        ("n1,dcim.interface,mlx5_0,n1,dcim.interface,mlx5_0\n", "to itself"),
    ],
)
def test_bad_cable_rows_are_reported_and_the_rest_kept(body, error):
    good = "n9,dcim.interface,mlx5_1,leaf,dcim.interface,swp9\n"
    plan = parse_cables_csv(f"{HEADER}\n{good}{body}")
    assert any(error in e for e in plan.errors), plan.errors
    assert Cable(Endpoint("n9", "mlx5_1"), Endpoint("leaf", "swp9")) in plan.cables


def test_cables_csv_without_the_netbox_columns_is_a_clear_error():
    plan = parse_cables_csv("a,b,c\n1,2,3\n")
    assert not plan.cables
    assert "missing column(s) side_a_device" in plan.errors[0]


def test_a_netbox_column_given_twice_is_refused_naming_it():
    """DictReader keeps the last of two same-named columns: the plan would silently take the
    wrong port for every cable."""
    header = HEADER.replace("side_b_name", "side_b_name,side_b_name")
    plan = parse_cables_csv(f"{header}\nn1,dcim.interface,mlx5_0,leaf,dcim.interface,swp1,swp9\n")
    assert not plan.cables
    assert plan.errors == [
        "cables.csv: a column appears twice in the header ('side_b_name' is column 6 and 7); "
        "keep one"
    ]


def test_a_repeated_column_railtrace_does_not_read_is_harmless():
    plan = parse_cables_csv(
        f"{HEADER},label,label\nn1,dcim.interface,mlx5_0,l,dcim.interface,p1,x,y\n"
    )
    assert len(plan.cables) == 1 and not plan.errors


@pytest.mark.parametrize(
    "bad",
    [
        'n7,dcim.interface,"mlx5_0,leaf,dcim.interface,swp7',  # a quote left open
        "n7,dcim.interface,mlx5_0,leaf,dcim.interface," + "x" * 200_000,  # over csv's limit
        "n7,dcim.interface,\x00,leaf,dcim.interface,swp7",
    ],
)
def test_an_unreadable_row_is_one_error_and_the_rows_after_it_are_kept(bad):
    """Found by the fuzzer: either used to end the file (or swallow every row up to the next
    quote), losing every cable after it."""
    good = [f"n{i},dcim.interface,mlx5_0,leaf,dcim.interface,swp{i}" for i in range(1, 5)]
    plan = parse_cables_csv("\n".join([HEADER, *good[:2], bad, *good[2:]]) + "\n")
    assert [c.a.device for c in plan.cables] == ["n1", "n2", "n3", "n4"]
    assert len(plan.errors) == 1 and "line 4" in plan.errors[0], plan.errors


def test_garbled_csv_keeps_rows_before_the_damage():
    text = f'{HEADER}\nn1,dcim.interface,mlx5_0,leaf,dcim.interface,swp1\n"unterminated\x00,\n'
    plan = parse_cables_csv(text)
    assert len(plan.cables) == 1


def test_extra_netbox_columns_are_ignored():
    plan = parse_cables_csv(
        f"{HEADER},label,color\nn1,dcim.interface,mlx5_0,l,dcim.interface,p1,x,red\n"
    )
    assert len(plan.cables) == 1 and not plan.errors


def test_hosts_csv_maps_addresses_and_reports_bad_rows():
    addrs, errors = parse_hosts_csv("device,interface,ip\nn1,mlx5_0,10.0.0.1/24\nn2,mlx5_0,bogus\n")
    assert addrs == {"10.0.0.1": Endpoint("n1", "mlx5_0")}
    assert "not an IP address" in errors[0]


def _leaf_rail(name: str) -> int:
    return int(name.rsplit("-r", 1)[1])


def test_a_nics_rail_is_the_rail_of_its_leaf_not_its_place_among_names():
    design = rail_optimized(64)
    dgx = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    gap_host, dgx_host = design.hosts[1], design.hosts[0]
    cables = []
    for c in design.plan.cables:
        a = c.a
        if a.device == dgx_host:
            a = Endpoint(a.device, dgx[int(a.interface.split("_")[1])])
        if a.device == gap_host and a.interface == "mlx5_0":
            continue  # the rail-0 cable of this host is missing from the plan
        cables.append(Cable(a, c.b))
    fabric = build_fabric(CablePlan(cables))
    for c in cables:
        if c.a.device in (gap_host, dgx_host):
            assert fabric.nic_rail[c.a] == _leaf_rail(c.b.device), c
            assert fabric.rail_nic[c.a.device, _leaf_rail(c.b.device)] == c.a.interface
    assert (gap_host, 0) not in fabric.rail_nic


def test_a_job_without_channels_may_use_every_pair_of_its_hosts_on_each_rail():
    design = rail_optimized(64)
    fabric = build_fabric(design.plan)
    pf = PathFinder(fabric)
    hosts = [design.hosts[0], design.hosts[1], design.hosts[40]]  # SU 1 twice, SU 2 once
    w = pf.mesh_links(hosts)
    # Every pair on every rail, one flow each; a link weighs the most one flow gives it.
    pairs = [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1 :]]
    each: dict[str, float] = {}
    for a, b in pairs:
        for r in range(design.rails):
            for lid, p in pf.flow_links(Endpoint(a, f"mlx5_{r}"), Endpoint(b, f"mlx5_{r}")).items():
                each[lid] = max(each.get(lid, 0.0), p)
    assert w.keys() == each.keys()
    assert all(w[lid] == pytest.approx(each[lid]) for lid in w)
    # Two hosts of SU 1 against one of SU 2: each uplink is one of 32, however many pairs.
    assert max(p for lid, p in w.items() if "spine" in lid) == pytest.approx(1 / 32)
    # Host cables of the job are certain; no other host's cable carries it.
    for h in hosts:
        for r in range(design.rails):
            assert w[fabric.link_at[design.nic(design.hosts.index(h), r)]] == 1.0
    others = {fabric.link_at[design.nic(i, r)] for i in range(2, 40) for r in range(8)}
    assert not others & w.keys()
    assert pf.mesh_links(hosts[:1]) == {}  # one host: no flow on the network
