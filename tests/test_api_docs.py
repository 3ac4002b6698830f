"""The API reference pages (/docs, /redoc) work on a network that reaches no CDN: every script,
style and icon they load is served by the API itself."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import token_book
from fastapi.testclient import TestClient

from railtrace.api import create_app
from railtrace.store.chdb_store import ChdbStore

#: src= and href= of a page: what a browser fetches to show it.
_ASSET = re.compile(r"""(?:src|href)\s*[=:]\s*['"]([^'"]+)['"]""")
_JS_URL = re.compile(r"""url\s*:\s*['"]([^'"]+)['"]""")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        yield TestClient(create_app(store, token_book()))
    finally:
        store.close()


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_reference_page_loads_every_asset_from_the_api_itself(
    client: TestClient, page: str
) -> None:
    response = client.get(page)
    assert response.status_code == 200
    assets = _ASSET.findall(response.text) + _JS_URL.findall(response.text)
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts, response.text
    assert all(a.startswith("/") and not a.startswith("//") for a in assets), assets
    for asset in assets:
        got = client.get(asset)
        assert got.status_code == 200 and got.content, asset
