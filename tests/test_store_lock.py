"""One process holds a chDB data directory; others get a clear error and the owner's address."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from railtrace.store import StoreLockedError, read_owner, write_owner
from railtrace.store.chdb_store import ChdbStore
from railtrace.store.owner import Owner, owner_path

#: Run in a second process: try to open the directory, report what happened as JSON.
_SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from railtrace.store import StoreLockedError
    from railtrace.store.chdb_store import ChdbStore

    try:
        store = ChdbStore(Path(sys.argv[1]))
    except StoreLockedError as exc:
        owner = exc.owner
        print(json.dumps({"error": str(exc), "pid": owner and owner.pid,
                          "api_url": owner and owner.api_url}))
    else:
        store.close()
        print(json.dumps({"error": None}))
    """
)


def _open_in_second_process(data_dir: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _SECOND_PROCESS, str(data_dir)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_second_process_is_told_who_holds_the_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = ChdbStore(data_dir)
    try:
        write_owner(store.data_dir, api_url="http://127.0.0.1:8000")
        result = _open_in_second_process(data_dir)
    finally:
        store.close()
    assert result["pid"] == os.getpid()
    assert result["api_url"] == "http://127.0.0.1:8000"
    error = str(result["error"])
    assert str(data_dir.resolve()) in error
    assert "read through its API at http://127.0.0.1:8000" in error


def test_directory_is_free_for_another_process_once_closed(tmp_path: Path) -> None:
    ChdbStore(tmp_path / "data").close()
    assert _open_in_second_process(tmp_path / "data") == {"error": None}


def test_owner_file_names_this_process_while_open_and_is_removed_on_close(
    tmp_path: Path,
) -> None:
    store = ChdbStore(tmp_path / "data")
    assert read_owner(store.data_dir) == Owner(pid=os.getpid(), api_url=None)
    store.close()
    store.close()  # closing twice is harmless
    assert not owner_path(store.data_dir).exists()


def test_owner_file_of_a_dead_process_is_ignored(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    owner_path(tmp_path).write_text(json.dumps({"pid": int(dead.stdout), "api_url": "http://x"}))
    assert read_owner(tmp_path) is None


@pytest.mark.parametrize("content", ["", "not json", "{}", '{"pid": "abc"}'])
def test_unreadable_owner_file_means_no_owner(tmp_path: Path, content: str) -> None:
    owner_path(tmp_path).write_text(content)
    assert read_owner(tmp_path) is None


def test_lock_error_without_owner_file_still_names_the_directory(tmp_path: Path) -> None:
    error = StoreLockedError(tmp_path, None)
    assert str(tmp_path) in str(error)
    assert "stop that process" in str(error)
