"""Bearer tokens, scopes, strict parameters and CORS: who may read the API, and what it takes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from api_support import api_client, one_stalled_job
from cli_support import invoke
from fastapi.testclient import TestClient

from railtrace.api import create_app
from railtrace.api.tokens import Scope, TokenBook, TokenFileError
from railtrace.store.chdb_store import ChdbStore

HEALTH = {"/healthz", "/readyz"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChdbStore]:
    with one_stalled_job(tmp_path / "data") as store:
        yield store


@pytest.fixture
def book(tmp_path: Path) -> TokenBook:
    return TokenBook(tmp_path / "tokens.json")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _concrete(path: str) -> str:
    """A route path with every {param} filled by a value its validation accepts."""
    return re.sub(r"\{[^}]+\}", "a0b1c2d3e4f5", path)


def test_every_route_but_health_refuses_a_request_without_a_token(
    store: ChdbStore, book: TokenBook
) -> None:
    app = create_app(store, book)
    client = TestClient(app)
    checked = []
    for path, operations in app.openapi()["paths"].items():
        if path in HEALTH:
            continue
        for method in operations:
            if (method, path) == ("delete", "/v1/session"):
                continue  # ends the caller's own browser session: nothing to protect
            response = client.request(method, _concrete(path))
            assert response.status_code == 401, (method, path, response.text)
            assert response.headers["WWW-Authenticate"] == "Bearer"
            checked.append(path)
    assert {"/v1/jobs", "/v1/jobs/{job_id}/verdict", "/metrics", "/v1/tokens"} <= set(checked)
    for path in HEALTH:
        assert client.get(path).status_code == 200


def test_a_missing_token_says_how_to_get_one(store: ChdbStore, book: TokenBook) -> None:
    response = TestClient(create_app(store, book)).get("/v1/jobs")
    assert "railtrace token create" in response.json()["detail"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer rt_000000000000_not-a-real-secret",
        "Bearer not-even-shaped-like-one",
        "Basic dXNlcjpwYXNz",
        "Bearer ",
    ],
)
def test_a_wrong_token_is_401(store: ChdbStore, book: TokenBook, header: str) -> None:
    book.issue("someone", {Scope.READ})
    response = TestClient(create_app(store, book)).get(
        "/v1/jobs", headers={"Authorization": header}
    )
    assert response.status_code == 401


def test_a_token_with_a_changed_secret_is_refused(store: ChdbStore, book: TokenBook) -> None:
    token, _ = book.issue("someone", {Scope.READ})
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    client = TestClient(create_app(store, book))
    assert client.get("/v1/jobs", headers=_bearer(token)).status_code == 200
    assert client.get("/v1/jobs", headers=_bearer(forged)).status_code == 401


def test_a_revoked_token_is_refused_at_once_without_a_restart(
    store: ChdbStore, book: TokenBook
) -> None:
    token, info = book.issue("laptop", {Scope.READ})
    client = TestClient(create_app(store, book))
    assert client.get("/v1/jobs", headers=_bearer(token)).status_code == 200
    # Another process (the CLI) revokes through its own view of the same file.
    TokenBook(book.path).revoke(info.token_id)
    assert client.get("/v1/jobs", headers=_bearer(token)).status_code == 401


def test_a_token_created_while_the_api_runs_works_at_once(
    store: ChdbStore, book: TokenBook
) -> None:
    client = TestClient(create_app(store, book))
    token, _ = TokenBook(book.path).issue("grafana", {Scope.READ})
    assert client.get("/v1/jobs", headers=_bearer(token)).status_code == 200


def test_an_expired_token_is_refused(book: TokenBook) -> None:
    past = datetime.now(UTC) - timedelta(days=2)
    token, _ = book.issue("old", {Scope.READ}, timedelta(days=1), now=past)
    fresh, _ = book.issue("new", {Scope.READ}, timedelta(days=1))
    assert book.check(token) is None
    assert book.check(fresh) is not None


def test_a_read_token_cannot_manage_tokens(store: ChdbStore, book: TokenBook) -> None:
    client = api_client(store, book=book)
    response = client.get("/v1/tokens")
    assert response.status_code == 403
    assert "admin" in response.json()["detail"]


def test_an_admin_lists_tokens_without_their_secrets_and_revokes_one(
    store: ChdbStore, book: TokenBook
) -> None:
    victim, info = book.issue("leaked", {Scope.READ})
    admin = api_client(store, {Scope.ADMIN}, book=book)
    listed = admin.get("/v1/tokens").json()["tokens"]
    assert {t["name"] for t in listed} == {"leaked", "tests"}
    assert victim not in json.dumps(listed)
    assert all(set(t) == {"id", "name", "scopes", "created_at", "expires_at"} for t in listed)
    assert admin.get("/v1/jobs").status_code == 200, "admin includes read"
    assert admin.delete(f"/v1/tokens/{info.token_id}").status_code == 204
    assert admin.delete(f"/v1/tokens/{info.token_id}").status_code == 404
    assert book.check(victim) is None


def test_the_file_keeps_only_digests_and_only_its_owner_may_read_it(book: TokenBook) -> None:
    token, info = book.issue("someone", {Scope.READ})
    text = book.path.read_text()
    assert token not in text
    assert token.split("_", 2)[2] not in text
    assert info.digest in text
    assert (book.path.stat().st_mode & 0o777) == 0o600


def test_an_unreadable_tokens_file_shuts_the_api_rather_than_opening_it(
    store: ChdbStore, book: TokenBook
) -> None:
    token, _ = book.issue("someone", {Scope.READ})
    client = TestClient(create_app(store, book))
    book.path.write_text("{ not json")
    response = client.get("/v1/jobs", headers=_bearer(token))
    assert response.status_code == 503
    assert "tokens file" in response.json()["detail"]
    with pytest.raises(TokenFileError, match="not a railtrace tokens file"):
        TokenBook(book.path).tokens()


def test_a_process_local_token_reads_but_cannot_administer(
    store: ChdbStore, book: TokenBook
) -> None:
    local = book.issue_local("cli")
    client = TestClient(create_app(store, book), headers=_bearer(local))
    assert client.get("/v1/jobs").status_code == 200
    assert client.get("/v1/tokens").status_code == 403
    assert local not in (book.path.read_text() if book.path.exists() else "")
    assert TokenBook(book.path).check(local) is None, "it lives only in its process"


@pytest.mark.parametrize(
    "url", ["/v1/jobs?stat=stalled", "/v1/jobs?limit=5&ofset=3", "/healthz?verbose=1"]
)
def test_an_unknown_query_parameter_is_422_naming_it(store: ChdbStore, url: str) -> None:
    response = api_client(store).get(url)
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"][0] == "query"
    assert problem["loc"][1] in url
    assert problem["type"] == "extra_forbidden"


def test_cors_is_closed_unless_an_origin_is_configured(store: ChdbStore, book: TokenBook) -> None:
    preflight = {
        "Origin": "https://grafana.example.net",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization",
    }
    closed = TestClient(create_app(store, book))
    answer = closed.options("/v1/jobs", headers=preflight)
    assert "access-control-allow-origin" not in answer.headers
    opened = TestClient(create_app(store, book, cors_origins=["https://grafana.example.net"]))
    answer = opened.options("/v1/jobs", headers=preflight)
    assert answer.headers["access-control-allow-origin"] == "https://grafana.example.net"
    other = opened.options("/v1/jobs", headers={**preflight, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_cli_creates_a_token_the_api_accepts_lists_it_and_revokes_it(
    store: ChdbStore, tmp_path: Path
) -> None:
    env = {"RAILTRACE_API__TOKENS_FILE": str(tmp_path / "t.json")}
    made = invoke("token", "create", "--name", "grafana", "--quiet", env=env)
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert re.fullmatch(r"rt_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", token)
    client = TestClient(create_app(store, TokenBook(tmp_path / "t.json")))
    assert client.get("/v1/jobs", headers=_bearer(token)).status_code == 200
    listed = invoke("token", "list", env=env)
    assert "grafana" in listed.stdout and token not in listed.stdout
    token_id = token.split("_")[1]
    assert invoke("token", "revoke", token_id, env=env).exit_code == 0
    assert client.get("/v1/jobs", headers=_bearer(token)).status_code == 401
    again = invoke("token", "revoke", token_id, env=env)
    assert again.exit_code == 2 and "no token" in again.output


def test_cli_refuses_a_token_without_a_name(tmp_path: Path) -> None:
    env = {"RAILTRACE_API__TOKENS_FILE": str(tmp_path / "t.json")}
    done = invoke("token", "create", "--name", "  ", env=env)
    assert done.exit_code == 1
    assert "needs a name" in done.output
    assert not (tmp_path / "t.json").exists()
