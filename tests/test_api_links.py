"""`/v1/links` over a replayed incident: one link's counters, events and blast radius, and the
fabric's worst links over a window."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from api_support import api_client, replayed
from fastapi.testclient import TestClient

from railtrace.api.joblinks import JobLinks
from railtrace.api.routes.links import CountedMetric
from railtrace.api.schemas import iso_utc
from railtrace.simulate import Fault
from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import COUNTER_METRICS, FAULT_COUNTERS, Metric
from railtrace.topology.paths import PathFinder

NS = 1_000_000_000


@pytest.fixture(scope="module")
def incident(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, dict[str, Any], ChdbStore]]:
    with replayed(tmp_path_factory.mktemp("links"), 64, Fault.LINK_DOWN, 3) as (
        store,
        capture,
        truth,
    ):
        yield api_client(store, fabric=capture.fabric), truth, store


def _around(truth: dict[str, Any], before_s: int = 120, after_s: int = 120) -> str:
    at = truth["fault_at_ns"]
    return urllib.parse.urlencode(
        {"since": iso_utc(at - before_s * NS), "until": iso_utc(at + after_s * NS)}
    )


def _url(link_id: str) -> str:
    return "/v1/links/" + urllib.parse.quote(link_id, safe=":")


def test_the_culprit_shows_its_down_events_its_counters_and_the_job_it_stalled(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = incident
    culprit = truth["fault_link"]
    response = client.get(f"{_url(culprit['id'])}?{_around(truth)}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["id"], body["a"], body["b"]) == (culprit["id"], culprit["a"], culprit["b"])
    assert any(e["kind"] == "down" for e in body["events"])
    assert all(e["ts_ns"] >= truth["fault_at_ns"] - 120 * NS for e in body["events"])
    ends = {(s["device"], s["interface"]) for s in body["series"]}
    assert ends == {(e["device"], e["interface"]) for e in (culprit["a"], culprit["b"])}
    octets = [s for s in body["series"] if s["metric"] == "in_octets"]
    assert octets and all(len(s["ts_ns"]) == len(s["mean"]) == len(s["peak"]) for s in octets)
    stalled = {j for j, t in truth["jobs"].items() if t["state"] == "stalled"}
    crossing = {j["job_id"]: j for j in body["jobs"]}
    assert stalled <= set(crossing)
    assert all(crossing[j]["blamed"] and crossing[j]["state"] == "stalled" for j in stalled)
    assert all(0 < j["weight"] <= 1 for j in body["jobs"])


def test_a_link_names_its_host_ends_so_a_page_can_lead_to_their_node(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = incident
    fabric_link = client.get(f"/v1/topology?job={_stalled(truth)}").json()["links"]
    host_cable = next(link for link in fabric_link if link["id"].startswith("hgx-"))
    uplink = next(link for link in fabric_link if link["id"].startswith("leaf-"))
    assert client.get(_url(host_cable["id"])).json()["hosts"] == [host_cable["a"]["device"]]
    assert client.get(_url(uplink["id"])).json()["hosts"] == []


def _stalled(truth: dict[str, Any]) -> str:
    return next(j for j, t in sorted(truth["jobs"].items()) if t["state"] == "stalled")


def test_the_blast_radius_leaves_out_jobs_whose_paths_do_not_cross_the_link(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = incident
    stalled = next(j for j, t in truth["jobs"].items() if t["state"] == "stalled")
    weights = {
        x["id"]: x["weight"] for x in client.get(f"/v1/topology?job={stalled}").json()["links"]
    }
    whole = [x["id"] for x in client.get("/v1/topology").json()["links"]]
    outside = next(lid for lid in whole if lid not in weights)
    jobs = client.get(f"{_url(outside)}?{_around(truth)}").json()["jobs"]
    assert stalled not in {j["job_id"] for j in jobs}
    inside = next(lid for lid, w in weights.items() if lid != truth["fault_link"]["id"])
    jobs = client.get(f"{_url(inside)}?{_around(truth)}").json()["jobs"]
    assert {j["job_id"]: j["weight"] for j in jobs}[stalled] == pytest.approx(weights[inside])


def test_a_links_jobs_alone_are_the_blast_radius_its_page_shows(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = incident
    culprit = truth["fault_link"]["id"]
    until = iso_utc((truth["fault_at_ns"] // NS + 120) * NS)  # whole: the API reads µs
    query = urllib.parse.urlencode({"until": until})
    alone = client.get(f"{_url(culprit)}/jobs?{query}")
    assert alone.status_code == 200, alone.text
    page = client.get(f"{_url(culprit)}?{_around(truth)}").json()
    assert alone.json() == {"id": culprit, "until": until, "jobs": page["jobs"]}
    assert len(page["jobs"]) > 1, "seed 3's uplink carries more than the stalled job"


def test_the_jobs_of_an_unknown_cable_are_a_404_not_the_page_of_a_cable_named_jobs(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, _, _ = incident
    response = client.get("/v1/links/leaf03:Ethernet1/7--gpu-node-12:mlx5_3/jobs")
    assert response.status_code == 404
    assert "no cable 'leaf03:Ethernet1/7--gpu-node-12:mlx5_3'" in response.json()["detail"]


def test_buckets_follow_the_step_and_the_metric_filter(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = incident
    url = f"{_url(truth['fault_link']['id'])}?{_around(truth)}&step_s=30&metric=in_octets"
    body = client.get(url + "&metric=out_octets").json()
    assert body["step_s"] == 30
    assert {s["metric"] for s in body["series"]} == {"in_octets", "out_octets"}
    for s in body["series"]:
        assert all(t % (30 * NS) == 0 for t in s["ts_ns"])
        assert all(b - a >= 30 * NS for a, b in zip(s["ts_ns"], s["ts_ns"][1:], strict=False))
        assert all(p >= m for m, p in zip(s["mean"], s["peak"], strict=True))


def test_an_interface_with_a_slash_is_part_of_the_link_id(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, _, _ = incident
    store = client.app.state.store  # type: ignore[attr-defined]
    with_slash = "leaf03:Ethernet1/7--gpu-node-12:mlx5_3"
    response = api_client(store, fabric=None).get(f"/v1/links/{with_slash}")
    assert response.status_code == 503, "routed to the link, which needs a topology"
    assert client.get(f"/v1/links/{with_slash}").status_code == 404
    assert (
        "no cable 'leaf03:Ethernet1/7--gpu-node-12:mlx5_3'"
        in (client.get(f"/v1/links/{with_slash}").json()["detail"])
    )


def test_the_worst_links_rank_the_distractor_with_error_bursts_first(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, store = incident
    expected = store.select(
        "SELECT link_id, sum(rate * interval_s) AS n FROM railtrace.link_samples "
        "WHERE metric = 'in_errors' AND link_id != '' GROUP BY link_id HAVING n > 0 "
        "ORDER BY n DESC, link_id"
    ).to_pylist()
    assert expected, "the scenario has links with errors"
    body = client.get(f"/v1/links?metric=in_errors&limit=3&{_around(truth, 600, 600)}").json()
    assert [x["id"] for x in body["links"]] == [r["link_id"] for r in expected[:3]]
    assert body["links"][0]["total"] == pytest.approx(expected[0]["n"])
    assert all(x["a"] is not None and x["samples"] > 0 for x in body["links"])
    assert body["metric"] == "in_errors" and body["limit"] == 3


def test_a_window_without_errors_has_no_worst_links(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, _, _ = incident
    body = client.get("/v1/links?since=2020-01-01T00:00:00Z&until=2020-01-01T01:00:00Z").json()
    assert body["links"] == []
    assert (body["since"], body["until"]) == (
        "2020-01-01T00:00:00.000000Z",
        "2020-01-01T01:00:00.000000Z",
    )


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("since=2026-05-08T17:00:00Z&until=2026-05-08T16:00:00Z", "before until"),
        ("since=2026-05-01T00:00:00Z&until=2026-05-09T00:00:00Z", "at most 7 days"),
        ("since=2300-01-01T00:00:00Z&until=2300-01-01T01:00:00Z", "between 1970-01-01"),
        # Past 2106 the rollup's 32-bit minutes wrap: such a window answered with 1970s data.
        ("since=2107-01-01T00:00:00Z&until=2107-01-01T01:00:00Z", "and 2106-01-01T00:00:00Z"),
        ("since=2105-12-31T23:30:00Z", "the window must lie between"),
        # Date arithmetic past year 9999 or before year 1 was a 500.
        ("since=9999-12-31T23:59:59Z", "since must be between"),
        ("until=0001-01-01T00:00:00Z", "until must be between"),
        ("since=9999-12-31T23:59:59-23:59", "since must be between"),
        ("since=1969-12-31T23:59:59Z&until=1970-01-01T00:30:00Z", "since must be between"),
        # A number is always seconds: milliseconds would be the year 58,000, not 2026.
        ("since=1778259200000", "Unix seconds is not between"),
        ("since=-5", "Unix seconds is not between"),
        ("metric=in_octets", "metric"),
        ("limit=0", "limit"),
        ("since=yesterday", "since"),
    ],
)
def test_a_bad_window_or_metric_is_422_saying_why(
    incident: tuple[TestClient, dict[str, Any], ChdbStore], query: str, reason: str
) -> None:
    client, _, _ = incident
    response = client.get(f"/v1/links?{query}")
    assert response.status_code == 422
    assert reason in response.text


@pytest.mark.parametrize("seconds", ["1778259600", "1778259600.0", "17782596e2"])
def test_a_number_is_unix_seconds_whatever_its_size(
    incident: tuple[TestClient, dict[str, Any], ChdbStore], seconds: str
) -> None:
    client, _, _ = incident
    response = client.get(f"/v1/links?since={seconds}")
    if "e" in seconds:
        assert response.status_code == 422  # not a plain number: read as ISO, which it is not
        return
    assert response.json()["since"] == "2026-05-08T17:00:00.000000Z"


def test_the_openapi_document_states_the_time_bounds(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, _, _ = incident
    doc = client.get("/openapi.json").json()
    for path in ("/v1/links", "/v1/links/{link_id}"):
        params = {p["name"]: p for p in doc["paths"][path]["get"]["parameters"]}
        for name in ("since", "until"):
            text = params[name]["description"]
            assert "Unix seconds" in text and "1970-01-01T00:00:00Z" in text, text
            assert "2106-01-01T00:00:00Z" in text, text


def test_a_time_without_an_offset_is_utc(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, _, _ = incident
    naive = client.get("/v1/links?since=2026-05-08T16:00:00&until=2026-05-08T17:00:00").json()
    assert naive["since"] == "2026-05-08T16:00:00.000000Z"
    shifted = client.get(
        "/v1/links",
        params={"since": "2026-05-08T18:00:00+02:00", "until": "2026-05-08T19:00:00+02:00"},
    ).json()
    assert shifted["since"] == naive["since"] and shifted["until"] == naive["until"]


def test_too_many_buckets_is_422(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, _ = incident
    week = "since=2026-05-01T00:00:00Z&until=2026-05-08T00:00:00Z"
    response = client.get(f"{_url(truth['fault_link']['id'])}?{week}&step_s=1")
    assert response.status_code == 422 and "buckets" in response.text


def test_every_rankable_metric_is_a_counter_that_says_something_is_wrong() -> None:
    traffic = {Metric.IN_OCTETS, Metric.OUT_OCTETS, Metric.IN_PKTS, Metric.OUT_PKTS}
    assert {Metric(m.value) for m in CountedMetric} == set(COUNTER_METRICS) - traffic
    assert {Metric(m.value) for m in CountedMetric} == FAULT_COUNTERS


def test_warming_builds_every_jobs_paths_so_the_first_link_page_rebuilds_none(
    incident: tuple[TestClient, dict[str, Any], ChdbStore],
) -> None:
    client, truth, store = incident
    fabric = client.app.state.fabric  # type: ignore[attr-defined]
    job_links = JobLinks(fabric, PathFinder(fabric))
    rebuilt: list[str] = []
    build = job_links._rebuild

    def counting(store: Any, job_id: str) -> Any:
        rebuilt.append(job_id)
        return build(store, job_id)

    job_links._rebuild = counting  # type: ignore[method-assign]
    assert job_links.warm(store) == len(truth["jobs"])
    assert sorted(rebuilt) == sorted(truth["jobs"])
    rebuilt.clear()
    crossing = job_links.crossing(store, truth["fault_link"]["id"], truth["fault_at_ns"] + 10**12)
    assert rebuilt == [] and crossing
