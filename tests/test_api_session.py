"""A browser session from a token: `POST /v1/session` sets a cookie that the API accepts as it
accepts the bearer token, for reads only, revoked with it, and never sent cross-site."""

from __future__ import annotations

from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from api_support import one_stalled_job
from fastapi.testclient import TestClient

from railtrace.api import create_app
from railtrace.api.auth import SESSION_COOKIE
from railtrace.api.tokens import Scope, TokenBook
from railtrace.store.chdb_store import ChdbStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChdbStore]:
    with one_stalled_job(tmp_path / "data") as store:
        yield store


@pytest.fixture
def book(tmp_path: Path) -> TokenBook:
    return TokenBook(tmp_path / "tokens.json")


def _session(client: TestClient, token: str) -> SimpleCookie:
    response = client.post("/v1/session", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 204, response.text
    cookie: SimpleCookie = SimpleCookie(response.headers["set-cookie"])
    return cookie


def test_a_session_cookie_is_httponly_strict_and_reads_the_api_without_a_header(
    store: ChdbStore, book: TokenBook
) -> None:
    token, _ = book.issue("browser", {Scope.READ})
    client = TestClient(create_app(store, book))
    morsel = _session(client, token)[SESSION_COOKIE]
    assert morsel["httponly"] and morsel["samesite"].lower() == "strict" and morsel["path"] == "/"
    assert not morsel["secure"] and not morsel["max-age"] and not morsel["expires"]
    assert client.get("/v1/jobs").status_code == 200
    assert TestClient(create_app(store, book)).get("/v1/jobs").status_code == 401


def test_the_session_cookie_is_secure_when_the_api_is_reached_over_https(
    store: ChdbStore, book: TokenBook
) -> None:
    token, _ = book.issue("browser", {Scope.READ})
    client = TestClient(create_app(store, book), base_url="https://railtrace.example")
    assert _session(client, token)[SESSION_COOKIE]["secure"]


def test_a_revoked_token_stops_its_session_at_once(store: ChdbStore, book: TokenBook) -> None:
    token, info = book.issue("browser", {Scope.READ})
    client = TestClient(create_app(store, book))
    _session(client, token)
    TokenBook(book.path).revoke(info.token_id)
    assert client.get("/v1/jobs").status_code == 401


def test_the_cookie_of_an_admin_token_cannot_revoke_a_token(
    store: ChdbStore, book: TokenBook
) -> None:
    """A forged cross-site request carries at most the cookie: it must not change anything."""
    admin, _ = book.issue("admin", {Scope.ADMIN})
    _, other = book.issue("victim", {Scope.READ})
    client = TestClient(create_app(store, book))
    _session(client, admin)
    assert client.get("/v1/tokens").status_code == 200
    assert client.delete(f"/v1/tokens/{other.token_id}").status_code == 401
    assert other.token_id in {t.token_id for t in book.tokens()}


def test_a_session_needs_a_live_bearer_token_and_ends_on_delete(
    store: ChdbStore, book: TokenBook
) -> None:
    client = TestClient(create_app(store, book))
    refused = client.post("/v1/session", headers={"Authorization": "Bearer rt_0_not-a-token"})
    assert refused.status_code == 401 and "set-cookie" not in refused.headers
    token, _ = book.issue("browser", {Scope.READ})
    _session(client, token)
    assert client.post("/v1/session").status_code == 401, "the cookie alone starts none"
    assert client.delete("/v1/session").status_code == 204
    assert client.get("/v1/jobs").status_code == 401
