"""The live path against a real broker: a capture published onto the raw topics, run through
faust-streaming workers and the sink into the store, must give the embedded replay's verdicts.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import urllib.error
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import simulations
from kafka_support import (
    BOOTSTRAP,
    RAILTRACE,
    Stack,
    read_records,
    require_broker,
    stack,
    wait_for_verdicts,
)

from railtrace.api.schemas import VerdictOut
from railtrace.replay import DiscardSink, ReplayReport, open_capture, replay
from railtrace.settings import Settings
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile

WATCHDOG_S = simulations.WATCHDOG_S
#: The seed of the 64-node incidents compared, the one test_replay_e2e checks against the
#: truth too, so that each is simulated and replayed once per session.
SEED = 11


def _embedded(cap: Path, profile: AttributionProfile = DEFAULT_PROFILE) -> dict[str, Any]:
    return _as_served(replay(open_capture(cap), DiscardSink(), profile=profile))


def _as_served(report: ReplayReport) -> dict[str, Any]:
    """Job id -> verdict as the API serves it, from a replay's report."""
    return {v.job_id: VerdictOut.from_record(v).model_dump(mode="json") for v in report.verdicts}


def _railtrace(env: dict[str, str], *args: str) -> None:
    """Run one railtrace command outside any stack, which must succeed."""
    done = subprocess.run(
        [RAILTRACE, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("fault", list(Fault), ids=str)
def test_streamed_verdicts_equal_the_embedded_ones(tmp_path: Path, fault: Fault) -> None:
    """On the incidents test_replay_e2e replays (tests.simulations: one capture and one
    embedded replay of each per session)."""
    require_broker()
    cap = simulations.capture(64, fault, SEED)
    expected = _as_served(simulations.report(64, fault, SEED))
    with stack(tmp_path, cap) as s:
        published = s.run("replay", str(cap), "--kafka")
        assert published.returncode == 0, published.stderr
        wait_for_verdicts(s, expected, f"streamed-{fault}")


@pytest.mark.parametrize(
    ("fault", "nccl_debug"), [(Fault.ECMP, "WARN"), (Fault.LINK_DOWN, "unset")], ids=str
)
def test_jobs_placed_by_the_scheduler_alone_stream_the_embedded_verdicts(
    tmp_path: Path, fault: Fault, nccl_debug: str
) -> None:
    """Most jobs run with NCCL_DEBUG at WARN or unset: no channel lines, so their hosts come
    from the capture's scheduler/ records, which reach the workers on their own topic and
    must place each job as the embedded replay places it."""
    require_broker()
    cap = simulations.capture(64, fault, SEED, nccl_debug)
    assert any((cap / "scheduler").iterdir())
    expected = _as_served(simulations.report(64, fault, SEED, nccl_debug))
    assert all(v["hosts"] > 0 for v in expected.values()), expected
    with stack(tmp_path, cap) as s:
        published = s.run("replay", str(cap), "--kafka")
        assert published.returncode == 0, published.stderr
        wait_for_verdicts(s, expected, f"streamed-{fault}-{nccl_debug}")


def test_one_changed_attribution_setting_changes_replay_and_live_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pause rate that makes a PFC storm, raised past any storm, given once as an
    environment variable: the library's replay, the `railtrace replay` command and the
    streaming workers all stop seeing the storm, and all say the same `unknown`."""
    require_broker()
    cap = tmp_path / "cap"
    write_capture(cap, 8, Fault.PFC_STORM, 33, watchdog_s=WATCHDOG_S)
    setting = {"RAILTRACE_ATTRIBUTION__HEALTH__PFC_PAUSE_PER_S": "1e12"}
    default = _embedded(cap)
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    expected = _embedded(cap, Settings().attribution)
    (stalled,) = [job for job, v in default.items() if v["state"] == "stalled"]
    assert default[stalled]["cause"]["kind"] == "link", default[stalled]
    assert expected[stalled]["state"] == "stalled"
    assert expected[stalled]["cause"]["kind"] == "unknown", expected[stalled]
    # The command reads the setting as the library was given it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env |= setting | {"RAILTRACE_STORE__DATA_DIR": str(tmp_path / "embedded")}
    _railtrace(env, "replay", str(cap))
    store = ChdbStore(tmp_path / "embedded")
    try:
        stored = store.get_verdict(stalled)
    finally:
        store.close()
    assert stored is not None
    assert VerdictOut.from_record(stored).model_dump(mode="json") == expected[stalled]
    # And the workers, whose telemetry stage and correlator are both given it.
    with stack(tmp_path, cap, **setting) as s:
        published = s.run("replay", str(cap), "--kafka")
        assert published.returncode == 0, published.stderr
        wait_for_verdicts(s, expected, "changed-setting")


def test_garbage_on_every_raw_topic_is_dead_lettered_while_good_records_flow(
    tmp_path: Path,
) -> None:
    require_broker()
    cap = tmp_path / "cap"
    write_capture(cap, 64, Fault.NIC_DOWN, 32, watchdog_s=WATCHDOG_S)
    expected = _embedded(cap)
    with stack(tmp_path, cap) as s:
        prefix = s.env["RAILTRACE_KAFKA__TOPIC_PREFIX"]
        garbage = {
            "raw.gnmi.v1": [b"{not json", b'{"source": "leaf-su01-r0:9339", "updates": 7}'],
            "raw.snmp.v1": [b"\x00\xff\xfe", b'{"device": "leaf-su01-r0", "ts_ns": -1}'],
            "raw.logs.v1": [b"[1,2,3]", b'{"job_id": "x", "source": "y", "line_no": 0}'],
        }
        # kcat, an independent client, writes the garbage: the wire format is Kafka's own.
        for suffix, values in garbage.items():
            for value in values:
                done = subprocess.run(  # noqa: PLW1510 - return codes are asserted
                    ["kcat", "-b", BOOTSTRAP, "-P", "-t", f"{prefix}.{suffix}", "-k", "junk"],
                    input=value,
                    capture_output=True,
                    timeout=30,
                )
                assert done.returncode == 0, done.stderr
        published = s.run("replay", str(cap), "--kafka")
        assert published.returncode == 0, published.stderr
        wait_for_verdicts(s, expected, "garbage")
        letters = _consume(f"{prefix}.dead-letters.v1", want=6)
        by_topic: dict[str, list[str]] = {}
        for letter in letters:
            by_topic.setdefault(letter["topic"], []).append(letter["reason"])
        assert sorted(by_topic) == sorted(f"{prefix}.{t}" for t in garbage), letters
        assert all(len(reasons) == 2 and all(reasons) for reasons in by_topic.values())
        verdicts = _consume(f"{prefix}.verdicts.v1", want=1)
        assert verdicts and all(v[0]["t"] == "Verdict" for v in verdicts)
        # The sink's own figures on the API's /metrics: the dead letters it stored, and no
        # lag once everything is in the store.
        deadline = time.monotonic() + 60
        while True:
            try:
                figures = _prometheus(s.get_bytes("/metrics").decode())
            except urllib.error.HTTPError:
                raise
            except (TimeoutError, ConnectionError, urllib.error.URLError):
                assert time.monotonic() < deadline, "the sink's /metrics never answered"
                continue  # the sink busy writing: ask again until the deadline
            lag = {k: v for k, v in figures.items() if k[0] == "railtrace_sink_lag_messages"}
            dead = figures.get(("railtrace_sink_rows_written_total", 'table="dead_letters"'), 0)
            if (lag and sum(lag.values()) == 0 and dead >= 6) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert lag and sum(lag.values()) == 0, lag
        assert f'topic="{prefix}.link-samples.v2"' in {k[1] for k in lag}
        assert dead >= 6
        _assert_own_probes(s)


def _assert_own_probes(s: Stack) -> None:
    """The worker's and the sink's own endpoints, once the garbage test's pipeline drained:
    what each counted, the partitions each holds (one worker, 4 partitions a topic), and
    healthy."""
    worker = _prometheus(s.probe("worker0", "/metrics")[1].decode())
    assert worker[("railtrace_worker_telemetry_dead_letters_total", "")] == 4
    assert worker[("railtrace_worker_log_dead_letters_total", "")] == 2
    assert worker[("railtrace_worker_telemetry_values_total", "")] > 0
    assert worker[("railtrace_worker_telemetry_partitions", "")] == 8  # raw gNMI, SNMP
    assert worker[("railtrace_worker_log_partitions", "")] == 4
    assert worker[("railtrace_worker_healthy", "")] == 1
    status, body = s.probe("worker0", "/healthz")
    assert (status, orjson.loads(body)["problems"]) == (200, []), body
    sink = _prometheus(s.probe("sink", "/metrics")[1].decode())
    assert sink[("railtrace_sink_rows_written_total", 'table="dead_letters"')] >= 6
    # the lag of every topic it holds: a moment's, once seen as 34 right after the API's
    # scrape above had seen 0, so not asserted 0 here
    lagged = {k[1] for k in sink if k[0] == "railtrace_sink_lag_messages"}
    assert f'topic="{s.env["RAILTRACE_KAFKA__TOPIC_PREFIX"]}.link-samples.v2"' in lagged
    assert sink[("railtrace_sink_partitions", "")] == 28  # its 7 topics
    assert sink[("railtrace_sink_healthy", "")] == 1
    status, body = s.probe("sink", "/healthz")
    assert (status, orjson.loads(body)["problems"]) == (200, []), body


def _prometheus(text: str) -> dict[tuple[str, str], float]:
    """(name, labels) -> value for every sample of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            name, _, labels = series.partition("{")
            out[(name, labels.rstrip("}"))] = float(value)
    return out


def _consume(topic: str, want: int, timeout: float = 60) -> list[Any]:
    """Read a whole topic with kcat and parse every value as JSON."""
    deadline = time.monotonic() + timeout
    values: list[Any] = []
    while time.monotonic() < deadline:
        done = subprocess.run(  # noqa: PLW1510 - return codes are asserted
            ["kcat", "-b", BOOTSTRAP, "-C", "-t", topic, "-e", "-q", "-f", "%s\n"],
            capture_output=True,
            timeout=60,
        )
        values = [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]
        if len(values) >= want:
            return values
        time.sleep(1)
    return values


def test_a_published_capture_is_stamped_now_not_at_its_own_months_old_time(
    tmp_path: Path,
) -> None:
    """The raw topics keep a few days by record time: stamped with a capture's own time, the
    unread backlog of an old capture was deleted by the broker's retention within minutes."""
    require_broker()
    cap = tmp_path / "cap"
    write_capture(cap, 2, Fault.LINK_DOWN, 3, watchdog_s=WATCHDOG_S)
    prefix = f"stamp{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env |= {
        "RAILTRACE_KAFKA__BOOTSTRAP_SERVERS": BOOTSTRAP,
        "RAILTRACE_KAFKA__TOPIC_PREFIX": prefix,
    }
    before_ms = time.time() * 1000
    _railtrace(env, "replay", str(cap), "--kafka")
    records = asyncio.run(read_records(f"{prefix}.raw.gnmi.v1"))
    assert records
    assert min(r.timestamp for r in records) >= before_ms - 60_000
