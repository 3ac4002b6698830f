"""Nothing lost, nothing doubled: the live path under rebalancing, a killed worker and a
restarted broker, each checked against the embedded replay of the same capture."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from kafka_support import (
    RAILTRACE,
    Stack,
    differences,
    group_offsets,
    require_broker,
    stack,
    stop,
    wait_drained,
    wait_members,
)
from test_streaming_e2e import WATCHDOG_S, _embedded, _wait_for

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore

ROOT = Path(__file__).resolve().parents[1]


def _capture(tmp: Path, fault: Fault, seed: int) -> Path:
    cap = tmp / "cap"
    write_capture(cap, 64, fault, seed, watchdog_s=WATCHDOG_S)
    return cap


def _publish(s: Stack, cap: Path) -> None:
    done = s.run("replay", str(cap), "--kafka")
    assert done.returncode == 0, done.stderr


def _stored_counts(s: Stack) -> dict[str, int]:
    """Stop the sink (it holds chDB) and count what it stored."""
    for proc in s.procs:
        stop(proc)
    store = ChdbStore(s.data)
    try:
        return {t: store.count(t) for t in ("link_samples", "job_facts", "verdicts")}
    finally:
        store.close()


def test_two_workers_share_the_partitions_and_give_the_same_verdicts(tmp_path: Path) -> None:
    require_broker()
    cap = _capture(tmp_path, Fault.FLAP, 41)
    expected = _embedded(cap)
    with stack(tmp_path, cap, workers=2) as s:
        # Published at once: the second worker joins while the first already holds state, so
        # partitions (and their checkpoints and tables) move mid-stream.
        _publish(s, cap)
        got = _wait_for(s, expected)
        assert got == expected, f"{differences(got, expected)}\n{s.logs()}"
        wait_members(s.env["RAILTRACE_WORKER__APP_ID"] + "-telemetry", 2)
        shares = [
            (tmp_path / f"worker{i}.log").read_text().count("telemetry state restored")
            for i in range(2)
        ]
        assert all(shares), f"a worker never got telemetry partitions:\n{s.logs()}"


def test_a_worker_killed_mid_stream_and_restarted_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    require_broker()
    cap = _capture(tmp_path, Fault.CRC_BURST, 42)
    expected = _embedded(cap)
    report = replay(open_capture(cap), DiscardSink())
    # Checkpoints every second, so the worker is caught with some telemetry committed and
    # more in flight.
    with stack(tmp_path, cap, RAILTRACE_WORKER__CHECKPOINT_EVERY_S="1") as s:
        publisher = subprocess.Popen(
            [RAILTRACE, "replay", str(cap), "--kafka"], env=s.env, stdout=subprocess.DEVNULL
        )
        app = s.env["RAILTRACE_WORKER__APP_ID"]
        raw = [f"{s.env['RAILTRACE_KAFKA__TOPIC_PREFIX']}.raw.gnmi.v1"]
        deadline = time.monotonic() + 120
        while (offsets := group_offsets(f"{app}-telemetry", raw))[0] == 0:
            assert time.monotonic() < deadline, s.logs()
            time.sleep(0.1)
        assert offsets[0] < offsets[1], "the worker finished before it could be killed"
        worker = s.procs[0]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
        s.start("worker", name="worker-restarted")
        assert publisher.wait(120) == 0
        got = _wait_for(s, expected)
        assert got == expected, f"{differences(got, expected)}\n{s.logs()}"
        wait_drained(s)
        counts = _stored_counts(s)
    assert counts == {
        "link_samples": report.samples,
        "job_facts": report.facts,
        "verdicts": len(expected),
    }


def test_the_pipeline_recovers_by_itself_when_the_broker_restarts(tmp_path: Path) -> None:
    require_broker()
    if os.environ.get("RAILTRACE_TEST_KAFKA"):
        pytest.skip("the broker under test is not ours to restart")
    cap = _capture(tmp_path, Fault.LINK_DOWN, 43)
    expected = _embedded(cap)
    with stack(tmp_path, cap) as s:
        _publish(s, cap)
        # Restart while the telemetry stage is mid-stream: it has checkpointed once and has
        # more to read, so sends, commits and the rejoin all meet the outage.
        prefix, app = s.env["RAILTRACE_KAFKA__TOPIC_PREFIX"], s.env["RAILTRACE_WORKER__APP_ID"]
        raw = [f"{prefix}.raw.gnmi.v1", f"{prefix}.raw.snmp.v1"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            committed, total = group_offsets(f"{app}-telemetry", raw)
            if committed > 0:
                break
            time.sleep(0.2)
        assert 0 < committed < total, "the restart would not meet the stage mid-stream"
        done = subprocess.run(
            [str(ROOT / "deploy" / "kafka" / "kafka.sh"), "restart"],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        got = _wait_for(s, expected, timeout=300)
        if got != expected:
            kept = s.keep_logs("broker-restart")
            pytest.fail(f"{differences(got, expected)}\nwhole logs in {kept}\n{s.logs()[-4000:]}")
