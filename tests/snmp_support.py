"""Real SNMP peers for the SNMP collector's tests: Debian's net-snmp `snmpd` and `snmptrap`.

Tests that need them skip when the binaries are absent, and fail in CI (CI set), where they
must be installed (`apt-get install -y snmpd snmp`). Each agent is a private `snmpd` on a free
loopback port with a generated configuration and its own persistent directory, so it never
touches the machine's /etc/snmp or /var/lib/snmp nor a system snmpd on port 161.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gates
import pytest

from railtrace.collectors.snmp import LldpNeighbour
from railtrace.streams.telemetry.lldp import snmp_neighbours

COMMUNITY = "railtrace-ro"
V3_USER = "railpoll"
V3_AUTH_KEY = "authpass-7c1f"
V3_PRIV_KEY = "privpass-9e2d"
#: The engine id `snmptrap -e` claims for v3 traps (hex, as net-snmp takes it).
TRAP_ENGINE_ID = "8000000001020304"


def binary(name: str) -> str:
    """The path of a net-snmp binary; skips (fails in CI) when it is not installed."""
    found = next(
        (str(Path(d) / name) for d in ("/usr/sbin", "/usr/bin") if (Path(d) / name).is_file()),
        shutil.which(name),
    )
    gates.require("snmp", found is not None, f"{name} (Debian: apt-get install -y snmpd snmp)")
    assert found is not None
    return found


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _quiet_env(tmp: Path) -> dict[str, str]:
    # No MIB files on Debian: don't let net-snmp look for them, nor write its state outside tmp.
    return {
        **os.environ,
        "MIBS": "",
        "MIBDIRS": str(tmp),
        "SNMP_PERSISTENT_DIR": str(tmp / "persist"),
        "SNMPCONFPATH": str(tmp),
    }


@dataclass
class Agent:
    """One running snmpd: where it listens and how to log in."""

    host: str
    port: int
    community: str
    user: str
    auth_key: str
    priv_key: str
    proc: subprocess.Popen[bytes]
    log: Path


def _answers(tmp: Path, port: int) -> bool:
    """One v2c GET of sysUpTime through net-snmp's own snmpget (independent of pysnmp)."""
    done = subprocess.run(  # noqa: PLW1510 - the return code is the answer
        [
            binary("snmpget"),
            "-v2c",
            "-c",
            COMMUNITY,
            "-t",
            "0.3",
            "-r",
            "0",
            "-On",
            f"udp:127.0.0.1:{port}",
            "1.3.6.1.2.1.1.3.0",
        ],
        env=_quiet_env(tmp),
        capture_output=True,
        timeout=10,
    )
    return done.returncode == 0


@contextlib.contextmanager
def running_snmpd(tmp: Path) -> Iterator[Agent]:
    """An snmpd answering v2c (COMMUNITY) and v3 authPriv SHA/AES (V3_USER) on 127.0.0.1."""
    snmpd = binary("snmpd")
    binary("snmpget")
    (tmp / "persist").mkdir(parents=True, exist_ok=True)
    conf = tmp / "snmpd.conf"
    conf.write_text(
        f"rocommunity {COMMUNITY} 127.0.0.1\n"
        f'createUser {V3_USER} SHA "{V3_AUTH_KEY}" AES "{V3_PRIV_KEY}"\n'
        f"rouser {V3_USER} priv\n"
        "sysName railtrace-test-agent\n"
    )
    port = free_udp_port()
    log = tmp / "snmpd.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [snmpd, "-f", "-Lo", "-C", "-c", str(conf), f"udp:127.0.0.1:{port}"],
            env=_quiet_env(tmp),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 15
        while not _answers(tmp, port):
            if proc.poll() is not None:
                pytest.fail(f"snmpd exited with {proc.returncode}: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"snmpd did not answer in 15 s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield Agent("127.0.0.1", port, COMMUNITY, V3_USER, V3_AUTH_KEY, V3_PRIV_KEY, proc, log)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


def snmptrap(tmp: Path, *args: str) -> None:
    """Run net-snmp's snmptrap with args (destination included); raises when it fails."""
    (tmp / "persist").mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [binary("snmptrap"), *args],
        env=_quiet_env(tmp),
        check=True,
        capture_output=True,
        timeout=10,
    )


def lo_ifindex() -> int:
    """The loopback interface's ifIndex, as the kernel (and so snmpd's IF-MIB) numbers it."""
    return socket.if_nametoindex("lo")


def neighbours_as_read(message: dict[str, Any]) -> list[LldpNeighbour]:
    """The LLDP neighbours of a poll message as the worker reads them
    (`streams.telemetry.lldp.snmp_neighbours`), one per local port and far end."""
    update = snmp_neighbours(message)
    if update is None:
        return []
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for leaf in update.leaves:
        rows.setdefault((leaf.interface, leaf.neighbour), {})[leaf.leaf] = leaf.value
    return [
        LldpNeighbour(
            local,
            leaves.get("system-name", ""),
            leaves.get("port-id", ""),
            leaves.get("port-description", ""),
        )
        for (local, _), leaves in rows.items()
    ]
