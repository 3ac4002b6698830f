"""Running the `railtrace` CLI as a user would, without their settings: in the test process
(CliRunner), or as a separate process where a second process is the point (`serve`)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from railtrace.cli import app

#: Wide enough that rich tables and help text do not wrap what tests look for.
COLUMNS = "250"


def clean_env() -> dict[str, str | None]:
    """The caller's RAILTRACE_* settings removed (None unsets in CliRunner), output wide."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("RAILTRACE_")}
    env["COLUMNS"] = COLUMNS
    return env


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in this process; the `railtrace` logger it configures is put back after."""
    logger = logging.getLogger("railtrace")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    try:
        return CliRunner().invoke(app, [str(a) for a in args], env={**clean_env(), **(env or {})})
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved


# --- as separate processes ------------------------------------------------------------------

SERVE_START_S = 30.0
SERVE_STOP_S = 15.0
SUBPROCESS_S = 120.0


def railtrace_command() -> list[str]:
    """The installed console script next to this interpreter, else the same entry point."""
    script = Path(sys.executable).parent / "railtrace"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from railtrace.cli import main; main()"]


def subprocess_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env["COLUMNS"] = COLUMNS
    return env


def run_process(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a separate process."""
    return subprocess.run(
        [*railtrace_command(), *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_S,
        env=subprocess_env(),
        cwd=cwd,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def get_json(url: str, token: str | None = None, timeout: float = 10) -> Any:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        return json.loads(resp.read())


@dataclass(frozen=True)
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    data: Path
    log: Path


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGINT) -> None:
    """Ask the server to stop (SIGINT, like Ctrl-C); kill it if it does not in time."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=SERVE_STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def serving(data: Path, log_dir: Path, *args: object) -> Iterator[Server]:
    """`railtrace serve` on `data` (with `args`), once /healthz answers (bounded wait); stopped
    on exit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = log_dir / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*railtrace_command(), "serve", "--data", str(data), "--port", str(port)]
            + [str(a) for a in args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=subprocess_env(),
            cwd=log_dir,
        )
    try:
        deadline = time.monotonic() + SERVE_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"serve exited with {proc.returncode}:\n{log.read_text()}")
            with suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                if get_json(url + "/healthz") == {"status": "ok"}:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"serve did not answer within {SERVE_START_S} s:\n{log.read_text()}")
            time.sleep(0.1)
        yield Server(proc, url, data, log)
    finally:
        stop(proc)
