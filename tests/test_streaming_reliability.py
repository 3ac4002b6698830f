"""Nothing lost, nothing doubled: the live path under rebalancing, a killed worker and a
restarted broker, each checked against the embedded replay of the same capture."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import gates
import simulations
from kafka_support import (
    Stack,
    broker_is_ours,
    group_offsets,
    require_broker,
    run_kafka_sh,
    stack,
    stop,
    wait_drained,
    wait_for_verdicts,
    wait_members,
)
from test_streaming_e2e import SEED, _as_served

from railtrace.replay import open_capture
from railtrace.simulate import Fault
from railtrace.store.chdb_store import ChdbStore


def _publish(s: Stack, cap: Path) -> None:
    done = s.run("replay", str(cap), "--kafka")
    assert done.returncode == 0, done.stderr


def _split(cap: Path, out: Path) -> tuple[Path, Path]:
    """The capture as two captures under `out` to publish one after the other, so that a
    test can act between them and be sure the workers have more to read: the first holds half
    the switches' gNMI files and every job's log files but its last, the second the rest.
    Each file is whole in one part (a switch's and a file's messages keep their order), and
    both keep the capture's relative paths, so log sources are named as the embedded replay
    names them, and both have gNMI files, which date the logs' year-less prefixes alike. The
    capture itself is shared (tests.simulations) and left as it is."""
    whole = open_capture(cap)
    gnmi = sorted(whole.gnmi_files)
    half = len(gnmi) // 2
    logs = [sorted(files) for _, files in sorted(whole.log_files.items())]
    parts = (
        gnmi[:half] + [f for files in logs for f in files[:-1]],
        gnmi[half:] + [files[-1] for files in logs],
    )
    dirs = (out / "first", out / "rest")
    for part, files in zip(dirs, parts, strict=True):
        part.mkdir()
        for name in ("cables.csv", "hosts.csv"):
            shutil.copyfile(cap / name, part / name)
        for f in files:
            (part / f.relative_to(cap)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, part / f.relative_to(cap))
    # Where the jobs run, known from the start: the scheduler's records go with the first.
    shutil.copytree(cap / "scheduler", dirs[0] / "scheduler")
    return dirs


def _wait_committed(s: Stack, group: str, topic_names: list[str], timeout: float = 180) -> int:
    """Until consumer group `group` has committed some of `topic_names`: messages committed."""
    deadline = time.monotonic() + timeout
    while (committed := group_offsets(group, topic_names)[0]) == 0:
        assert time.monotonic() < deadline, f"{group} committed nothing\n{s.logs()}"
        time.sleep(0.2)
    return committed


TAKEN_OVER = re.compile(
    r"job taken over from its table .*job=(\S+) partition=(\d+) owned=\[([\d, ]*)\]"
)


def _takeovers(log: Path) -> list[tuple[str, int, set[int]]]:
    """(job, its partition, the partitions the worker owned) of each job a worker adopted."""
    return [
        (m[1], int(m[2]), {int(p) for p in m[3].split(",") if p.strip()})
        for m in TAKEN_OVER.finditer(log.read_text(errors="replace"))
    ]


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
    cap = simulations.capture(64, Fault.FLAP, SEED)
    expected = _as_served(simulations.report(64, Fault.FLAP, SEED))
    first, rest = _split(cap, tmp_path)
    with stack(tmp_path, cap) as s:
        # The first worker reads the first part alone and holds its state; the second joins,
        # and partitions (with their checkpoints and tables) move before the rest is read.
        _publish(s, first)
        wait_drained(s)
        s.start("worker", name="worker1")
        app = s.env["RAILTRACE_WORKER__APP_ID"]
        wait_members(app, 2)
        wait_members(app + "-telemetry", 2)
        _publish(s, rest)
        wait_for_verdicts(s, expected, "two-workers")
        wait_members(app + "-telemetry", 2)
        logs = [tmp_path / f"worker{i}.log" for i in range(2)]
        shares = [log.read_text().count("telemetry state restored") for log in logs]
        assert all(shares), f"a worker never got telemetry partitions:\n{s.logs()}"
        # Jobs moved with their tables; each was taken over only by the worker owning it
        # then (a worker that lost a partition keeps its own writes of it in its table).
        takeovers = [_takeovers(log) for log in logs]
        assert takeovers[1], f"no job moved to the second worker:\n{s.logs()}"
        for log, adopted in zip(logs, takeovers, strict=True):
            foreign = [(job, p, owned) for job, p, owned in adopted if p not in owned]
            assert not foreign, f"{log.name} took over jobs it did not own: {foreign}"


def test_a_worker_killed_mid_stream_and_restarted_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    require_broker()
    cap = simulations.capture(64, Fault.CRC_BURST, SEED)
    report = simulations.report(64, Fault.CRC_BURST, SEED)
    expected = _as_served(report)
    first, rest = _split(cap, tmp_path)
    # Checkpoints every second, so the worker is caught with some telemetry committed (and
    # likely more read since).
    with stack(tmp_path, cap, RAILTRACE_WORKER__CHECKPOINT_EVERY_S="1") as s:
        _publish(s, first)
        app = s.env["RAILTRACE_WORKER__APP_ID"]
        raw = [f"{s.env['RAILTRACE_KAFKA__TOPIC_PREFIX']}.raw.gnmi.v1"]
        _wait_committed(s, f"{app}-telemetry", raw)
        worker = s.procs[0]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(30)
        # The rest goes out while no worker runs: the restarted one meets the stream midway,
        # whatever the killed one had done.
        _publish(s, rest)
        committed, total = group_offsets(f"{app}-telemetry", raw)
        assert 0 < committed < total
        s.start("worker", name="worker-restarted")
        wait_for_verdicts(s, expected, "worker-killed")
        wait_drained(s)
        counts = _stored_counts(s)
    assert counts == {
        "link_samples": report.samples,
        # The capture's scheduler/ placements included: replay --kafka publishes them too.
        "job_facts": report.facts,
        "verdicts": len(expected),
    }


def test_the_pipeline_recovers_by_itself_when_the_broker_restarts(tmp_path: Path) -> None:
    require_broker()
    if not broker_is_ours():
        gates.deliberately("RAILTRACE_TEST_KAFKA names a broker that is not ours to restart")
    cap = simulations.capture(64, Fault.LINK_DOWN, SEED)
    expected = _as_served(simulations.report(64, Fault.LINK_DOWN, SEED))
    first, rest = _split(cap, tmp_path)
    with stack(tmp_path, cap) as s:
        # Restart while the pipeline is mid-stream: the telemetry stage has checkpointed, and
        # the rest of the capture is held back until the broker is back, so the workers' and
        # the sink's rejoin, sends and commits must all recover from the outage to read it.
        _publish(s, first)
        prefix, app = s.env["RAILTRACE_KAFKA__TOPIC_PREFIX"], s.env["RAILTRACE_WORKER__APP_ID"]
        raw = [f"{prefix}.raw.gnmi.v1", f"{prefix}.raw.snmp.v1"]
        _wait_committed(s, f"{app}-telemetry", raw)
        done = run_kafka_sh("restart")
        assert done.returncode == 0, done.stdout + done.stderr
        _publish(s, rest)
        wait_for_verdicts(s, expected, "broker-restart")
