"""`/metrics`: the API's own health for Prometheus, read from a real chDB store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import store_samples as s
from api_support import api_client
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families

from railtrace.sink import probes as sink_probes
from railtrace.store.chdb_store import ChdbStore


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (x.name, tuple(sorted(x.labels.items()))): x.value
        for family in text_string_to_metric_families(text)
        for x in family.samples
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChdbStore]:
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        yield store
    finally:
        store.close()


class _Sink:
    """A sink in the same process, with set figures; the real sink's are scraped in
    test_streaming_e2e.py."""

    def __init__(self, written: dict[str, int], lag: dict[str, int]) -> None:
        self.figures = sink_probes.Figures(written, lag, write_failures=1, partitions=4)

    def families(self) -> list[Metric]:
        health = sink_probes.assess(sink_probes.Readings(0.0, None, None), grace_s=120)
        return list(sink_probes.families(self.figures, health))


def test_metrics_count_requests_by_route_template_and_read_the_store(store: ChdbStore) -> None:
    store.write_verdicts([s.verdict("slurm-1"), s.verdict("slurm-2")])
    client = api_client(store, sink=_Sink({"verdicts": 2}, {"railtrace.verdicts.v1": 3}))
    assert client.get("/v1/jobs/slurm-1/verdict").status_code == 200
    assert client.get("/v1/jobs/slurm-9/verdict").status_code == 404
    assert client.get("/no/such/route").status_code == 404
    got = _samples(client.get("/metrics").text)
    route = "/v1/jobs/{job_id}/verdict"
    count = "railtrace_api_request_seconds_count"
    assert got[(count, (("method", "GET"), ("route", route), ("status", "200")))] == 1
    assert got[(count, (("method", "GET"), ("route", route), ("status", "404")))] == 1
    assert got[(count, (("method", "GET"), ("route", "unmatched"), ("status", "404")))] == 1
    assert got[("railtrace_store_up", ())] == 1
    assert got[("railtrace_store_rows", (("table", "verdicts"),))] == 2
    assert got[("railtrace_store_rows", (("table", "node_events"),))] == 0
    assert got[("railtrace_sink_rows_written_total", (("table", "verdicts"),))] == 2
    assert got[("railtrace_sink_lag_messages", (("topic", "railtrace.verdicts.v1"),))] == 3
    assert got[("railtrace_sink_write_failures_total", ())] == 1
    assert got[("railtrace_sink_healthy", ())] == 1


def test_invented_http_methods_cannot_grow_the_metrics_without_bound(store: ChdbStore) -> None:
    """No token is needed to send a request, so no label may take a value the client picks."""
    client = api_client(store)
    for i in range(300):
        client.request(f"X{i}GET", "/v1/jobs")
    client.request("GET", "/v1/jobs")
    got = _samples(client.get("/metrics").text)
    methods = {dict(labels)["method"] for (name, labels) in got if "method" in dict(labels)}
    assert methods <= {"GET", "other"}, sorted(methods)[:5]
    count = "railtrace_api_request_seconds_count"
    others = sum(
        v for (name, labels), v in got.items() if name == count and ("method", "other") in labels
    )
    assert others == 300


def test_the_delay_from_stall_to_verdict_is_reported_for_recent_verdicts(store: ChdbStore) -> None:
    store.write_verdicts([s.verdict("slurm-1")])  # decided 600 s after its stall
    got = _samples(api_client(store).get("/metrics").text)
    assert got[("railtrace_verdict_delay_seconds", (("quantile", "0.5"),))] == 600
    assert got[("railtrace_verdict_delay_seconds", (("quantile", "0.95"),))] == 600
    assert not [k for k in got if k[0].startswith("railtrace_sink_")]


def test_a_store_that_stops_answering_is_reported_not_a_failed_scrape(store: ChdbStore) -> None:
    client = api_client(store)
    store.close()
    response = client.get("/metrics")
    assert response.status_code == 200
    assert _samples(response.text)[("railtrace_store_up", ())] == 0
