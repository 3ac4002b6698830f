"""`railtrace cabling` and `railtrace nodes`: what the live workers found about the fabric and
the GPU nodes, from the store (or through the API of the process that holds it)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from cli_support import invoke

from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import CablingEvent, NodeEvent
from railtrace.topology.ends import CablingKind, Endpoint

T0 = 1_780_000_000 * 10**9


@pytest.fixture
def data(tmp_path: Path) -> Path:
    where = tmp_path / "data"
    with ChdbStore(where) as store:
        store.migrate()
        store.write_cabling_events(
            [
                CablingEvent(
                    T0, "leaf1", "swp3", CablingKind.MISWIRED, Endpoint("gpu1", "mlx5_0"),
                    Endpoint("gpu1", "mlx5_1"), "leaf1:swp3 should reach gpu1:mlx5_0 ...",
                ),
                CablingEvent(
                    T0, "leaf2", "swp4", CablingKind.MISSING, Endpoint("gpu2", "mlx5_1"), None,
                    "leaf2:swp4 should reach gpu2:mlx5_1 but LLDP sees nothing there",
                ),
            ]
        )  # fmt: skip
        store.write_node_events(
            [
                NodeEvent(T0, "gpu7", "xid", 79, "0000:3b:00", "fell off the bus", True,
                          "quarantine", "Xid 79 (GPU fell off the bus)", False),
                NodeEvent(T0, "gpu8", "xid", 13, "0000:18:00", "SM warp", False, "", "", False),
            ]
        )  # fmt: skip
    return where


def test_cabling_shows_each_differing_port_with_both_ends(data: Path) -> None:
    result = invoke("cabling", "--data", str(data))
    assert result.exit_code == 0, result.output
    assert "leaf1:swp3" in result.stdout and "miswired" in result.stdout
    assert "gpu1:mlx5_0" in result.stdout and "gpu1:mlx5_1" in result.stdout
    assert "leaf2:swp4" in result.stdout and "missing" in result.stdout


def test_cabling_json_filters_by_device(data: Path) -> None:
    result = invoke("cabling", "--data", str(data), "--device", "leaf2", "--json")
    assert result.exit_code == 0, result.output
    (only,) = orjson.loads(result.stdout)
    assert (only["interface"], only["kind"], only["seen"]) == ("swp4", "missing", None)


def test_nodes_lists_quarantined_ones_with_the_reason(data: Path) -> None:
    result = invoke("nodes", "--data", str(data), "--quarantined")
    assert result.exit_code == 0, result.output
    assert "gpu7" in result.stdout and "quarantined" in result.stdout
    assert "Xid 79" in result.stdout
    assert "gpu8" not in result.stdout
    everyone = orjson.loads(invoke("nodes", "--data", str(data), "--json").stdout)
    assert [(n["node"], n["quarantined"]) for n in everyone] == [("gpu7", True), ("gpu8", False)]


@pytest.mark.parametrize("command", ["cabling", "nodes"])
def test_on_a_missing_data_dir_they_say_to_replay_first(tmp_path: Path, command: str) -> None:
    result = invoke(command, "--data", str(tmp_path / "nowhere"))
    assert result.exit_code == 1
    assert "no data directory" in result.output
