"""`/v1/jobs/{id}/timeline` over a replayed incident: what the logs said and what the links did,
in order, agreeing with the verdict's own evidence."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_support import api_client, replayed
from fastapi.testclient import TestClient

from railtrace.simulate import Fault
from railtrace.store.chdb_store import ChdbStore


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, ChdbStore, str]]:
    with replayed(tmp_path_factory.mktemp("timeline"), 64, Fault.LINK_DOWN, 3) as (
        store,
        _,
        truth,
    ):
        stalled = [j for j, t in truth["jobs"].items() if t["state"] == "stalled"]
        yield api_client(store), store, stalled[0]


def test_the_timeline_holds_the_verdicts_evidence_in_time_order(
    served: tuple[TestClient, ChdbStore, str],
) -> None:
    client, store, job = served
    body = client.get(f"/v1/jobs/{job}/timeline?limit=1000").json()
    assert body["state"] == "stalled" and body["total"] == len(body["events"]) > 0
    stamps = [e["ts_ns"] for e in body["events"]]
    assert stamps == sorted(stamps)
    shown = {(e["ts_ns"], e["source"], e["kind"], e["subject"]) for e in body["events"]}
    verdict = store.get_verdict(job)
    assert verdict is not None
    cited = [c for c in verdict.candidates if c.link is not None][:1]
    for ev in [*cited[0].evidence, *verdict.evidence] if cited else verdict.evidence:
        if ev.kind != "peer-error":  # a conclusion of the scoring, not an event
            assert (ev.ts_ns, ev.source, ev.kind, ev.subject) in shown
    assert {"gnmi", "pytorch"} <= {e["source"] for e in body["events"]}


def test_the_timeline_pages(served: tuple[TestClient, ChdbStore, str]) -> None:
    client, _, job = served
    everything = client.get(f"/v1/jobs/{job}/timeline?limit=1000").json()["events"]
    page = client.get(f"/v1/jobs/{job}/timeline?limit=2&offset=1").json()
    assert page["events"] == everything[1:3] and page["total"] == len(everything)


def test_an_unknown_job_has_no_timeline(served: tuple[TestClient, ChdbStore, str]) -> None:
    client, _, _ = served
    response = client.get("/v1/jobs/no-such-job/timeline")
    assert response.status_code == 404 and "GET /v1/jobs" in response.json()["detail"]
