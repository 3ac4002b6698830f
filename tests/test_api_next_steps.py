"""`/v1/jobs/{id}/next-steps` over replayed incidents: the commands an engineer copies for the
culprit the replay named, and none where the fabric is not known."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from api_support import api_client, replayed
from fastapi.testclient import TestClient

from railtrace.simulate import Fault
from railtrace.store.chdb_store import ChdbStore


@pytest.fixture(scope="module")
def link_down(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, dict[str, Any], ChdbStore]]:
    with replayed(tmp_path_factory.mktemp("next"), 64, Fault.LINK_DOWN, 3) as (
        store,
        capture,
        truth,
    ):
        yield api_client(store, fabric=capture.fabric), truth, store


def _stalled(truth: dict[str, Any]) -> str:
    (job,) = [j for j, t in truth["jobs"].items() if t["state"] == "stalled"]
    return str(job)


def test_a_blamed_link_gets_the_steps_for_its_own_ends(
    link_down: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = link_down
    job = _stalled(truth)
    verdict = client.get(f"/v1/jobs/{job}/verdict").json()
    assert verdict["cause"]["link"]["id"] == truth["fault_link"]["id"]
    body = client.get(f"/v1/jobs/{job}/next-steps").json()
    assert body["job_id"] == job and body["topology"] is True
    leaf = next(
        e for e in truth["fault_link"].values() if isinstance(e, dict) and "leaf" in e["device"]
    )
    assert not any(
        "hgx" in e["device"] for e in (truth["fault_link"]["a"], truth["fault_link"]["b"])
    )
    # Seed 3 takes down a leaf-spine uplink: the other jobs first, then the port at the leaf.
    assert [s["action"] for s in body["steps"]] == ["check-jobs", "shut-port"]
    assert body["steps"][1]["command"] == (
        f"nv set interface {leaf['interface']} link state down && nv config apply"
    )
    assert leaf["device"] in body["steps"][1]["what"]


def test_without_the_fabric_a_link_verdict_has_no_step_and_says_why(
    link_down: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    _, truth, store = link_down
    job = _stalled(truth)
    body = api_client(store, fabric=None).get(f"/v1/jobs/{job}/next-steps").json()
    assert body == {"job_id": job, "steps": [], "topology": False}


def test_an_unknown_job_has_no_next_steps(
    link_down: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, _, _ = link_down
    response = client.get("/v1/jobs/no-such-job/next-steps")
    assert response.status_code == 404
    assert "GET /v1/jobs" in response.json()["detail"]
