"""Which NICs a GPU sends through, read from `nvidia-smi topo -m` as real machines print it
(three matrices from public issue threads: tests/fixtures/scheduler/README.md, section 6), and
how a job holding part of a node is given the rails of its own GPUs only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from railtrace.replay import open_capture
from railtrace.settings import load_settings
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.asbuilt import cabled_fabric
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.gpunics import GpuNicRule, TopoError, parse_topo_matrix
from railtrace.topology.lldp import CablingDifference

FIXTURES = Path(__file__).parent / "fixtures" / "scheduler"
H100_8NIC = FIXTURES / "nvidia-smi-topo-m-h100-8nic-sglang-30401.txt"
H100_12NIC = FIXTURES / "nvidia-smi-topo-m-h100-12nic-mooncake-2039.txt"
A100_MANGLED = FIXTURES / "nvidia-smi-topo-m-a100-10nic-nccl-tests-311-mangled-columns.txt"


def test_an_hgx_with_one_pix_nic_per_gpu_maps_gpu_n_to_its_own_nic() -> None:
    got = parse_topo_matrix(H100_8NIC.read_text())
    assert got.by_gpu == {g: (f"mlx5_{g}",) for g in range(8)}


def test_nics_sharing_a_gpus_pcie_switch_are_all_kept() -> None:
    got = parse_topo_matrix(H100_12NIC.read_text()).by_gpu
    assert got[0] == ("mlx5_0", "mlx5_1", "mlx5_2") and got[4] == ("mlx5_6", "mlx5_7", "mlx5_8")
    assert got[1] == ("mlx5_3",) and got[7] == ("mlx5_11",)


def test_a_matrix_whose_columns_ran_together_in_a_ticket_still_reads() -> None:
    # `NIC7NIC8` in the header, `SYSSYS` and `PXBSYS` in the rows: cells are tokens.
    got = parse_topo_matrix(A100_MANGLED.read_text()).by_gpu
    assert got == {g: (f"mlx5_{g // 2 * 2}", f"mlx5_{g // 2 * 2 + 1}") for g in range(8)}
    # NIC8 and NIC9 are near no GPU (a storage pair): no GPU sends through them.
    assert not {"mlx5_8", "mlx5_9"} & {n for nics in got.values() for n in nics}


def test_a_gpu_near_no_nic_says_nothing_about_the_job() -> None:
    lines = H100_8NIC.read_text().splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("GPU0 "))
    lines[row] = re.sub(r"\b(PIX|NODE)\b", "SYS", lines[row])
    got = parse_topo_matrix("\n".join(lines))
    assert got.by_gpu[0] == ()
    assert got.nics_of((0, 1)) is None and got.nics_of((1, 2)) == {"mlx5_1", "mlx5_2"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("GPU0 is fine\n", "no header row"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV18\t0-47\n", "no NIC column"),
        (H100_8NIC.read_text().split("NIC Legend")[0], "does not name NIC0"),
        (
            H100_8NIC.read_text().replace(
                "PIX     NODE    NODE    NODE    SYS     SYS     SYS     SYS     0-47",
                "PIX 0-47",
                1,
            ),
            "row GPU0 has",
        ),
    ],
)
def test_what_is_no_matrix_is_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(TopoError, match=says):
        parse_topo_matrix(text)


def _fabric_with(default_text: str):  # type: ignore[no-untyped-def]
    fabric = build_fabric(rail_optimized(64).plan)
    fabric.default_gpu_nics = parse_topo_matrix(default_text)
    return fabric


def test_a_job_on_half_a_node_uses_the_nics_of_its_gpus_only() -> None:
    fabric = _fabric_with(H100_8NIC.read_text())
    host = fabric.hosts()[0]
    assert fabric.job_nics(host, (0, 1, 2, 3)) == ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")
    assert fabric.job_nics(host, ()) == fabric.host_nics[host]  # GPUs not printed: all


def test_a_map_naming_nics_unlike_the_plan_takes_no_rail_away() -> None:
    fabric = _fabric_with(H100_8NIC.read_text().replace("mlx5_", "ibp"))
    host = fabric.hosts()[0]
    assert fabric.job_nics(host, (0, 1)) == fabric.host_nics[host]


def _topology_folder(root: Path) -> Path:
    """A topology folder of the 64-node reference fabric, as NetBox exports its cables."""
    plan = rail_optimized(64).plan
    rows = ["side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name"]
    rows += [f"{c.a.device},dcim.interface,{c.a.interface},{c.b.device},dcim.interface,"
             f"{c.b.interface}" for c in plan.cables]  # fmt: skip
    (root / "cables.csv").write_text("\n".join(rows) + "\n")
    (root / "gpu-nics").mkdir()
    return root


def test_a_topology_folder_takes_a_default_map_and_per_host_ones(tmp_path: Path) -> None:
    plan = rail_optimized(64).plan
    maps = _topology_folder(tmp_path) / "gpu-nics"
    host = build_fabric(plan).hosts()[0]
    (maps / "default.txt").write_text(H100_8NIC.read_text())
    (maps / f"{host}.txt").write_text(H100_12NIC.read_text())
    (maps / "no-such-host.txt").write_text(H100_8NIC.read_text())
    (maps / f"{build_fabric(plan).hosts()[1]}.txt").write_text("not a matrix\n")
    cap = open_capture(tmp_path)
    assert cap.fabric.default_gpu_nics is not None
    assert cap.fabric.gpu_nics[host].by_gpu[0] == ("mlx5_0", "mlx5_1", "mlx5_2")
    said = " | ".join(cap.plan_errors)
    assert (
        "gpu-nics/no-such-host.txt: 'no-such-host' is neither `default` nor a cabled host; ignored"
        in said
    )
    assert f"gpu-nics/{build_fabric(plan).hosts()[1]}.txt: no header row" in said


def test_the_fabric_as_cabled_keeps_the_gpu_to_nic_maps() -> None:
    """A swapped cable moves no GPU: a job judged on the fabric as LLDP shows it cabled keeps
    its GPUs' NICs."""
    plan = rail_optimized(64).plan
    planned = build_fabric(plan)
    planned.default_gpu_nics = parse_topo_matrix(H100_8NIC.read_text())
    host = planned.hosts()[0]
    planned.gpu_nics[host] = parse_topo_matrix(H100_12NIC.read_text())
    nic0, nic1 = Endpoint(host, "mlx5_0"), Endpoint(host, "mlx5_1")
    ports = [
        next(e for e in (planned.links[planned.link_at[n]].a, planned.links[planned.link_at[n]].b)
             if e != n)
        for n in (nic0, nic1)
    ]  # fmt: skip
    cabled = cabled_fabric(
        plan,
        [
            CablingDifference(ports[0], CablingKind.MISWIRED, nic0, nic1),
            CablingDifference(ports[1], CablingKind.MISWIRED, nic1, nic0),
        ],
        planned,
    )
    assert cabled is not None and cabled.as_built
    assert cabled.default_gpu_nics == planned.default_gpu_nics
    assert cabled.gpu_nics == planned.gpu_nics
    other = planned.hosts()[1]
    assert cabled.job_nics(other, (0, 1)) == ("mlx5_0", "mlx5_1")


