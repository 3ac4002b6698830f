"""`railtrace collect scheduler` against real Slurm daemons (tests/slurm_support.py): real
sbatch jobs are published once per change of their placement, in UTC whatever the host's
zone, alike from scontrol, squeue and slurmrestd; a job Slurm forgets between two polls is
published as ended between them; and, live, through a real broker and worker, a job whose
logs carry no NCCL INFO line (a transport WARN and PyTorch's watchdog timeout, as at
NCCL_DEBUG=WARN) is placed on its hosts, with the hosts that cables.csv lacks dead-lettered."""

from __future__ import annotations

import asyncio
import getpass
import itertools
import logging
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gates
import pytest
from kafka_support import RAILTRACE, require_broker, stack, stop, wait_drained
from slurm_support import NODES, Slurm, cluster, two_rail_cables

from railtrace.collectors.emit import Collected
from railtrace.collectors.scheduler.config import (
    API_VERSIONS,
    SchedulerCollectorConfig,
    SlurmrestdConfig,
)
from railtrace.collectors.scheduler.poller import SlurmPoller
from railtrace.collectors.scheduler.source import source_of
from railtrace.store.chdb_store import ChdbStore
from railtrace.streams import wire
from railtrace.streams.records import JobPlacement
from railtrace.streams.scheduler import ended_unseen, read_placements

# What a trainer at NCCL_DEBUG=WARN leaves in its log when a link fails under it: progress
# lines, then NCCL's transport WARN and, a timeout later, PyTorch's watchdog line; no NCCL
# INFO, no environment dump, so nothing in it says which hosts the job is on. The two error
# lines have the shapes of real ones (tests/fixtures/logs/real/SOURCES.md:
# nccl_1814_ibext_init_channels_completion.log, llamafactory_6269_watchdog_pt24.log), with
# this job's host, a 2 s timeout and glog's zoneless month-day stamp.
JOB_SCRIPT = """#!/bin/bash
for i in 10 20 30; do
  echo " [$(date -u '+%Y-%m-%d %H:%M:%S')] iteration       $i/   10000 |" \\
    "consumed samples: $((i * 512)) | elapsed time per iteration (ms): 1234.5 |"
  sleep 1
done
echo "$SLURMD_NODENAME:$$:$(($$ + 31)) [0] transport/net_ib.cc:1696 NCCL WARN NET/IB :" \\
  "Got completion from peer 10.0.0.2<44206> with status=12 opcode=129 len=65536" \\
  "vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2"
sleep 2
echo "[rank0]:[E$(date -u '+%m%d %H:%M:%S.%N') ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog" \\
  "caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1048576," \\
  "NumelOut=1048576, Timeout(ms)=2000) ran for 2004 milliseconds before timing out."
"""


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    with cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def _script(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "job.sh").write_text(JOB_SCRIPT)
    return tmp_path / "job.sh"


