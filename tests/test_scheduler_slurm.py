"""Against real Slurm daemons (Debian's slurm-wlm: munged, slurmctld and four slurmd started by
deploy/slurm/slurm.sh): a real sbatch job is placed from what scontrol and squeue print about
it and from the env dump in its own log, and a capture made of them replays with its hosts."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_support import NODES, Slurm, cluster, two_rail_cables

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.streams.logs import parse_lines
from railtrace.streams.records import JobPlacement
from railtrace.streams.scheduler import read_placements


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    with cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


JOB_SCRIPT = """#!/bin/bash
# What a training job's batch script leaves in its log: its environment, then the trainer.
env | grep -E '^SLURM_(JOB_ID|JOB_NODELIST|NNODES)='
for i in 10 20 30; do
  echo " [$(date -u '+%Y-%m-%d %H:%M:%S')] iteration       $i/   10000 |" \
    "consumed samples: $((i * 512)) | elapsed time per iteration (ms): 1234.5 |"
  sleep 1
done
# Until the test has read it running (a loaded machine may take seconds to ask).
while [ ! -e release ]; do sleep 0.2; done
"""


def _job(slurm: Slurm, tmp_path: Path, held: bool = False) -> tuple[str, Path]:
    """A job of JOB_SCRIPT; `held`: it ends only once the test touches `release`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "job.sh").write_text(JOB_SCRIPT)
    if not held:
        (tmp_path / "release").touch()
    job_id = slurm.submit(tmp_path / "job.sh", 2, tmp_path)
    return job_id, tmp_path / f"{job_id}.out"


def test_a_real_job_is_placed_alike_from_scontrol_squeue_and_its_env_dump(
    slurm: Slurm, tmp_path: Path
) -> None:
    job_id, log = _job(slurm, tmp_path, held=True)
    slurm.until(job_id, {"RUNNING"})
    shown = slurm.run("scontrol", "show", "job", "-d", job_id)
    listed = slurm.run("squeue", "--json", "-j", job_id)
    node_list = next(w[9:] for w in shown.split() if w.startswith("NodeList="))
    hosts = slurm.run("scontrol", "show", "hostnames", node_list).split()  # Slurm's expansion
    assert len(hosts) == 2 and set(hosts) <= set(NODES)
    for source, data in (("scontrol", shown), ("squeue", listed)):
        got = read_placements(source, data.encode())
        assert not got.dead_letters, got.dead_letters
        (placed,) = got.placements
        assert placed.job_id == job_id and placed.state == "RUNNING"
        assert [(h.name, h.gpus) for h in placed.hosts] == [(h, tuple(range(8))) for h in hosts]
        assert placed.start_ns and abs(placed.start_ns - time.time_ns()) < 120 * 10**9
    (tmp_path / "release").touch()
    slurm.until(job_id, {"COMPLETED"})
    (ended,) = read_placements(
        "s", slurm.run("scontrol", "show", "job", "-d", job_id).encode()
    ).placements
    assert ended.state == "COMPLETED" and ended.end_ns is not None
    assert ended.end_ns >= ended.start_ns + 2 * 10**9  # the script ran three steps of a second
    facts, _ = parse_lines(log.read_bytes().splitlines(), job_id=job_id, source="log")
    (env_dump,) = [f for f in facts if isinstance(f, JobPlacement)]
    assert [h.name for h in env_dump.hosts] == hosts


def test_a_capture_of_a_real_job_at_nccl_warn_replays_with_its_hosts(
    slurm: Slurm, tmp_path: Path
) -> None:
    job_id, log = _job(slurm, tmp_path / "run")
    slurm.until(job_id, {"COMPLETED"})
    cap = tmp_path / "cap"
    (cap / "logs" / job_id).mkdir(parents=True)
    (cap / "scheduler").mkdir()
    two_rail_cables(cap / "cables.csv", NODES)
    shutil.copy(log, cap / "logs" / job_id / "rank0.log")
    (cap / "scheduler" / "job.txt").write_text(slurm.run("scontrol", "show", "job", "-d", job_id))
    report = replay(open_capture(cap), DiscardSink())
    assert report.placements == 1 and sum(report.dead_letters.values()) == 0
    (verdict,) = report.verdicts
    assert verdict.job_id == job_id and verdict.hosts == 2
