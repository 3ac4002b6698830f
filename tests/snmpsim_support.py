"""snmpsim serving real switch recordings (snmpsim-data), and a reader of those recordings.

`tests/snmpsim/setup.sh` (run as root; `make system-deps` does) installs snmpsim in a venv of
Debian's python3, creates its user and decompresses the recordings into
RAILTRACE_SNMPSIM_DIR (/var/cache/railtrace/snmpsim). Tests that need it skip when that was not
done, and fail in CI (CI set), where it must have been. The simulator runs as the unprivileged
user `railtrace-snmpsim` (as the developer when not root) on a free loopback port, and serves
each recording under the community of its file name (`cisco-n5000.snmprec` -> `cisco-n5000`).

`read_snmprec` parses a recording (`OID|TAG|VALUE` lines) so tests derive what a poll must
return from the very file the simulator serves.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import gates
import pytest
from snmp_support import binary, free_udp_port

SNMPSIM_DIR = Path(os.environ.get("RAILTRACE_SNMPSIM_DIR", "/var/cache/railtrace/snmpsim"))
SNMPSIM_USER = "railtrace-snmpsim"
SETUP = "sudo bash tests/snmpsim/setup.sh"

RecordValue = int | str | bytes


@dataclass
class Simulator:
    """One running snmpsim-command-responder: where it listens and what it serves."""

    host: str
    port: int
    data_dir: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def community(self, recording: str) -> str:
        """snmpsim's v2c community of a recording: its path in the data dir, less .snmprec."""
        return recording

    def endpoint(self, recording: str) -> tuple[str, int, str]:
        """(host, port, community) to poll one recording at."""
        return self.host, self.port, self.community(recording)

    def recording(self, name: str) -> Path:
        return self.data_dir / f"{name}.snmprec"


def _responder(recordings: tuple[str, ...]) -> Path:
    responder = SNMPSIM_DIR / "venv" / "bin" / "snmpsim-command-responder"
    installed = (SNMPSIM_DIR / ".installed").is_file() and os.access(responder, os.X_OK)
    how = f"set it up with `{SETUP}` (make system-deps runs it)"
    gates.require("snmpsim", installed, f"snmpsim in {SNMPSIM_DIR}; {how}")
    data = SNMPSIM_DIR / "data"
    missing = [n for n in recordings if not (data / f"{n}.snmprec").is_file()]
    gates.require("snmpsim", not missing, f"the recordings {missing} in {data}; {how}")
    return responder


def _answers(port: int, community: str, env: Mapping[str, str]) -> bool:
    """One v2c GETNEXT into the system group through net-snmp's snmpgetnext (not pysnmp)."""
    done = subprocess.run(  # noqa: PLW1510 - the return code is the answer
        [
            binary("snmpgetnext"),
            "-v2c",
            "-c",
            community,
            "-t",
            "0.5",
            "-r",
            "0",
            "-On",
            f"udp:127.0.0.1:{port}",
            "1.3.6.1.2.1.1",
        ],
        env=dict(env),
        capture_output=True,
        timeout=10,
    )
    return done.returncode == 0


@contextlib.contextmanager
def running_snmpsim(tmp: Path, recordings: tuple[str, ...]) -> Iterator[Simulator]:
    """snmpsim serving every recording of the data dir on 127.0.0.1; waits until `recordings`
    answer (the first start builds snmpsim's record indices: seconds)."""
    responder = _responder(recordings)
    data_dir = SNMPSIM_DIR / "data"
    as_root = os.geteuid() == 0
    if as_root:  # snmpsim refuses to serve as root: run it as setup.sh's user
        # Its record indices are built once, by the simulator, in setup.sh's index dir.
        cache_dir = SNMPSIM_DIR / "index"
    else:  # a developer's own run: the simulator is the developer, with indices of its own
        cache_dir = tmp / "index"
        cache_dir.mkdir(exist_ok=True)
    # No MIB files on Debian: keep net-snmp from looking for them or writing state outside tmp.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cache_dir),
        "MIBS": "",
        "MIBDIRS": str(tmp),
        "SNMP_PERSISTENT_DIR": str(tmp / "persist"),
        "SNMPCONFPATH": str(tmp),
    }
    port = free_udp_port()
    log = tmp / "snmpsim.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(responder),
                f"--data-dir={data_dir}",
                f"--cache-dir={cache_dir}",
                f"--agent-udpv4-endpoint=127.0.0.1:{port}",
                "--log-level=error",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=tempfile.gettempdir(),
            user=SNMPSIM_USER if as_root else None,
            group=SNMPSIM_USER if as_root else None,
            extra_groups=[] if as_root else None,
        )
    try:
        deadline = time.monotonic() + 120
        for name in recordings:
            while not _answers(port, name, env):
                if proc.poll() is not None:
                    pytest.fail(f"snmpsim exited with {proc.returncode}: {_tail(log)}")
                if time.monotonic() > deadline:
                    pytest.fail(f"snmpsim did not answer {name} in 120 s: {_tail(log)}")
                time.sleep(0.2)
        yield Simulator("127.0.0.1", port, data_dir, proc, log)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


# --- recordings ---------------------------------------------------------------------------

#: snmprec type tags (ASN.1/SNMP tag numbers) whose values are integers.
_INTEGER_TAGS = {"2", "65", "66", "67", "70"}  # Integer, Counter32, Gauge32, TimeTicks, Counter64


def _value(tag: str, text: str) -> RecordValue | None:
    """A recorded value as the agent sends it: int, dotted OID/IpAddress text, or octets."""
    if ":" in tag:  # a variation module (e.g. 67:numeric): computed at run time
        return None
    hexed = tag.endswith("x")
    base = tag.removesuffix("x")
    raw = bytes.fromhex(text) if hexed else text.encode("latin-1")
    if base in _INTEGER_TAGS:
        return int(raw.decode())
    if base == "6":  # OBJECT IDENTIFIER
        return raw.decode()
    if base == "64":  # IpAddress: dotted text, or 4 octets when hex
        return ".".join(str(b) for b in raw) if hexed else raw.decode()
    return raw  # OCTET STRING, Opaque


def read_snmprec(path: Path) -> dict[str, RecordValue | None]:
    """OID -> value of every record in an .snmprec file (comment lines skipped)."""
    records: dict[str, RecordValue | None] = {}
    with path.open(encoding="latin-1") as lines:
        for raw_line in lines:
            line = raw_line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            oid, tag, text = line.split("|", 2)
            records[oid] = _value(tag, text)
    return records


def column(records: Mapping[str, RecordValue | None], oid: str) -> dict[str, RecordValue]:
    """index -> value of every instance of one table column."""
    prefix = oid + "."
    return {
        o[len(prefix) :]: v for o, v in records.items() if o.startswith(prefix) and v is not None
    }
