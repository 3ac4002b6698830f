"""`/v1/topology/cabling` over a real chDB store: where the built fabric differs from the plan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import api_client
from fastapi.testclient import TestClient

from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import CablingEvent
from railtrace.topology.ends import CablingKind, Endpoint

T0 = 1_780_000_000 * 10**9
NIC1, NIC2 = Endpoint("hgx-01", "mlx5_0"), Endpoint("hgx-02", "mlx5_0")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        store.write_cabling_events(
            [
                CablingEvent(T0, "leaf1", "swp1", CablingKind.MISWIRED, NIC1, NIC2, "swap"),
                CablingEvent(T0, "leaf1", "swp2", CablingKind.MISSING, NIC2, None, "dark"),
                CablingEvent(T0 + 1, "leaf1", "swp2", CablingKind.RESOLVED, NIC2, NIC2, "ok"),
                CablingEvent(T0, "leaf2", "swp9", CablingKind.UNEXPECTED, None, NIC1, "extra"),
            ]
        )
        yield api_client(store)
    finally:
        store.close()


def test_open_differences_are_listed_with_both_ends_and_resolved_ones_are_not(
    client: TestClient,
) -> None:
    body = client.get("/v1/topology/cabling").json()
    assert body["device"] is None and (body["limit"], body["offset"]) == (100, 0)
    assert body["differences"] == [
        {
            "device": "leaf1",
            "interface": "swp1",
            "kind": "miswired",
            "planned": {"device": "hgx-01", "interface": "mlx5_0"},
            "seen": {"device": "hgx-02", "interface": "mlx5_0"},
            "detail": "swap",
            "since": "2026-05-28T20:26:40.000000Z",
            "since_ns": T0,
        },
        {
            "device": "leaf2",
            "interface": "swp9",
            "kind": "unexpected",
            "planned": None,
            "seen": {"device": "hgx-01", "interface": "mlx5_0"},
            "detail": "extra",
            "since": "2026-05-28T20:26:40.000000Z",
            "since_ns": T0,
        },
    ]


def test_differences_filter_by_device_and_paginate(client: TestClient) -> None:
    only = client.get("/v1/topology/cabling?device=leaf2").json()["differences"]
    assert [d["interface"] for d in only] == ["swp9"]
    page = client.get("/v1/topology/cabling?limit=1&offset=1").json()["differences"]
    assert [d["interface"] for d in page] == ["swp9"]


@pytest.mark.parametrize(
    "query",
    ["device=", "device=leaf%201", "device=%27x", f"device={'x' * 129}", "limit=0", "offset=-1"],
)
def test_bad_cabling_parameters_are_422(client: TestClient, query: str) -> None:
    assert client.get(f"/v1/topology/cabling?{query}").status_code == 422
