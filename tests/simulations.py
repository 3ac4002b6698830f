"""Simulated incidents made once per test session, for the tests that only read them.

A 64-node capture takes seconds to write and its replay ten to thirty more (twice that on CI's
two busy cores), and the replay, streaming and API tests check different things on the same
incidents: each (nodes, fault, seed, NCCL level) is simulated once and replayed into a store
once. Nothing shared can be changed by a test: the ground truth and the replay's report are
handed out as copies, and the replayed store only as a copy of its directory, for the test to
open as its own. The capture itself is shared as a folder the replay only reads; a test that
alters its capture writes its own with `write_capture` or copies this one first.
"""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Any

from railtrace.replay import ReplayReport, open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore

#: A shorter watchdog than PyTorch's 10-minute default keeps captures small; attribution does
#: not depend on it (the watchdog only dates the stall).
WATCHDOG_S = 120


@functools.cache
def _root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="railtrace-simulations-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


@functools.cache
def _simulated(nodes: int, fault: Fault, seed: int, nccl_debug: str) -> tuple[Path, dict[str, Any]]:
    cap = _root() / f"{nodes}-{fault}-{seed}-{nccl_debug}" / "cap"
    truth = write_capture(cap, nodes, fault, seed, watchdog_s=WATCHDOG_S, nccl_debug=nccl_debug)
    return cap, truth


def capture(nodes: int, fault: Fault, seed: int, nccl_debug: str = "INFO") -> Path:
    """The capture's folder, `write_capture(..., watchdog_s=WATCHDOG_S)`: to read, never to
    change."""
    return _simulated(nodes, fault, seed, nccl_debug)[0]


def truth(nodes: int, fault: Fault, seed: int, nccl_debug: str = "INFO") -> dict[str, Any]:
    """The capture's ground truth, as `write_capture` returned it (a copy)."""
    return copy.deepcopy(_simulated(nodes, fault, seed, nccl_debug)[1])


@functools.cache
def _stored(nodes: int, fault: Fault, seed: int, nccl_debug: str) -> tuple[Path, ReplayReport]:
    cap = capture(nodes, fault, seed, nccl_debug)
    data = cap.with_name("data")
    store = ChdbStore(data)
    try:
        store.migrate()
        report = replay(open_capture(cap), store)
    finally:
        store.close()
    return data, report


def report(nodes: int, fault: Fault, seed: int, nccl_debug: str = "INFO") -> ReplayReport:
    """The report of the capture's replay into an embedded store (a copy): what the embedded
    replay decides (the sink changes what is kept, never what is decided), and what it
    stored. Always the stored replay, so that whichever test asks first, there is one."""
    return copy.deepcopy(_stored(nodes, fault, seed, nccl_debug)[1])


def stored(dest: Path, nodes: int, fault: Fault, seed: int, nccl_debug: str = "INFO") -> Path:
    """A copy, at `dest`, of the closed store the capture was replayed into: the test's own
    to open (and write). chDB's tables are relative symlinks into its data folder, copied as
    links."""
    shutil.copytree(_stored(nodes, fault, seed, nccl_debug)[0], dest, symlinks=True)
    return dest
