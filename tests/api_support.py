"""An in-process API client that holds a token, as every caller of the real API must."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from railtrace.api import create_app
from railtrace.api.tokens import Scope, TokenBook
from railtrace.store import Store


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