def _held(tmp_path: Path) -> Path:
    """A job script that runs until the test touches `release` in its directory: two ways of
    reading Slurm compared on a running job see it running, however slow the machine."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "held.sh").write_text("#!/bin/bash\nwhile [ ! -e release ]; do sleep 0.2; done\n")
    return tmp_path / "held.sh"


def _placements(messages: Collected, job_id: str) -> list[JobPlacement]:
    out = []
    for m in messages.on("scheduler"):
        if m.key == job_id.encode():
            o = wire.decode_scheduler_output(m.value)
            got = read_placements(o.source, o.text.encode(), o.zone(), o.first)
            assert not got.dead_letters, got.dead_letters
            out += got.placements
    return out


def test_a_real_job_is_published_at_each_change_and_in_utc_whatever_the_hosts_zone(
    slurm: Slurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scontrol prints local time without a zone: read in UTC, a time printed in IST would be
    # 5 h 30 off. The collector must make the tool print UTC.
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    sent = Collected()
    poller = SlurmPoller(
        SchedulerCollectorConfig(slurm_conf=slurm.conf, interval_s=0.2, cluster="lab"), sent
    )
    script = _script(tmp_path)
    first = slurm.submit(script, 2, tmp_path)
    waits = slurm.submit(script, 4, tmp_path)  # the whole cluster: waits for the first
    deadline = time.monotonic() + 120
    saw_waiting = False
    while time.monotonic() < deadline:
        assert asyncio.run(poller.poll_once()), poller.stats.last_error
        saw_waiting |= poller.stats.waiting > 0
        states = [p.state for p in _placements(sent, waits)]
        if states and states[-1] == "COMPLETED":
            break
        time.sleep(0.2)
    ran = _placements(sent, first)
    assert ran[0].state == "RUNNING" and ran[-1].state == "COMPLETED", [p.state for p in ran]
    # Published once per change, never again while nothing changed (RunTime moves on).
    assert all(a != b for a, b in itertools.pairwise(ran))
    assert poller.stats.unchanged > 0 and saw_waiting
    hosts = slurm.run("scontrol", "show", "hostnames", slurm_nodes(slurm, first)).split()
    # GPU indexes while it runs; scontrol prints none once the allocation is released.
    assert [(h.name, h.gpus) for h in ran[0].hosts] == [(h, tuple(range(8))) for h in hosts]
    assert [h.name for h in ran[-1].hosts] == hosts
    start, end = ran[-1].start_ns, ran[-1].end_ns
    assert start is not None and end is not None
    assert abs(start - time.time_ns()) < 120 * 10**9, "start read in the wrong zone"
    assert end - start >= 4 * 10**9  # three steps of a second, then a 2 s timeout
    assert [h.name for h in _placements(sent, waits)[-1].hosts] == NODES
    sources = {wire.decode_scheduler_output(m.value).source for m in sent.messages}
    assert sources == {"scontrol:lab"}


def slurm_nodes(slurm: Slurm, job_id: str) -> str:
    return slurm.run("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%N").strip()


def test_squeue_json_gives_the_same_placements_as_scontrol_and_partitions_filter_both(
    slurm: Slurm, tmp_path: Path
) -> None:
    job = slurm.submit(_held(tmp_path), 2, tmp_path)
    slurm.until(job, {"RUNNING"})
    by: dict[tuple[str, str], list[JobPlacement]] = {}
    for command in ("scontrol", "squeue"):
        for partition in ("gpu", "cpu"):  # slurm.sh's one partition is `gpu`
            sent = Collected()
            config = SchedulerCollectorConfig(
                command=command, slurm_conf=slurm.conf, partitions=(partition,)
            )
            poller = SlurmPoller(config, sent)
            assert asyncio.run(poller.poll_once()), poller.stats.last_error
            by[command, partition] = _placements(sent, job)
            assert (poller.stats.other_partitions > 0) == (partition == "cpu")
    (a,), (b,) = by["scontrol", "gpu"], by["squeue", "gpu"]
    assert (a.state, a.hosts, a.start_ns) == (b.state, b.hosts, b.start_ns)
    assert by["scontrol", "cpu"] == by["squeue", "cpu"] == []
    (tmp_path / "release").touch()
    slurm.until(job, {"COMPLETED"})


def _restd(
    slurm: Slurm, tmp_path: Path, via: str = "http", **given: Any
) -> SchedulerCollectorConfig:
    """The collector on the cluster's slurmrestd (`via` its TCP port or its unix socket),
    authenticated by a JWT that `scontrol token` made, in a file as it printed it."""
    gates.require("slurm", bool(slurm.restd), "slurmrestd (apt-get install slurmrestd)")
    user = getpass.getuser()
    tmp_path.mkdir(parents=True, exist_ok=True)
    token = tmp_path / "slurm.jwt"
    token.write_text(slurm.token(user) + "\n")
    restd = {"url": slurm.restd[via], "user": user, "token_file": token, **given}
    return SchedulerCollectorConfig(
        command="slurmrestd", cluster="lab", timeout_s=10, slurmrestd=SlurmrestdConfig(**restd)
    )


@pytest.mark.parametrize("via", ["http", "unix"])
def test_slurmrestd_gives_the_placements_scontrol_gives(
    slurm: Slurm, tmp_path: Path, via: str
) -> None:
    restd = _restd(slurm, tmp_path, via)
    job = slurm.submit(_held(tmp_path), 2, tmp_path)
    slurm.until(job, {"RUNNING"})
    by: dict[str, list[JobPlacement]] = {}
    for config in (SchedulerCollectorConfig(slurm_conf=slurm.conf, cluster="lab"), restd):
        sent = Collected()
        poller = SlurmPoller(config, sent)
        assert asyncio.run(poller.poll_once()), poller.stats.last_error
        by[config.command] = _placements(sent, job)
    (a,), (b,) = by["scontrol"], by["slurmrestd"]
    assert (b.state, b.hosts, b.start_ns) == (a.state, a.hosts, a.start_ns)
    assert [h.gpus for h in b.hosts] == [tuple(range(8))] * 2
    assert b.origin.source == "slurmrestd:lab"
    # `auto` took a version the server serves, and railtrace reads.
    assert poller.slurm.describe()["api_version"] in API_VERSIONS
    (tmp_path / "release").touch()
    slurm.until(job, {"COMPLETED"})


@pytest.mark.parametrize(
    ("given", "says"),
    [
        # No credentials: slurmrestd's rest_auth/jwt turns the request away itself.
        ({"user": None, "token_file": None}, "slurmrestd GET /openapi/v3: HTTP 401: Authent"),
        # A token slurmctld does not take: an error in the body of an HTTP 500.
        ({"token_file": None, "token": "not-a-jwt"}, "slurmrestd GET /slurm/v0.0.38/jobs: HTTP 5"),
        # A version this slurmrestd does not serve.
        ({"api_version": "v0.0.40"}, "slurmrestd GET /slurm/v0.0.40/jobs: HTTP 404: Unable"),
        # Nothing listens; something listens but never answers.
        ({"url": "refused"}, "slurmrestd http://127.0.0.1:"),
        ({"url": "silent"}, "timed out"),
    ],
    ids=["no-credentials", "bad-token", "version-not-served", "refused", "timeout"],
)
def test_slurmrestd_that_cannot_be_read_is_counted_and_reported_not_raised_nor_the_token_logged(
    slurm: Slurm,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    given: dict[str, Any],
    says: str,
) -> None:
    with socket.socket() as silent, socket.socket() as closed:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        urls = {
            name: f"http://127.0.0.1:{s.getsockname()[1]}"
            for name, s in (("silent", silent), ("refused", closed))
        }
        if "url" in given:
            given = {**given, "url": urls[given["url"]]}
        config = _restd(slurm, tmp_path, **given).model_copy(update={"timeout_s": 2.0})
        good = _restd(slurm, tmp_path / "good")
        sent = Collected()
        poller = SlurmPoller(config, sent)
        with caplog.at_level(logging.INFO, logger="railtrace.collectors.scheduler"):
            assert asyncio.run(poller.poll_once()) is False
    assert poller.stats.failures == 1 and poller.stats.down_since is not None
    assert (poller.stats.last_error or "").startswith(says), poller.stats.last_error
    assert not sent.messages
    said = caplog.text + (poller.stats.last_error or "")
    assert "scheduler poll failed" in caplog.text
    tokens = [f.read_text().strip().split("=", 1)[1] for f in tmp_path.rglob("slurm.jwt")]
    assert len(tokens) == 2 and not [t for t in [*tokens, "not-a-jwt"] if t in said]
    # The next good poll is up again.
    poller.slurm = source_of(good)
    assert asyncio.run(poller.poll_once()) and poller.stats.down_since is None


def test_a_job_slurm_forgets_between_two_polls_is_published_as_ended_between_them(
    slurm: Slurm, tmp_path: Path
) -> None:
    """slurmctld forgets an ended job after MinJobAge (300 s; 2 s here): a poll that comes
    later, whichever way it reads Slurm, must still publish that the job ended."""
    ways = [
        SchedulerCollectorConfig(command=c, slurm_conf=slurm.conf, cluster="lab")
        for c in ("scontrol", "squeue")
    ] + [_restd(slurm, tmp_path)]
    pollers = [SlurmPoller(config, Collected()) for config in ways]
    with slurm.min_job_age(2):
        job = slurm.submit(_held(tmp_path), 2, tmp_path)
        slurm.until(job, {"RUNNING"})
        for poller in pollers:
            assert asyncio.run(poller.poll_once()), poller.stats.last_error
        (tmp_path / "release").touch()
        slurm.gone(job)  # it ended, and slurmctld forgot it, between two polls
        for poller in pollers:
            assert asyncio.run(poller.poll_once()), poller.stats.last_error
            assert asyncio.run(poller.poll_once())  # and nothing more after
    for poller in pollers:
        sent = poller.emit
        assert isinstance(sent, Collected)
        seen, gone = [wire.decode_scheduler_output(m.value) for m in sent.on("scheduler")]
        assert seen.gone_ns is None and gone.gone_ns is not None and gone.polled_ns is not None
        assert gone.polled_ns == seen.polled_ns < gone.gone_ns  # the last poll that listed it
        (running,) = read_placements(seen.source, seen.text.encode()).placements
        (last,) = read_placements(gone.source, gone.text.encode()).placements
        ended = ended_unseen(last, gone.polled_ns, gone.gone_ns)
        assert (running.job_id, running.state) == (job, "RUNNING")
        assert (ended.state, ended.last_seen_ns, ended.end_ns) == (
            "ENDED",
            seen.polled_ns,
            gone.gone_ns,
        )
        assert (
            ended.hosts == running.hosts and [h.gpus for h in ended.hosts] == [tuple(range(8))] * 2
        )
        assert poller.stats.ended_unseen == 1 and poller.stats.lookup_failures == 0


@pytest.mark.parametrize(
    ("conf", "timeout_s", "says"),
    [
        # scontrol gives up at once on a configuration naming no controller ...
        ("ClusterName=lab\n", 30.0, "scontrol exited 1: scontrol: error: No SlurmctldHost"),
        # ... and retries a missing one for a minute: killed at the poll's timeout.
        (None, 1.0, "timed out"),
    ],
)
def test_slurm_that_cannot_be_read_is_counted_and_reported_not_raised(
    slurm: Slurm, tmp_path: Path, conf: str | None, timeout_s: float, says: str
) -> None:
    path = tmp_path / "slurm.conf"
    if conf is not None:
        path.write_text(conf)
    sent = Collected()
    poller = SlurmPoller(SchedulerCollectorConfig(slurm_conf=path, timeout_s=timeout_s), sent)
    began = time.monotonic()
    assert asyncio.run(poller.poll_once()) is False
    assert time.monotonic() - began < timeout_s + 5
    assert poller.stats.failures == 1 and poller.stats.down_since is not None
    assert (poller.stats.last_error or "").startswith(says), poller.stats.last_error
    assert not sent.messages
    # The next good poll is up again.
    poller.slurm = source_of(SchedulerCollectorConfig(slurm_conf=slurm.conf))
    assert asyncio.run(poller.poll_once()) and poller.stats.down_since is None


def test_live_a_job_at_nccl_warn_is_placed_from_slurm_and_uncabled_hosts_are_dead_letters(
    slurm: Slurm, tmp_path: Path
) -> None:
    """The collector's placement joined with what the job's own log says at NCCL_DEBUG=WARN:
    the stall (PyTorch's watchdog) and NCCL's transport error, on the job's two hosts."""
    require_broker()
    topology = tmp_path / "fabric"
    topology.mkdir()
    two_rail_cables(topology / "cables.csv", NODES[:3])  # gb-n004 is not in the plan
    runs = tmp_path / "runs"
    script = _script(runs)
    with stack(tmp_path, topology) as s:
        sched = s.collector_settings(
            f"""[collect.metrics_listen]
scheduler = "127.0.0.1:0"
logs = "127.0.0.1:0"

[collect.scheduler]
slurm_conf = "{slurm.conf}"
interval_s = 0.5
cluster = "lab"

[collect.logs]
paths = ["{runs}/{{job_id}}.out"]
node = "gb-n001"
state_file = "{tmp_path / "offsets.json"}"
"""
        )
        s.start("--config", str(sched), "collect", "scheduler", name="collect-scheduler")
        s.start("--config", str(sched), "collect", "logs", name="collect-logs")
        two = slurm.submit(script, 2, runs)
        four = slurm.submit(script, 4, runs)
        slurm.until(four, {"COMPLETED"}, timeout=180)
        deadline = time.monotonic() + 120
        verdict: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                verdict = s.get(f"/v1/jobs/{two}/verdict")
            except OSError:
                verdict = {}
            # Both lines read and the job placed: a stall, on the two hosts Slurm gave it.
            if verdict.get("hosts") == 2 and len(_evidence(verdict)) == 2:
                break
            time.sleep(0.5)
        assert verdict.get("hosts") == 2, f"{verdict}\n{s.logs()}"
        assert verdict["state"] == "stalled", verdict
        assert _evidence(verdict) == {"watchdog-timeout", "ib-completion"}, verdict
        time.sleep(2)  # the collector's last poll of the ended jobs
        wait_drained(s)
        for proc in s.procs:
            stop(proc)
    store = ChdbStore(s.data)
    try:
        placed = store.job_facts_of(two, kinds=["placement"])
        reasons = store.select(f"SELECT reason FROM {store._name('dead_letters')}").column(0)
    finally:
        store.close()
    # The job's latest placement, as the collector read it: ended, on its two hosts.
    assert [(p.state, len(p.hosts), p.origin.source) for p in placed] == [
        ("COMPLETED", 2, "scontrol:lab")
    ]
    assert any(
        f"job {four}: 1 of its 4 hosts are not in cables.csv (gb-n004)" in r
        for r in reasons.to_pylist()
    ), reasons


def _evidence(verdict: dict[str, Any]) -> set[str]:
    shown = verdict.get("evidence")
    return {e["kind"] for e in shown} if isinstance(shown, list) else set()


def test_the_role_refuses_to_start_without_slurms_tools_and_says_how_to_get_them(
    tmp_path: Path,
) -> None:
    settings = tmp_path / "collect.toml"
    settings.write_text(f'[collect]\nspool_dir = "{tmp_path / "spool"}"\n\n'
                        f'[collect.scheduler]\nbin_dir = "{tmp_path}"\n')  # fmt: skip
    done = subprocess.run(
        [RAILTRACE, "--config", str(settings), "collect", "scheduler"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert f"{tmp_path}/scontrol not found" in said and "apt-get install slurm-client" in said
