"""`railtrace collect ...` as a user runs it: a TOML settings file, a real broker, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from kafka_support import BOOTSTRAP, RAILTRACE, read_topic, require_broker

from railtrace.settings import load_settings
from railtrace.streams import wire

LINES = [
    "h1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "h1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>",
    "h1:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
]


def _config(tmp: Path, prefix: str) -> Path:
    path = tmp / "railtrace.toml"
    path.write_text(
        f"""
[kafka]
bootstrap_servers = "{BOOTSTRAP}"
topic_prefix = "{prefix}"

[collect]
spool_dir = "{tmp / "spool"}"

[collect.metrics_listen]
logs = "127.0.0.1:0"

[collect.logs]
paths = ["{tmp / "jobs"}/{{job_id}}/*.log"]
state_file = "{tmp / "offsets.json"}"
idle_flush_ms = 50
"""
    )
    return path


def test_the_collect_section_of_a_settings_file_is_read_and_checked(tmp_path: Path) -> None:
    settings = load_settings(_config(tmp_path, "x"))
    assert settings.collect.logs.paths == [f"{tmp_path / 'jobs'}/{{job_id}}/*.log"]
    assert settings.collect.spool_dir == tmp_path / "spool"
    bad = tmp_path / "bad.toml"
    bad.write_text("[collect.logs]\npath = ['/x']\n")  # a typo: `path` for `paths`
    done = subprocess.run(
        [RAILTRACE, "--config", str(bad), "collect", "logs"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "path" in done.stderr


def test_collect_logs_follows_a_job_log_onto_the_raw_topic_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    require_broker()
    prefix = f"c{uuid.uuid4().hex[:8]}"
    config = _config(tmp_path, prefix)
    log_file = tmp_path / "jobs" / "4242" / "rank0.log"
    log_file.parent.mkdir(parents=True)
    log_file.write_text(LINES[0] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    proc = subprocess.Popen(
        [RAILTRACE, "--config", str(config), "collect", "logs"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        # Append only once the first line is on the topic: the collector is then following
        # the file, and the rest must reach the topic by being followed, not read at start.
        deadline = time.monotonic() + 60
        while not asyncio.run(read_topic(f"{prefix}.raw.logs.v1")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.poll()
            time.sleep(0.2)
        with log_file.open("a") as f:
            f.write("\n".join(LINES[1:]) + "\n")
        deadline = time.monotonic() + 60
        lines: list[str] = []
        while time.monotonic() < deadline and len(lines) < len(LINES):
            got = asyncio.run(read_topic(f"{prefix}.raw.logs.v1"))
            lines = [line for key, value in got for line in wire.decode_log_batch(value).lines]
            time.sleep(0.5)
        assert lines == LINES, (proc.poll(), lines)
        assert {key for key, _ in got} == {b"4242"}
        batch = wire.decode_log_batch(got[0][1])
        assert (batch.job_id, batch.source, batch.first_line_no) == (
            "4242",
            f"logs/4242/{socket.gethostname()}:{log_file}",
            1,
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out.decode(errors="replace")


def test_the_example_collector_settings_in_deploy_load() -> None:
    example = Path(__file__).resolve().parents[1] / "deploy" / "collectors" / "railtrace.toml"
    settings = load_settings(example)
    assert [t.name for t in settings.collect.gnmi] == ["leaf-su01-r0"]
    assert [t.name for t in settings.collect.snmp.targets] == ["spine-01"]
    assert settings.collect.logs.paths == ["/var/log/jobs/{job_id}/*.log"]
