"""Nobody in without a token: what railtrace stores on disk is readable by its owner alone."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from railtrace.api.tokens import Scope, TokenBook, TokenFileError
from railtrace.collectors.emit import Outgoing
from railtrace.collectors.hosts.atomicfile import write_atomic
from railtrace.collectors.spool import Spool
from railtrace.private import private_dir
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore

RAILTRACE = str(Path(sys.executable).parent / "railtrace")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _open_to_others(root: Path) -> list[str]:
    """Every entry under `root` (itself included) that its group or others may read."""
    found = [root, *root.rglob("*")]
    return sorted(f"{p} {_mode(p):04o}" for p in found if _mode(p) & 0o077)


@pytest.mark.chdb
def test_a_new_store_directory_is_0700_and_an_open_one_is_tightened(tmp_path: Path) -> None:
    ChdbStore(tmp_path / "new").close()
    assert _mode(tmp_path / "new") == 0o700
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    old.chmod(0o755)
    ChdbStore(old).close()
    assert _mode(old) == 0o700


def test_a_shared_directory_is_never_taken_as_a_data_directory(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(PermissionError, match="shared directory"):
        private_dir(shared)
    assert _mode(shared) == 0o1777


def test_a_replay_leaves_nothing_in_its_store_that_others_can_read(tmp_path: Path) -> None:
    """The real process, with its umask: chDB's own parts included."""
    write_capture(tmp_path / "cap", 64, Fault.LINK_DOWN, 3, watchdog_s=120)
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    done = subprocess.run(
        [RAILTRACE, "replay", str(tmp_path / "cap"), "--data", str(data)],
        capture_output=True,
        text=True,
        env={**env, "RAILTRACE_API__TOKENS_FILE": str(tmp_path / "tokens.json")},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _open_to_others(data) == []


def test_a_spool_and_a_state_file_are_private(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", max_bytes=1 << 20)
    spool.append(Outgoing(stream="logs", key=b"k", value=b"v"))
    spool.close()
    write_atomic(tmp_path / "state" / "offsets.json", b"{}")
    assert _open_to_others(tmp_path / "spool") == []
    assert _mode(tmp_path / "state" / "offsets.json") == 0o600
    assert _mode(tmp_path / "state") == 0o700


def test_a_tokens_file_others_can_read_is_refused_saying_how_to_fix_it(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    book = TokenBook(path)
    token, _ = book.issue("alice", {Scope.READ})
    assert _mode(path) == 0o600 and book.check(token) is not None
    path.chmod(0o644)
    with pytest.raises(TokenFileError, match=f"chmod 600 {path}"):
        TokenBook(path).check(token)
    with pytest.raises(TokenFileError, match="mode 0644"):
        book.check(token)  # a running API notices too, and fails closed
    path.chmod(0o600)
    assert book.check(token) is not None


def test_serve_will_not_start_on_a_tokens_file_others_can_read(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    TokenBook(path).issue("alice", {Scope.READ})
    path.chmod(0o640)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    done = subprocess.run(
        [RAILTRACE, "serve", "--data", str(tmp_path / "data"), "--port", "0"],
        capture_output=True,
        text=True,
        env={**env, "RAILTRACE_API__TOKENS_FILE": str(path), "COLUMNS": "250"},
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert "mode 0640" in said and f"chmod 600 {path}" in said, said
    assert "Traceback" not in done.stderr
