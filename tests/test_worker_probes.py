"""The worker's health rules as a table, and the metrics one scrape gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import generate_latest

from railtrace.streams.telemetry import DecodeStats
from railtrace.worker.probes import (
    LOG_COUNTERS,
    TELEMETRY_COUNTERS,
    Figures,
    Readings,
    assess,
    families,
    registry,
)

GRACE = 120.0


@pytest.mark.parametrize(
    ("readings", "problems"),
    [
        (Readings(1000.0, None, None, None), []),
        (Readings(1000.0, 900.0, None, None), []),  # failing, within the grace
        (Readings(1000.0, 800.0, None, None), ["telemetry"]),
        (Readings(1000.0, None, 950.0, 950.0), []),  # the groups are still assigning
        (Readings(1000.0, None, 850.0, None), ["telemetry_partitions"]),
        (Readings(1000.0, None, None, 850.0), ["log_partitions"]),
        (
            Readings(1000.0, 10.0, 10.0, 10.0),
            ["telemetry", "telemetry_partitions", "log_partitions"],
        ),
    ],
)
def test_each_health_rule_names_itself_past_the_grace(
    readings: Readings, problems: list[str]
) -> None:
    health = assess(readings, GRACE)
    assert health.problems == problems
    assert health.ok is (not problems)
    assert health.to_json()["role"] == "worker"


def test_the_body_says_what_each_rule_read() -> None:
    body = assess(Readings(1000.0, 800.0, 990.0, None), GRACE).to_json()
    assert body == {
        "role": "worker",
        "ok": False,
        "problems": ["telemetry"],
        "telemetry_failing_for_s": 200.0,
        "without_telemetry_partitions_for_s": 10.0,
        "without_log_partitions_for_s": None,
    }


def test_a_scrape_gives_every_counter_the_decoder_counts_and_the_gauges() -> None:
    decoded = DecodeStats(unknown_paths=5, bad_values=2)
    decoded.retimed["ms"] += 3
    figures = Figures(
        telemetry={"values": 40, "restarts": 1},
        logs={"dead_letters": 2, "verdicts": 7},
        decoded=decoded,
        telemetry_partitions=8,
        log_partitions=4,
        devices=12,
        jobs=3,
        unreadable_parser_sets=0,
    )
    health = assess(Readings(0.0, None, None, None), GRACE)
    text = generate_latest(registry(lambda: families(figures, health))).decode()
    for counts, table in ((figures.telemetry, TELEMETRY_COUNTERS), (figures.logs, LOG_COUNTERS)):
        for key, (name, _) in table.items():
            assert f"railtrace_worker_{name}_total {float(counts.get(key, 0))}" in text
    assert 'railtrace_worker_telemetry_values_set_aside_total{reason="unknown_path"} 5.0' in text
    assert 'railtrace_worker_telemetry_values_set_aside_total{reason="bad_value"} 2.0' in text
    assert 'railtrace_worker_telemetry_restamped_messages_total{unit="ms"} 3.0' in text
    assert "railtrace_worker_telemetry_partitions 8.0" in text
    assert "railtrace_worker_log_partitions 4.0" in text
    assert "railtrace_worker_telemetry_devices 12.0" in text
    assert "railtrace_worker_jobs 3.0" in text
    assert "railtrace_worker_healthy 1.0" in text


def test_a_stage_not_started_yet_scrapes_as_zeros() -> None:
    figures = Figures({}, {}, None, 0, 0, 0, 0, 0)
    health = assess(Readings(500.0, None, 0.0, 0.0), GRACE)
    text = generate_latest(registry(lambda: families(figures, health))).decode()
    assert 'railtrace_worker_telemetry_values_set_aside_total{reason="pathless"} 0.0' in text
    assert "railtrace_worker_healthy 0.0" in text


def test_every_metric_and_rule_is_documented_for_the_people_who_alert_on_them() -> None:
    readme = (Path(__file__).parents[1] / "deploy" / "kafka" / "README.md").read_text()
    names = [name for table in (TELEMETRY_COUNTERS, LOG_COUNTERS) for name, _ in table.values()]
    names += [
        "unreadable_parser_sets",
        "telemetry_values_set_aside",
        "telemetry_restamped_messages",
        "telemetry_partitions",
        "log_partitions",
        "telemetry_devices",
        "jobs",
        "healthy",
    ]
    for name in names:
        assert f"`{name}`" in readme, name
    for rule in ("telemetry", "telemetry_partitions", "log_partitions"):
        assert f"(`{rule}`" in readme, rule
