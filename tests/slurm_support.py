"""Real Slurm daemons for a test module (Debian's slurm-wlm: munged, slurmctld and four slurmd
in multiple-slurmd mode, and slurmrestd when Debian's slurmrestd is installed, started by
deploy/slurm/slurm.sh), on ports no other cluster on this machine uses, so two suites (or a
suite and a developer's cluster) never meet: from RAILTRACE_SLURM_PORT when it is set (the
modules' clusters take it in turn, each stopped before the next starts), else a free block
picked at random. Each module's cluster lives in its own temporary directory."""

from __future__ import annotations

import os
import random
import re
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
#: slurmctld's port, then one for slurmd's default, one per node and slurmrestd's (slurm.sh).
PORTS_USED = 3 + len(NODES)


class Slurm:
    def __init__(self, home: Path, restd: dict[str, str] | None = None) -> None:
        self.home = home
        self.conf = home / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        #: slurmrestd's addresses (JWT authentication) by kind, `http` and `unix`; empty when
        #: slurmrestd is not installed.
        self.restd = restd or {}

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

    def gone(self, job_id: str, timeout: float = 60) -> None:
        """Wait until slurmctld no longer holds `job_id` (MinJobAge passed since it ended)."""
        deadline = time.monotonic() + timeout
        while True:
            done = subprocess.run(
                ["scontrol", "show", "job", job_id],
                env=self.env, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            if done.returncode != 0 and "Invalid job id specified" in done.stderr:
                return
            assert time.monotonic() < deadline, f"job {job_id} still held: {done.stdout[:200]}"
            time.sleep(0.5)

    @contextmanager
    def min_job_age(self, seconds: int) -> Iterator[None]:
        """slurmctld forgets an ended job after `seconds` (MinJobAge) while in the block."""
        before = self.conf.read_text()
        self.conf.write_text(re.sub(r"(?m)^MinJobAge=\d+$", f"MinJobAge={seconds}", before))
        self.run("scontrol", "reconfigure")
        try:
            yield
        finally:
            self.conf.write_text(before)
            self.run("scontrol", "reconfigure")

    def token(self, user: str) -> str:
        """A JWT for `user`, as `scontrol token` prints it (`SLURM_JWT=...`)."""
        return self.run("scontrol", "token", f"username={user}", "lifespan=600").strip()

    def submit(self, script: Path, nodes: int, out_dir: Path) -> str:
        """sbatch `script` on `nodes` nodes with 8 GPUs each; its output in out_dir/<id>.out."""
        return self.run(
            "sbatch", "--parsable", "-N", str(nodes), "--gres=gpu:8",
            "-o", str(out_dir / "%j.out"), "--chdir", str(out_dir), str(script),
        ).strip()  # fmt: skip


def _free(base: int) -> bool:
    """Whether the PORTS_USED ports from `base` are free (checked by binding each as the
    daemons do, SO_REUSEADDR: the last cluster's closed connections do not hold them)."""
    try:
        for port in range(base, base + PORTS_USED):
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True


def _base_port(rng: random.Random) -> int:
    """RAILTRACE_SLURM_PORT when set (its ports must be free: a cluster already running there
    is not the test's to use or stop), else a free block picked at random."""
    given = os.environ.get("RAILTRACE_SLURM_PORT")
    if given:
        base = int(given)
        assert _free(base), (
            f"RAILTRACE_SLURM_PORT={base}: ports {base}-{base + PORTS_USED - 1} are not all free "
            "(a Slurm cluster running there? deploy/slurm/slurm.sh stop with its settings)"
        )
        return base
    for _ in range(200):
        base = rng.randrange(20_000, 40_000)
        if _free(base):
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
        "RAILTRACE_SLURM_PORT": str(_base_port(random.Random())),
    }
    started = subprocess.run(
        [str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        said = subprocess.run(
            [str(SCRIPT), "env"], env=env, capture_output=True, text=True, timeout=60, check=True
        ).stdout
        restd = dict(re.findall(r"^SLURMRESTD_(URL|SOCKET)=(\S+)$", said, re.MULTILINE))
        yield Slurm(home, {k.replace("URL", "http").replace("SOCKET", "unix"): v
                           for k, v in restd.items()})  # fmt: skip
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
