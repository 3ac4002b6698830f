"""Liveness says the process runs; readiness says the store answers with its tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import api_client

from railtrace.store.chdb_store import ChdbStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChdbStore]:
    store = ChdbStore(tmp_path / "data")
    try:
        yield store
    finally:
        store.close()


def test_healthz_answers_even_before_the_schema_exists(store: ChdbStore) -> None:
    response = api_client(store).get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_is_503_until_migrated_then_ready(store: ChdbStore) -> None:
    client = api_client(store)
    before = client.get("/readyz")
    assert before.status_code == 503
    assert "run migrate" in before.json()["detail"]
    store.migrate()
    after = client.get("/readyz")
    assert (after.status_code, after.json()) == (200, {"status": "ready"})


def test_a_closed_store_makes_the_api_answer_503(store: ChdbStore) -> None:
    client = api_client(store)
    store.close()
    assert client.get("/readyz").status_code == 503
    response = client.get("/v1/jobs/slurm-1/verdict")
    assert response.status_code == 503
    assert "closed" in response.json()["detail"]


def test_every_operation_documents_the_422_an_unknown_query_parameter_gets(
    store: ChdbStore,
) -> None:
    """Routes that take no parameter answered an undeclared 422 (found by the API fuzzer)."""
    client = api_client(store)
    doc = client.get("/openapi.json").json()
    undeclared = [
        f"{method.upper()} {path}"
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if "422" not in op["responses"]
    ]
    assert undeclared == []
    answer = client.get("/healthz?verbose=1")
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["query", "verbose"]
    schema = doc["paths"]["/healthz"]["get"]["responses"]["422"]["content"]["application/json"]
    assert schema["schema"]["$ref"].endswith("/ValidationErrorOut")
