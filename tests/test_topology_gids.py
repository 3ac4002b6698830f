"""RoCE GIDs to NICs: from a host's real `show_gids` table and from hosts.csv's addresses,
loaded by the one call replay and the worker share, kept when the fabric is rebuilt as cabled,
and never invented for a GID nothing lists."""

from __future__ import annotations

from pathlib import Path

from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.asbuilt import cabled_fabric
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.gids import gid_key, gid_table, parse_show_gids
from railtrace.topology.lldp import CablingDifference

SHOW_GIDS = Path(__file__).parent / "fixtures" / "logs" / "real" / "nsdperf_4_show_gids.txt"
HOST = "hgx-su01-01"


def _topology_folder(root: Path) -> Path:
    """The 64-node reference fabric as NetBox exports its cables."""
    plan = rail_optimized(64).plan
    rows = ["side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name"]
    rows += [f"{c.a.device},dcim.interface,{c.a.interface},{c.b.device},dcim.interface,"
             f"{c.b.interface}" for c in plan.cables]  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    (root / "cables.csv").write_text("\n".join(rows) + "\n")
    (root / "hosts.csv").write_text(f"device,interface,ip\n{HOST},mlx5_3,10.0.3.1\n")
    (root / "gids").mkdir()
    (root / "gids" / f"{HOST}.txt").write_text(SHOW_GIDS.read_text())
    return root


def test_a_real_show_gids_table_maps_every_gid_of_its_nic_once() -> None:
    found, errors = parse_show_gids(SHOW_GIDS.read_text())
    assert errors == []
    assert found == {
        gid_key("fe80::e42:a1ff:fe5d:4db8"): "mlx5_0",
        gid_key("fe80::1186:a6b1:3f0b:c441"): "mlx5_0",
        gid_key("::ffff:172.19.0.60"): "mlx5_0",
    }


def test_rows_that_are_no_gids_and_gids_two_nics_claim_are_left_out_with_the_reason() -> None:
    text = (
        "mlx5_0 1 3 ::ffff:10.0.0.1 10.0.0.1 v2 eth0\n"
        "mlx5_1 1 3 ::ffff:10.0.0.1 10.0.0.1 v2 eth1\n"
        "mlx5_2 1 x not-a-gid\n"
    )
    found, errors = parse_show_gids(text)
    assert found == {}
    assert errors == [
        "line 3: not a show_gids row (DEV PORT INDEX GID ...); skipped",
        f"GID {gid_key('::ffff:10.0.0.1')} is listed for mlx5_0 and another device; left out",
    ]
    table, errors = gid_table({"a": "mlx5_0 1 0 fe80::1 v1 e0", "b": "mlx5_4 1 0 fe80::1 v1 e0"})
    assert table == {}
    assert errors == [f"GID {gid_key('fe80::1')} is listed for a:mlx5_0 and another host; left out"]


def test_a_capture_maps_gids_by_show_gids_and_by_hosts_csv_and_invents_none(
    tmp_path: Path,
) -> None:
    from railtrace.replay import open_capture

    root = _topology_folder(tmp_path)
    (root / "gids" / "no-such-host.txt").write_text(SHOW_GIDS.read_text())
    cap = open_capture(root)
    fabric = cap.fabric
    assert fabric.nic_of_gid("fe80::1186:a6b1:3f0b:c441") == Endpoint(HOST, "mlx5_0")
    assert fabric.nic_of_gid("::ffff:10.0.3.1") == Endpoint(HOST, "mlx5_3")  # hosts.csv
    assert fabric.nic_of_gid("::ffff:10.9.9.9") is None
    assert fabric.nic_of_gid("not a gid") is None
    assert "gids/no-such-host.txt: 'no-such-host' is not a cabled host; ignored" in cap.plan_errors


def test_the_workers_topology_maps_gids_through_the_same_call(tmp_path: Path) -> None:
    from railtrace.compose.fabric import load_topology
    from railtrace.settings import load_settings

    fabric = load_topology(load_settings(), _topology_folder(tmp_path))
    assert fabric.nic_of_gid("::ffff:172.19.0.60") == Endpoint(HOST, "mlx5_0")


def test_the_fabric_as_cabled_keeps_the_gid_tables() -> None:
    plan = rail_optimized(64).plan
    planned = build_fabric(plan)
    planned.gid_nic = {gid_key("fe80::1"): Endpoint(HOST, "mlx5_0")}
    nic0, nic1 = Endpoint(HOST, "mlx5_0"), Endpoint(HOST, "mlx5_1")
    leaf0 = planned.links[planned.link_at[nic0]].a
    leaf1 = planned.links[planned.link_at[nic1]].a
    swapped = [
        CablingDifference(leaf0, CablingKind.MISWIRED, nic0, nic1),
        CablingDifference(leaf1, CablingKind.MISWIRED, nic1, nic0),
    ]
    built = cabled_fabric(plan, swapped, planned)
    assert built is not None
    assert built.nic_of_gid("fe80::1") == Endpoint(HOST, "mlx5_0")
