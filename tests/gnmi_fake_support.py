"""openconfig's reference gNMI target (`fake_server`) and client (`gnmi_cli`), v0.14.1, for the
interop tests: railtrace's collector and openconfig's own client subscribed side by side.

Both are built by `benchmarks/install-gnmic.sh` (which `make system-deps` runs) from the Go
module proxy into benchmarks/.bin (or $RAILTRACE_BENCH_BIN). The fake serves TLS only (its
`--server_crt`/`--server_key` are required), does not implement Capabilities, names paths only
in the deprecated `Path.element`, and plays the values of its text-protobuf config
(github.com/openconfig/gnmi testing/fake/proto/fake.proto: `values` with a path, a timestamp
and its step, a repeat count and a value or its generator) to every Subscribe stream, each from
the start, then a sync_response, then ends the stream (without `disable_eof`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gates
from gnmi_server import Certs

VERSION = "v0.14.1"
BIN = Path(os.environ.get("RAILTRACE_BENCH_BIN") or Path(__file__).parents[1] / "benchmarks/.bin")
FAKE_SERVER = BIN / f"fake_server-{VERSION}"
GNMI_CLI = BIN / f"gnmi_cli-{VERSION}"
_LISTENING = re.compile(r"Starting RPC server on address: \S+:(\d+)")


def require_tools() -> None:
    """Gate: both Go programs built (skip locally, fail in CI when they are not)."""
    gates.require(
        "gnmi_fake",
        lambda: all(os.access(p, os.X_OK) for p in (FAKE_SERVER, GNMI_CLI)),
        f"openconfig's fake_server and gnmi_cli {VERSION} in {BIN} (make system-deps builds "
        "them: benchmarks/install-gnmic.sh fake_server, gnmi_cli)",
    )


@dataclass(frozen=True)
class FakeValue:
    """One `values` entry of the fake's config: a leaf's element path, its first timestamp and
    step (in whatever unit the test wants the target to stamp in; None leaves it unstamped),
    how many updates it sends, and its value as the text proto of the `value` oneof."""

    path: tuple[str, ...]
    value: str
    repeat: int
    seed: int
    first_stamp: int | None
    step: int = 0

    def text(self) -> str:
        lines = [f'  path: "{element}"' for element in self.path]
        lines += [f"  repeat: {self.repeat}", f"  seed: {self.seed}"]
        if self.first_stamp is not None:
            lines.append(
                f"  timestamp: < timestamp: {self.first_stamp} "
                f"delta_min: {self.step} delta_max: {self.step} >"
            )
        lines.append(f"  {self.value}")
        return "values: <\n" + "\n".join(lines) + "\n>\n"


def write_config(path: Path, target: str, values: list[FakeValue]) -> Path:
    path.write_text(
        f'target: "{target}"\nclient_type: GRPC_GNMI\n' + "".join(v.text() for v in values)
    )
    return path


@contextlib.contextmanager
def fake_server(config: Path, certs: Certs, log: Path) -> Iterator[int]:
    """Run the fake with `config` on a free port (TLS with the test PKI's server certificate,
    no client certificate asked); yields the port, stops it after."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [
                str(FAKE_SERVER),
                *("--config", str(config), "--text", "--port", "0"),
                *("--server_crt", str(certs.server_cert), "--server_key", str(certs.server_key)),
                *("--allow_no_client_auth", "--logtostderr"),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while not (found := _LISTENING.search(log.read_text(errors="replace"))):
            assert proc.poll() is None, f"fake_server exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"fake_server never listened: {log.read_text()}"
            time.sleep(0.05)
        yield int(found.group(1))
    finally:
        proc.terminate()
        proc.wait(10)


def gnmi_cli_stream(port: int, ca: Path, timeout_s: float = 60) -> list[tuple[str, str, int]]:
    """Subscribe with openconfig's gnmi_cli (STREAM, every path, one line per update) until the
    target ends the stream: each update as (path, value, timestamp as sent)."""
    done = subprocess.run(
        [
            str(GNMI_CLI),
            *("-a", f"127.0.0.1:{port}", "-ca_crt", str(ca)),
            *("-q", "*", "-qt", "s", "-dt", "single", "-ts", "raw", "-logtostderr"),
        ],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    updates = []
    for line in done.stdout.splitlines():
        path, value, stamp = line.rsplit(", ", 2)
        updates.append((path, value, int(stamp)))
    return updates