# A DGX-style model: eight compute NICs named out of order beside storage ones (GPU i's NIC is
# not mlx5_i), written once in the settings rather than collected from every host.
DGX_ORDER = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_1", "mlx5_2", "mlx5_7"]


def test_a_settings_file_gives_a_host_models_gpu_to_nic_map(tmp_path: Path) -> None:
    config = tmp_path / "railtrace.toml"
    config.write_text(
        f'[[site.gpu_nics]]\nhosts = "hgx-su01-*"\nnics = {DGX_ORDER!r}\n'.replace("'", '"')
        + "[[site.gpu_nics]]\n"
        'hosts = "*"\n'
        'nics = [["mlx5_0", "mlx5_1"], [], "mlx5_2", "mlx5_3"]\n'
    )
    rules = load_settings(config).site.gpu_nics
    assert rules[0].nics[1] == ("mlx5_3",) and rules[1].nics[:2] == (("mlx5_0", "mlx5_1"), ())
    (tmp_path / "topo").mkdir()
    fabric = open_capture(_topology_folder(tmp_path / "topo"), rules).fabric
    # GPUs 1 and 5 of a first-unit host send through mlx5_3 and mlx5_1, by the first rule.
    assert fabric.job_nics("hgx-su01-01", (1, 5)) == ("mlx5_1", "mlx5_3")
    # Another unit's host takes the catch-all rule: GPU 0's two NICs.
    assert fabric.job_nics("hgx-su02-01", (0,)) == ("mlx5_0", "mlx5_1")


def test_a_hosts_own_matrix_wins_over_a_rule_and_a_rule_over_the_default(tmp_path: Path) -> None:
    root = _topology_folder(tmp_path)
    (root / "gpu-nics" / "default.txt").write_text(H100_8NIC.read_text())
    (root / "gpu-nics" / "hgx-su01-02.txt").write_text(H100_12NIC.read_text())
    rules = (GpuNicRule(hosts="hgx-su01-*", nics=DGX_ORDER),)
    fabric = open_capture(root, rules).fabric
    assert fabric.job_nics("hgx-su01-01", (1,)) == ("mlx5_3",)  # the rule
    assert fabric.job_nics("hgx-su01-02", (0,)) == ("mlx5_0", "mlx5_1", "mlx5_2")  # its file
    assert fabric.job_nics("hgx-su02-01", (1,)) == ("mlx5_1",)  # default.txt


def test_a_rule_that_places_nothing_is_reported_and_takes_no_rail_away(tmp_path: Path) -> None:
    rules = (
        GpuNicRule(hosts="dgx-*", nics=DGX_ORDER),
        GpuNicRule(hosts="hgx-*", nics=[f"ibp{g}s0" for g in range(8)]),
    )
    cap = open_capture(_topology_folder(tmp_path), rules)
    said = " | ".join(cap.plan_errors)
    assert "site.gpu_nics[0] (hosts 'dgx-*'): matches no cabled host" in said
    assert "site.gpu_nics[1] (hosts 'hgx-*'): names no NIC that cables.csv cables on 64" in said
    host = cap.fabric.hosts()[0]
    assert cap.fabric.job_nics(host, (0, 1)) == cap.fabric.host_nics[host]


@pytest.mark.parametrize("bad", [["mlx5_0,mlx5_1"], [" mlx5_0"], [""], []])
def test_a_rule_whose_nics_are_not_nic_names_is_refused(bad: list[str]) -> None:
    with pytest.raises(ValueError, match="nics"):
        GpuNicRule(hosts="*", nics=bad)


def test_the_workers_topology_takes_the_map_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker and the API load their fabric through one composition function; a rule
    given as RAILTRACE_SITE__GPU_NICS (JSON, as for any list setting) reaches it."""
    from railtrace.compose.fabric import load_topology

    rule = '[{"hosts": "hgx-su01-01", "nics": ' + str(DGX_ORDER).replace("'", '"') + "}]"
    monkeypatch.setenv("RAILTRACE_SITE__GPU_NICS", rule)
    fabric = load_topology(load_settings(), _topology_folder(tmp_path))
    assert fabric.job_nics("hgx-su01-01", (5,)) == ("mlx5_1",)
    assert fabric.job_nics("hgx-su01-02", (5,)) == fabric.host_nics["hgx-su01-02"]
