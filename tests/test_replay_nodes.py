"""A replayed capture's GPU Xids as node events: the node a gpu-xid verdict names has its page
(/v1/nodes/{name}) and is listed by `railtrace nodes`, as the live Xid collector makes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from api_support import api_client
from cli_support import invoke

from railtrace.collectors.hosts.config import QuarantineConfig
from railtrace.replay.nodes import node_events
from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import LogOrigin, XidEvent


@pytest.fixture(scope="module")
def gpu_xid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    base = tmp_path_factory.mktemp("gpu-xid")
    capture, data = base / "capture", base / "data"
    sim = "simulate", capture, "--nodes", 2, "--fault", "gpu-xid", "--seed", 5
    assert invoke(*sim, "--watchdog", 120).exit_code == 0
    assert invoke("replay", capture, "--data", data).exit_code == 0
    return data, json.loads((capture / "truth.json").read_text())


@pytest.mark.chdb
@pytest.mark.e2e  # simulates a (2-node) cluster and replays it
def test_nodes_after_a_replay_lists_the_node_the_xid_took_out(
    gpu_xid: tuple[Path, dict[str, Any]],
) -> None:
    data, truth = gpu_xid
    result = invoke("nodes", "--data", data, "--json")
    assert result.exit_code == 0, result.output
    nodes = {n["node"]: n for n in json.loads(result.stdout)}
    assert set(nodes) == {truth["fault_node"]}
    node = nodes[truth["fault_node"]]
    assert node["quarantined"] is True and node["xids"] == 1


@pytest.mark.chdb
@pytest.mark.e2e  # simulates a (2-node) cluster and replays it
def test_the_node_page_of_a_gpu_xid_verdict_shows_its_kernel_line(
    gpu_xid: tuple[Path, dict[str, Any]],
) -> None:
    data, truth = gpu_xid
    store = ChdbStore(data)
    try:
        client = api_client(store)
        (job,) = [j for j, t in truth["jobs"].items() if t["state"] == "stalled"]
        verdict = client.get(f"/v1/jobs/{job}/verdict").json()
        name = verdict["cause"]["node"]
        assert name == truth["fault_node"]
        response = client.get(f"/v1/nodes/{name}")
        assert response.status_code == 200, response.text
        (event,) = response.json()["events"]
        assert event["xid"] == 79 and event["action"] == "quarantine"
        assert "NVRM: Xid" in event["line"] and event["source"].startswith(f"logs/{job}/")
    finally:
        store.close()


def _xid(host: str, source: str, line_no: int, ts_ns: int = 1_000) -> XidEvent:
    return XidEvent(
        ts_ns, "job", host, "0000:3b:00", 79, "GPU has fallen off the bus.",
        LogOrigin(source, line_no),
    )  # fmt: skip


def test_a_kernel_log_copied_into_two_jobs_gives_one_event_and_a_hostless_xid_none(
    tmp_path: Path,
) -> None:
    line = "gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."
    for job in ("a", "b"):
        (tmp_path / job).mkdir()
        (tmp_path / job / "dmesg.log").write_text(f"first\n{line}\n")
    facts = [_xid("gpu7", "a/dmesg.log", 2), _xid("gpu7", "b/dmesg.log", 2), _xid("", "a/x", 1)]
    (event,) = node_events(facts, tmp_path, QuarantineConfig())
    assert (event.node, event.line, event.source) == ("gpu7", line, "a/dmesg.log")
    assert event.quarantined and event.action == "quarantine"
