"""`/v1/nodes` over a real chDB store: which GPU nodes are quarantined, and their Xids."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import api_client
from fastapi.testclient import TestClient

from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import NodeEvent

T0 = 1_780_000_000 * 10**9
LINE79 = "gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."


def _xid(ts: int, node: str, xid: int, quarantined: bool, action: str = "") -> NodeEvent:
    reason = f"Xid {xid} quarantines at once" if action else ""
    return NodeEvent(
        ts, node, "xid", xid, "0000:3b:00", f"Xid {xid}", quarantined, action, reason,
        xid == 95, LINE79 if xid == 79 else "", "journalctl -k",
    )  # fmt: skip


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        store.write_node_events(
            [
                _xid(T0, "gpu7", 13, False),
                _xid(T0 + 10**9, "gpu7", 79, True, "quarantine"),
                _xid(T0, "gpu8", 95, True, "quarantine"),
                NodeEvent(
                    T0 + 5 * 10**9,
                    "gpu8",
                    "release",
                    None,
                    "",
                    "",
                    False,
                    "release",
                    "released by operator",
                    False,
                ),
                _xid(T0, "gpu9", 31, False),
            ]
        )
        yield api_client(store)
    finally:
        store.close()


def test_a_quarantined_node_shows_its_decision_and_xids_newest_first(client: TestClient) -> None:
    body = client.get("/v1/nodes/gpu7").json()
    assert body["state"] == {
        "node": "gpu7",
        "quarantined": True,
        "sdc_suspect": False,
        "reason": "Xid 79 quarantines at once",
        "decided_at": "2026-05-28T20:26:41.000000Z",
        "decided_at_ns": T0 + 10**9,
        "xids": 2,
        "last_event_at": "2026-05-28T20:26:41.000000Z",
        "last_event_ns": T0 + 10**9,
    }
    assert [(e["xid"], e["action"], e["quarantined"]) for e in body["events"]] == [
        (79, "quarantine", True),
        (13, None, False),
    ]
    assert body["events"][0]["line"] == LINE79


def test_the_node_list_filters_on_quarantine(client: TestClient) -> None:
    everyone = client.get("/v1/nodes").json()
    assert [(n["node"], n["quarantined"]) for n in everyone["nodes"]] == [
        ("gpu7", True),
        ("gpu8", False),
        ("gpu9", False),
    ]
    out = client.get("/v1/nodes?quarantined=true").json()
    assert [n["node"] for n in out["nodes"]] == ["gpu7"]
    assert out["quarantined"] is True
    released = client.get("/v1/nodes/gpu8").json()["state"]
    assert (released["reason"], released["sdc_suspect"]) == ("released by operator", False)


def test_an_unknown_node_is_404_with_a_hint(client: TestClient) -> None:
    response = client.get("/v1/nodes/gpu99")
    assert response.status_code == 404
    assert "GET /v1/nodes" in response.json()["detail"]


@pytest.mark.parametrize(
    "url",
    ["/v1/nodes/-x", "/v1/nodes/a%20b", f"/v1/nodes/{'n' * 129}", "/v1/nodes?quarantined=maybe",
     "/v1/nodes?limit=0", "/v1/nodes/gpu7?offset=-1"],
)  # fmt: skip
def test_bad_node_parameters_are_422(client: TestClient, url: str) -> None:
    assert client.get(url).status_code == 422
