"""An in-process API client that holds a token, as every caller of the real API must, and
the replayed incidents the API tests serve."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import simulations
from fastapi.testclient import TestClient

from railtrace.api import create_app
from railtrace.api.tokens import Scope, TokenBook
from railtrace.replay import Capture, open_capture
from railtrace.simulate import Fault
from railtrace.store import Store
from railtrace.store.chdb_store import ChdbStore


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
    """A simulated incident replayed into an embedded store of its own under `base` (the
    session's one replay of it, copied: tests.simulations), with its capture copied to
    `base`/cap: the store, the capture (its fabric) and the ground truth; the store is closed
    afterwards."""
    shutil.copytree(simulations.capture(nodes, fault, seed), base / "cap")
    capture = open_capture(base / "cap")
    store = ChdbStore(simulations.stored(base / "data", nodes, fault, seed))
    try:
        yield store, capture, simulations.truth(nodes, fault, seed)
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
