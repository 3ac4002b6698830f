"""The worker's health rules as a table, the metrics one scrape gives, and the rules read by
real workers."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from kafka_support import BOOTSTRAP, RAILTRACE, free_port, require_broker, stop
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from railtrace.simulate import Fault, write_capture
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


def test_a_worker_the_groups_leave_without_partitions_says_which_past_the_grace(
    tmp_path: Path,
) -> None:
    """Three real workers over one partition a topic, with a 2 s grace: the two the logs group
    gave nothing answer 503 naming `log_partitions`, and each names `telemetry_partitions`
    exactly when its own gauge shows none (the raw gNMI and SNMP partitions go to at most two
    of them)."""
    require_broker()
    cap = tmp_path / "cap"
    write_capture(cap, 2, Fault.LINK_DOWN, 3, watchdog_s=30)
    tag = uuid.uuid4().hex[:10]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env |= {
        "RAILTRACE_KAFKA__BOOTSTRAP_SERVERS": BOOTSTRAP,
        "RAILTRACE_KAFKA__TOPIC_PREFIX": f"t{tag}",
        "RAILTRACE_KAFKA__PARTITIONS": "1",
        "RAILTRACE_WORKER__APP_ID": f"a{tag}",
        "RAILTRACE_WORKER__DATA_DIR": str(tmp_path / "state"),
        "RAILTRACE_WORKER__HEALTH_GRACE_S": "2",
    }
    urls = [f"http://127.0.0.1:{free_port()}" for _ in range(3)]
    procs = [
        subprocess.Popen(
            [RAILTRACE, "worker", "--topology", str(cap)],
            env=env | {"RAILTRACE_WORKER__METRICS_LISTEN": url.removeprefix("http://")},
            stdout=(tmp_path / f"worker{i}.log").open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for i, url in enumerate(urls)
    ]
    try:
        # Until both groups have settled (the telemetry stage joins its group once the app
        # has started) and nothing moved for longer than the grace.
        deadline = time.monotonic() + 120
        last: list[Any] = []
        moved = time.monotonic()
        while True:
            got = [_scrape(url) for url in urls]
            held = [None if g is None else g[2] for g in got]
            if held != last:
                last, moved = held, time.monotonic()
            settled = None not in held and [sum(h) for h in zip(*held, strict=True)] == [1, 2]
            if settled and time.monotonic() - moved > 4:
                break
            assert time.monotonic() < deadline, (got, _logs(tmp_path))
            time.sleep(0.5)
        for status, body, (logs, telemetry) in cast(list[tuple[int, Any, tuple[int, int]]], got):
            want = ["telemetry_partitions"] if telemetry == 0 else []
            want += ["log_partitions"] if logs == 0 else []
            assert body["problems"] == want, (body, logs, telemetry)
            assert status == (503 if want else 200), body
    finally:
        for proc in procs:
            stop(proc)


def _scrape(url: str) -> tuple[int, Any, tuple[int, int]] | None:
    """(/healthz status, its body, (log, telemetry) partitions held), or None while the
    worker is not answering yet."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
                status, body = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
    gauges = {f.name: s.value for f in text_string_to_metric_families(metrics) for s in f.samples}
    held = (
        int(gauges["railtrace_worker_log_partitions"]),
        int(gauges["railtrace_worker_telemetry_partitions"]),
    )
    return status, orjson.loads(body), held


def _logs(tmp_path: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-1500:] for p in tmp_path.glob("*.log"))
