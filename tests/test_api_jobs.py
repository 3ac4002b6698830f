"""The jobs API over a real chDB store: the verdict document, the job list, errors."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import store_samples as s
from api_support import api_client
from fastapi.testclient import TestClient

from railtrace.api.schemas import VerdictOut, iso_utc
from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import JobState

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.(\d{6}|\d{9})Z$")

STATES = {
    "slurm-1": JobState.STALLED,
    "slurm-2": JobState.HEALTHY,
    "slurm-3": JobState.STALLED,
    "slurm-4": JobState.SLOW,
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChdbStore]:
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        for job_id, state in STATES.items():
            store.write_verdicts([s.verdict(job_id, state)])
        yield store
    finally:
        store.close()


@pytest.fixture
def client(store: ChdbStore) -> TestClient:
    return api_client(store)


def test_verdict_has_the_documented_shape(client: TestClient) -> None:
    response = client.get("/v1/jobs/slurm-1/verdict")
    assert response.status_code == 200
    body = response.json()
    assert body["job_id"] == "slurm-1"
    assert body["state"] == "stalled"
    assert ISO.match(body["stalled_at"]) and ISO.match(body["decided_at"])
    assert body["cause"] == {
        "kind": "link",
        "link": {
            "id": s.LINK.link_id,
            "a": {"device": "leaf03", "interface": "Ethernet1/7"},
            "b": {"device": "gpu-node-12", "interface": "mlx5_3"},
        },
        "node": None,
        "confidence": 0.87,
        "diagnosis": "",
        "tied": [],
    }
    first, second = body["candidates"]
    assert (first["rank"], first["kind"], first["link"]["id"], first["score"]) == (
        1,
        "link",
        s.LINK.link_id,
        0.87,
    )
    assert (second["rank"], second["kind"], second["node"], second["link"]) == (
        2,
        "node",
        "gpu-node-12",
        None,
    )
    assert [e["kind"] for e in first["evidence"]] == ["down", "timeout"]
    assert set(body["evidence"][0]) >= {"ts", "source", "kind", "subject", "detail"}


def test_a_stalled_verdict_says_what_the_stall_cost_and_what_answering_early_saved(
    client: TestClient, store: ChdbStore
) -> None:
    early = dataclasses.replace(
        s.verdict("slurm-9", JobState.STALLED), decided_at_ns=s.T0 + 30 * s.SECOND
    )
    store.write_verdicts([early])
    body = client.get("/v1/jobs/slurm-9/verdict").json()
    assert (body["gpus"], body["watchdog_seen"]) == (16, True)
    assert ISO.match(body["watchdog_at"])
    assert body["cost"] == {
        "gpus": 16,
        "to_verdict_s": 30.0,
        "to_watchdog_s": 600.0,
        "watchdog_seen": True,
        "lost_gpu_hours": round(16 * 30 / 3600, 3),
        "watchdog_gpu_hours": round(16 * 600 / 3600, 3),
        "saved_gpu_hours": round(16 * 570 / 3600, 3),
        "text": "16 GPUs idle 30 s before this answer (0.1 GPU-h); the watchdog fired 10 min "
        "after the stall (2.7 GPU-h): 2.5 GPU-h saved",
    }
    assert client.get("/v1/jobs/slurm-4/verdict").json()["cost"] is None  # slow: no stall


def test_api_and_cli_print_the_same_document(client: TestClient, store: ChdbStore) -> None:
    verdict = store.get_verdict("slurm-1")
    assert verdict is not None
    body = client.get("/v1/jobs/slurm-1/verdict").json()
    assert body == VerdictOut.from_record(verdict).model_dump(mode="json")


def test_a_document_from_the_api_turns_back_into_the_verdict(client: TestClient) -> None:
    body = client.get("/v1/jobs/slurm-1/verdict").json()
    ranked = s.verdict("slurm-1", JobState.STALLED)
    ranked = dataclasses.replace(ranked, candidates=ranked.candidates[::-1])
    assert VerdictOut.model_validate(body).to_record() == ranked


def test_unknown_job_is_404_with_a_hint(client: TestClient) -> None:
    response = client.get("/v1/jobs/slurm-999/verdict")
    assert response.status_code == 404
    assert response.json() == {
        "detail": "no job 'slurm-999' in this store; GET /v1/jobs lists the known jobs"
    }


@pytest.mark.parametrize(
    "url",
    [
        "/v1/jobs/bad%20id/verdict",
        "/v1/jobs/-starts-with-dash/verdict",
        "/v1/jobs/quote'd/verdict",
        f"/v1/jobs/{'x' * 129}/verdict",
        "/v1/jobs?state=exploded",
        "/v1/jobs?limit=0",
        "/v1/jobs?limit=1001",
        "/v1/jobs?limit=ten",
        "/v1/jobs?offset=-1",
    ],
)
def test_bad_parameters_are_422(client: TestClient, url: str) -> None:
    assert client.get(url).status_code == 422


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["slurm-4", "slurm-3", "slurm-2", "slurm-1"]),
        ("?state=stalled", ["slurm-3", "slurm-1"]),
        ("?state=slow", ["slurm-4"]),
        ("?state=healthy", ["slurm-2"]),
        ("?state=unknown", []),
        ("?limit=2", ["slurm-4", "slurm-3"]),
        ("?limit=2&offset=2", ["slurm-2", "slurm-1"]),
        ("?state=stalled&limit=1&offset=1", ["slurm-1"]),
    ],
)
def test_jobs_list_filters_and_paginates(
    client: TestClient, query: str, expected: list[str]
) -> None:
    response = client.get(f"/v1/jobs{query}")
    assert response.status_code == 200
    assert [j["job_id"] for j in response.json()["jobs"]] == expected


def test_jobs_list_echoes_its_parameters_and_summarises_each_job(client: TestClient) -> None:
    body = client.get("/v1/jobs?state=slow&limit=5&offset=0").json()
    assert (body["state"], body["limit"], body["offset"]) == ("slow", 5, 0)
    (job,) = body["jobs"]
    assert job["cause_kind"] == "link"
    assert job["link_id"] == s.LINK.link_id
    assert ISO.match(job["updated_at"])
    assert job["tied"] == []


def test_jobs_list_shows_a_tie_as_a_tie(store: ChdbStore, client: TestClient) -> None:
    other = "leaf04:swp9--hgx-7:mlx5_1"
    store.write_verdicts(
        [dataclasses.replace(s.verdict("slurm-5", JobState.STALLED), tied=(s.LINK.link_id, other))]
    )
    (job,) = [
        j for j in client.get("/v1/jobs?state=stalled").json()["jobs"] if j["job_id"] == "slurm-5"
    ]
    assert job["tied"] == [s.LINK.link_id, other]


@pytest.mark.parametrize(
    ("ts_ns", "iso"),
    [
        (0, "1970-01-01T00:00:00.000000Z"),
        (s.T0, "2026-05-05T06:16:47.123456789Z"),
        (s.T0 - 789, "2026-05-05T06:16:47.123456Z"),
        (-1, "1969-12-31T23:59:59.999999999Z"),
    ],
)
def test_times_are_iso_utc_keeping_nanoseconds(ts_ns: int, iso: str) -> None:
    assert iso_utc(ts_ns) == iso
