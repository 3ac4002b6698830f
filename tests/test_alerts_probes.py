"""The alerter's health rules as a table, and the metrics one scrape gives."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from railtrace.alerts.probes import COUNTERS, Readings, assess, families, registry

GRACE = 120.0


@pytest.mark.parametrize(
    ("readings", "problems"),
    [
        (Readings(1000.0, None, 0, 100, None), []),
        (Readings(1000.0, 900.0, 0, 100, None), []),  # failing, within the grace
        (Readings(1000.0, 800.0, 0, 100, None), ["webhook"]),
        (Readings(1000.0, None, 100, 100, None), ["queue"]),
        (Readings(1000.0, None, 99, 100, None), []),
        (Readings(1000.0, None, 0, 100, 950.0), []),  # the group is still assigning
        (Readings(1000.0, None, 0, 100, 850.0), ["topics"]),
        (Readings(1000.0, 10.0, 100, 100, 10.0), ["webhook", "queue", "topics"]),
    ],
)
def test_each_health_rule_names_itself_past_its_limit(
    readings: Readings, problems: list[str]
) -> None:
    health = assess(readings, GRACE)
    assert health.problems == problems
    assert health.ok is (not problems)
    assert health.to_json()["role"] == "alert"


def test_the_body_says_what_each_rule_read() -> None:
    body = assess(Readings(1000.0, 800.0, 3, 100, None), GRACE).to_json()
    assert body == {
        "role": "alert",
        "ok": False,
        "problems": ["webhook"],
        "slack_failing_for_s": 200.0,
        "queued": 3,
        "queue_max": 100,
        "without_topics_for_s": None,
    }


def test_a_scrape_gives_every_counter_the_queue_and_the_health_gauge() -> None:
    counters = {"records": 7, "sent": 2, "radius_unknown": 1}
    health = assess(Readings(0.0, None, 4, 100, None), GRACE)
    text = generate_latest(registry(lambda: families(counters, health, 4))).decode()
    for key in COUNTERS:
        assert f"railtrace_alert_{key}_total {float(counters.get(key, 0))}" in text
    assert "railtrace_alert_queued 4.0" in text
    assert "railtrace_alert_healthy 1.0" in text


def test_every_metric_is_documented_for_the_people_who_alert_on_it() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "deploy" / "alerts" / "README.md").read_text()
    for name in [*COUNTERS, "queued", "healthy"]:
        assert f"`{name}`" in readme or f"`railtrace_alert_{name}`" in readme, name
