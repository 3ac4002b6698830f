"""The alerter asks a real `railtrace serve` for a blamed link's blast radius: the other jobs
its alert names are the ones the API's link page lists, and an API that cannot answer leaves
the alert going out, saying why the radius is not known."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_support import replayed
from browser_support import Served, serving
from cli_support import get_json
from kafka_support import free_port

from railtrace.alerts.consumer import AlertConsumer
from railtrace.alerts.payloads import Alert
from railtrace.compose.fabric import alert_topology
from railtrace.settings import Settings
from railtrace.simulate import Fault
from railtrace.streams import wire
from railtrace.streams.records import CauseKind, Verdict


@dataclasses.dataclass(frozen=True)
class Incident:
    served: Served
    verdict: Verdict
    truth: dict[str, Any]
    capture: Path


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Incident]:
    """Seed 3 takes down a leaf-spine uplink that several jobs cross; the replayed store is
    closed before `serve` opens it."""
    base = tmp_path_factory.mktemp("radius")
    with replayed(base, 64, Fault.LINK_DOWN, 3) as (store, _, truth):
        (job,) = [j for j, t in truth["jobs"].items() if t["state"] == "stalled"]
        verdict = store.get_verdict(job)
    assert verdict is not None and verdict.cause_link is not None
    assert verdict.cause_link.link_id == truth["fault_link"]["id"]
    with serving(base, base / "cap", base / "data") as served:
        yield Incident(served, verdict, truth, base / "cap")


class Collect:
    def __init__(self) -> None:
        self.sent: list[Alert] = []

    def emit(self, alert: Alert) -> None:
        self.sent.append(alert)


def _alerts(settings: Settings, *verdicts: Verdict) -> tuple[list[Alert], AlertConsumer]:
    """The alerts `verdicts` make, each read from the verdicts topic's wire format."""
    sent = Collect()
    fabric = alert_topology(settings, lambda line: None)
    assert fabric is not None
    consumer = AlertConsumer(settings, sent, fabric.role)

    async def main() -> None:
        try:
            for v in verdicts:
                await consumer.handle(
                    consumer.verdicts, v.job_id.encode(), wire.encode_records([v])
                )
        finally:
            if consumer.radius is not None:
                await consumer.radius.stop()

    asyncio.run(main())
    return sent.sent, consumer


def _settings(incident: Incident, **alerts: Any) -> Settings:
    return Settings(
        api={"topology_dir": str(incident.capture)},
        alerts={"incident_base_url": "https://railtrace.example.net", **alerts},
    )


def _section(alert: Alert, title: str) -> str:
    blocks = alert.payload["blocks"]
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b]
    return next(t for t in texts if t.startswith(title))


def _api_jobs(incident: Incident) -> list[dict[str, Any]]:
    """The blast radius as the API's link page gives it, at the verdict's time."""
    v = incident.verdict
    assert v.cause_link is not None
    until = (v.decided_at_ns or 0) // 10**9 + 1
    query = urllib.parse.urlencode({"until": str(until), "since": str(until - 600)})
    link = urllib.parse.quote(v.cause_link.link_id, safe=":")
    url = f"{incident.served.url}/v1/links/{link}?{query}"
    jobs: list[dict[str, Any]] = get_json(url, incident.served.token, timeout=30)["jobs"]
    return jobs


def test_a_link_alert_names_the_jobs_the_link_page_lists_as_its_blast_radius(
    incident: Incident,
) -> None:
    settings = _settings(incident, api_url=incident.served.url, api_token=incident.served.token)
    (alert,), consumer = _alerts(settings, incident.verdict)
    others = [j for j in _api_jobs(incident) if j["job_id"] != incident.verdict.job_id]
    assert others, "seed 3's uplink carries other jobs than the stalled one"
    radius = _section(alert, "*Blast radius*").splitlines()
    plural = "s" if len(others) > 1 else ""
    assert radius[0] == f"*Blast radius*: {len(others)} other job{plural} may cross this link"
    named = [line.split("`")[1] for line in radius[1:]]
    assert named == [j["job_id"] for j in others][:5]
    assert incident.verdict.job_id not in named
    steps = _section(alert, "*Next steps*")
    assert f"will move when it is shut: {others[0]['job_id']}" in steps
    assert consumer.radius is not None
    assert consumer.radius.counters == {"radius_asked": 1, "radius_unknown": 0}


def test_jobs_stalled_by_the_same_link_at_once_ask_the_api_once(incident: Incident) -> None:
    settings = _settings(incident, api_url=incident.served.url, api_token=incident.served.token)
    twin = dataclasses.replace(incident.verdict, job_id="twin-of-" + incident.verdict.job_id)
    sent, consumer = _alerts(settings, incident.verdict, twin)
    assert [a.subject for a in sent] == [f"job:{incident.verdict.job_id}", f"job:{twin.job_id}"]
    assert all(_section(a, "*Blast radius*") for a in sent)
    assert consumer.radius is not None and consumer.radius.counters["radius_asked"] == 1


def test_a_refused_token_or_an_absent_api_still_alerts_and_says_why_the_radius_is_unknown(
    incident: Incident,
) -> None:
    url = incident.served.url
    refused, consumer = _alerts(
        _settings(incident, api_url=url, api_token="not-a-token"), incident.verdict
    )
    assert _section(refused[0], "*Blast radius*") == (
        f"*Blast radius*\nNot known: the API at {url} refused alerts.api_token (HTTP 401)."
    )
    assert consumer.radius is not None and consumer.radius.counters["radius_unknown"] == 1
    nowhere = f"http://127.0.0.1:{free_port()}"
    absent, _ = _alerts(_settings(incident, api_url=nowhere, api_token="t"), incident.verdict)
    assert _section(absent[0], "*Blast radius*").startswith(
        f"*Blast radius*\nNot known: the API at {nowhere} could not be reached ("
    )


def test_without_a_token_the_alert_has_no_radius_and_the_start_says_how_to_add_one(
    incident: Incident, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="railtrace.alerts.consumer"):
        (alert,), consumer = _alerts(_settings(incident), incident.verdict)
    assert consumer.radius is None
    assert not any("*Blast radius*" in json.dumps(b) for b in alert.payload["blocks"])
    assert any("RAILTRACE_ALERTS__API_TOKEN" in r.getMessage() for r in caplog.records)


def test_a_node_verdict_asks_no_radius(incident: Incident) -> None:
    node = dataclasses.replace(
        incident.verdict, cause_kind=CauseKind.NODE, cause_link=None, cause_node="hgx-su01-h00"
    )
    nowhere = f"http://127.0.0.1:{free_port()}"
    (alert,), consumer = _alerts(_settings(incident, api_url=nowhere, api_token="t"), node)
    assert consumer.radius is not None and consumer.radius.counters["radius_asked"] == 0
    assert not any("Blast radius" in json.dumps(b) for b in alert.payload["blocks"])
