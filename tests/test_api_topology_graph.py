"""`/v1/topology` over a replayed incident: the fabric as a graph, one rail of it, or the
cables one job may cross with the chance it does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from api_support import api_client, replayed
from fastapi.testclient import TestClient

from railtrace.simulate import Fault


@pytest.fixture(scope="module")
def incident(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, dict[str, Any]]]:
    with replayed(tmp_path_factory.mktemp("topology"), 64, Fault.LINK_DOWN, 3) as (
        store,
        capture,
        truth,
    ):
        yield api_client(store, fabric=capture.fabric), truth


def test_the_whole_fabric_lists_every_device_and_cable_with_roles_and_rails(
    incident: tuple[TestClient, dict[str, Any]],
) -> None:
    client, _ = incident
    body = client.get("/v1/topology").json()
    roles = {d["role"] for d in body["devices"]}
    assert roles == {"host", "leaf", "spine"}
    host_links = [x for x in body["links"] if x["a"]["interface"].startswith("mlx5_")
                  or x["b"]["interface"].startswith("mlx5_")]  # fmt: skip
    assert host_links and all(x["rail"] is not None for x in host_links)
    assert all(x["weight"] is None for x in body["links"])


def test_a_rail_view_holds_only_that_rails_cables_and_their_devices(
    incident: tuple[TestClient, dict[str, Any]],
) -> None:
    client, _ = incident
    body = client.get("/v1/topology?rail=3").json()
    assert body["rail"] == 3 and body["links"]
    assert {x["rail"] for x in body["links"]} == {3}
    leaves = [d for d in body["devices"] if d["role"] == "leaf"]
    assert leaves and {d["rail"] for d in leaves} == {3}
    ends = {e["device"] for x in body["links"] for e in (x["a"], x["b"])}
    assert ends == {d["name"] for d in body["devices"]}


def test_a_job_view_weighs_the_cables_the_job_may_cross_including_the_culprit(
    incident: tuple[TestClient, dict[str, Any]],
) -> None:
    client, truth = incident
    job = next(j for j, t in truth["jobs"].items() if t["state"] == "stalled")
    body = client.get(f"/v1/topology?job={job}").json()
    weights = {x["id"]: x["weight"] for x in body["links"]}
    assert weights and all(0 < w <= 1 for w in weights.values())
    assert truth["fault_link"]["id"] in weights
    whole = client.get("/v1/topology").json()
    assert len(weights) < len(whole["links"])


def test_a_window_lists_each_cables_event_kinds_and_only_then(
    incident: tuple[TestClient, dict[str, Any]],
) -> None:
    client, truth = incident
    job = next(j for j, t in truth["jobs"].items() if t["state"] == "stalled")
    at_s = truth["fault_at_ns"] // 1_000_000_000
    body = client.get(f"/v1/topology?job={job}&since={at_s - 60}&until={at_s + 60}").json()
    kinds = {x["id"]: x["events"] for x in body["links"]}
    assert "down" in kinds[truth["fault_link"]["id"]]
    assert all(isinstance(k, list) for k in kinds.values())
    before = client.get(f"/v1/topology?job={job}&until={at_s - 3600}").json()
    assert all("down" not in x["events"] for x in before["links"])
    assert all(x["events"] is None for x in client.get(f"/v1/topology?job={job}").json()["links"])


def test_topology_errors_say_what_is_missing(
    incident: tuple[TestClient, dict[str, Any]],
) -> None:
    with_fabric, _ = incident
    store = with_fabric.app.state.store  # type: ignore[attr-defined]
    client = api_client(store)
    assert with_fabric.get("/v1/topology?job=no-such-job").status_code == 404
    assert with_fabric.get("/v1/topology?rail=-1").status_code == 422
    assert with_fabric.get("/v1/topology?job=bad%20id").status_code == 422
    response = client.get("/v1/topology")  # an API started without a topology
    detail = response.json()["detail"]
    assert response.status_code == 503 and "--topology" in detail and "topology_dir" in detail
