"""How the collector benchmarks run and measure a collector: the 288-node design load, one
process pinned to a core with its own CPU time read from /proc, and the spool read from outside.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from railtrace.collectors.emit import Outgoing
from railtrace.collectors.spool import _read as read_record

HERE = Path(__file__).resolve().parent
RAILTRACE = str(Path(sys.executable).with_name("railtrace"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, str(HERE))

Proc = subprocess.Popen[bytes]

# -- the design load ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Design:
    nodes: int
    switches: int
    ports: int  # switch ports: both ends of every switch-switch link, and leaf host ports


def design(nodes: int) -> Design:
    from railtrace.topology import build_fabric, rail_optimized
    from railtrace.topology.attrs import Role

    fabric = build_fabric(rail_optimized(nodes).plan)
    ends = [
        end.device
        for ref in fabric.links.values()
        for end in (ref.a, ref.b)
        if fabric.role(end.device) != Role.HOST
    ]
    return Design(nodes, len(set(ends)), len(ends))


def headroom(unit: str, per_core: float, load: float, utilization: float) -> None:
    """Print one process's capacity against `load` and the processes a site needs."""
    if per_core <= 0:
        print("  no throughput measured: no headroom figure")
        return
    print(
        f"    one process, one core: {per_core:,.0f} {unit} = {per_core / load:.2f}x the load; "
        f"processes for the site: {math.ceil(load / per_core)} at 100% of a core each, "
        f"{math.ceil(load / (per_core * utilization))} at {utilization:.0%}"
    )


# -- processes ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads (from /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cores() -> tuple[int, int]:
    """The core for the collector and the core for the other side (the same on one core)."""
    mine = sorted(os.sched_getaffinity(0))
    return mine[0], mine[-1]


def pinned(cpu: int) -> Callable[[], None]:
    def pin() -> None:
        os.sched_setaffinity(0, {cpu})

    return pin


def start(
    stack: contextlib.ExitStack,
    command: list[str],
    out: Path,
    cpu: int | None = None,
    env: dict[str, str] | None = None,
    err: Path | None = None,
) -> Proc:
    """A process with stdout (and stderr unless `err`) to `out`, stopped when `stack` closes."""
    with out.open("wb") as sink, (err or out).open("ab") as errors:
        proc = subprocess.Popen(
            command,
            stdout=sink,
            stderr=errors if err else subprocess.STDOUT,
            preexec_fn=None if cpu is None else pinned(cpu),  # noqa: PLW1509 - no threads here
            env=env,
            start_new_session=True,
        )
    stack.callback(stop, proc)
    return proc


def stop(proc: Proc, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)


def label(proc: Proc) -> str:
    args = proc.args
    return str(args[0]) if isinstance(args, list) else str(args)


def wait_for(what: str, ready: Callable[[], bool], timeout_s: float, *procs: Proc) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        for p in procs:
            if p.poll() is not None:
                raise SystemExit(f"{what}: {label(p)} exited with {p.returncode}")
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not ready after {timeout_s:.0f} s")
        time.sleep(0.1)


def check_running(logs: tuple[Path, ...], *procs: Proc) -> None:
    for p in procs:
        if p.poll() is not None:
            text = "".join(tail(log) for log in logs)
            raise SystemExit(f"{label(p)} exited with {p.returncode}:\n{text}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_config(path: Path, bootstrap: str | None, role_section: str) -> Path:
    """A settings file for `railtrace --config`: Kafka, the spool, and the role's section.
    Without a bootstrap, an address where nothing listens: delivery backs off and spools."""
    bootstrap = bootstrap or f"127.0.0.1:{free_port()}"
    path.write_text(
        f'[kafka]\nbootstrap_servers = "{bootstrap}"\ntopic_prefix = "bench{os.getpid()}"\n\n'
        f'[collect]\nspool_dir = "{path.parent / "spool"}"\nspool_max_bytes = {8 << 30}\n\n'
        f"{role_section}"
    )
    return path


def collect(stack: contextlib.ExitStack, config: Path, role: str, cpu: int, *opts: str) -> Proc:
    return start(
        stack,
        [RAILTRACE, *opts, "--config", str(config), "collect", role],
        config.parent / "collector.log",
        cpu,
    )


def tail(path: Path, chars: int = 1500) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-chars:]
    return ""


# -- the spool, read from outside ---------------------------------------------------------------


def appended(folder: Path) -> int:
    """Records appended to a live spool so far (its next sequence number)."""
    segments = sorted(folder.glob("*.seg"))
    if not segments:
        return 0
    return _count(segments[-1].read_bytes(), int(segments[-1].stem))


def acknowledged(folder: Path) -> int:
    """Records the broker acknowledged (up to the spool's cursor), counted from the start."""
    for _ in range(5):
        try:
            segment, offset = (int(x) for x in (folder / "cursor").read_text().split())
            return _count((folder / f"{segment:020d}.seg").read_bytes()[:offset], segment)
        except (OSError, ValueError):
            time.sleep(0.05)  # the cursor moved on and its segment went: read again
    return 0


def _count(data: bytes, first: int) -> int:
    at, n = 0, first
    while (got := read_record(data, at)) is not None:
        seq, _, at = got
        n = seq + 1
    return n


def records(folder: Path) -> Iterator[tuple[int, Outgoing]]:
    """Every record left in a stopped collector's spool, in order."""
    for segment in sorted(folder.glob("*.seg")):
        data = segment.read_bytes()
        at = 0
        while (got := read_record(data, at)) is not None:
            seq, message, at = got
            yield seq, message
