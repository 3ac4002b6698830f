"""An in-process API client that holds a token, as every caller of the real API must, and
the replayed incidents the API tests serve."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from railtrace.api import create_app
from railtrace.api.tokens import Scope, TokenBook
from railtrace.replay import Capture, open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store import Store
from railtrace.store.chdb_store import ChdbStore

#: A shorter watchdog than PyTorch's default keeps the captures small.
WATCHDOG_S = 120


def token_book() -> TokenBook:
    return TokenBook(Path(tempfile.mkdtemp(prefix="railtrace-tokens-")) / "tokens.json")


def api_client(
    store: Store, scopes: set[Scope] | None = None, book: TokenBook | None = None, **kw: Any
) -> TestClient:
    """A TestClient over `create_app(store, ...)` sending a fresh token with `scopes`
    (default read) on every request."""
    book = book or token_book()
    token, _ = book.issue("tests", scopes or {Scope.READ})
    return TestClient(create_app(store, book, **kw), headers={"Authorization": f"Bearer {token}"})


@contextmanager
def replayed(
    base: Path, nodes: int, fault: Fault, seed: int
) -> Iterator[tuple[ChdbStore, Capture, dict[str, Any]]]:
    """A simulated incident replayed into a fresh embedded store under `base`: the store, the
    capture (its fabric) and the ground truth; the store is closed afterwards."""
    truth = write_capture(base / "cap", nodes, fault, seed, watchdog_s=WATCHDOG_S)
    capture = open_capture(base / "cap")
    store = ChdbStore(base / "data")
    try:
        store.migrate()
        replay(capture, store)
        yield store, capture, truth
    finally:
        store.close()


@contextmanager
def one_stalled_job(data: Path) -> Iterator[ChdbStore]:
    """An embedded store under `data` holding one stalled job, `slurm-1`: enough for the
    routes' access rules, which do not depend on what is stored."""
    from store_samples import verdict

    from railtrace.streams.records import JobState

    store = ChdbStore(data)
    try:
        store.migrate()
        store.write_verdicts([verdict("slurm-1", JobState.STALLED)])
        yield store
    finally:
        store.close()
