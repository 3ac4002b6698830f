"""Real Slurm daemons for a test module (Debian's slurm-wlm: munged, slurmctld and four slurmd
in multiple-slurmd mode, started by deploy/slurm/slurm.sh), on ports no other cluster on this
machine uses, so two suites (or a suite and a developer's cluster) never meet."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gates

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "slurm" / "slurm.sh"
NODES = [f"gb-n{i:03d}" for i in range(1, 5)]
#: slurmctld's port, then one for slurmd's default and one per node (slurm.sh).
PORTS_USED = 2 + len(NODES)


class Slurm:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.conf = home / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str) -> str:
        done = subprocess.run(
            args, env=self.env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def until(self, job_id: str, states: set[str], timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            state = self.run("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T").strip()
            if state in states:
                return state
            assert time.monotonic() < deadline, f"job {job_id} still {state!r}"
            time.sleep(0.2)

    def submit(self, script: Path, nodes: int, out_dir: Path) -> str:
        """sbatch `script` on `nodes` nodes with 8 GPUs each; its output in out_dir/<id>.out."""
        return self.run(
            "sbatch", "--parsable", "-N", str(nodes), "--gres=gpu:8",
            "-o", str(out_dir / "%j.out"), "--chdir", str(out_dir), str(script),
        ).strip()  # fmt: skip


def _free_base(rng: random.Random) -> int:
    """A base port with PORTS_USED free ports from it (checked by binding each)."""
    for _ in range(200):
        base = rng.randrange(20_000, 40_000)
        try:
            for port in range(base, base + PORTS_USED):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no free block of ports for a Slurm cluster")


@contextmanager
def cluster(home: Path) -> Iterator[Slurm]:
    gates.require(
        "slurm",
        all(shutil.which(t) for t in ("slurmctld", "slurmd", "munged", "sbatch")),
        "Slurm's daemons (Debian: apt-get install slurm-wlm)",
    )
    env = {
        **os.environ,
        "RAILTRACE_SLURM_HOME": str(home),
        "RAILTRACE_SLURM_PORT": str(_free_base(random.Random())),
    }
    started = subprocess.run(
        [str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield Slurm(home)
    finally:
        subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, timeout=60, check=False)


def two_rail_cables(path: Path, nodes: list[str]) -> None:
    """cables.csv: each node's two NICs on the rail-0 and rail-1 leaves, both leaves on one
    spine."""
    rows = ["side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name"]
    for i, node in enumerate(nodes, 1):
        for rail in (0, 1):
            rows.append(f"{node},dcim.interface,mlx5_{rail},leaf-r{rail},dcim.interface,swp{i}")
    for rail in (0, 1):
        rows.append(f"leaf-r{rail},dcim.interface,swp31,spine-1,dcim.interface,swp{rail + 1}")
    path.write_text("\n".join(rows) + "\n")
