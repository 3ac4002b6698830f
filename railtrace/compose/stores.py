"""Opening the store as each command needs it: to own and write, to read (or, when another
process holds the embedded store, through that process's API), or to change its schema."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from railtrace.compose import StartError
from railtrace.replay import marker
from railtrace.settings import Settings
from railtrace.store import (
    Store,
    StoreError,
    StoreLockedError,
    open_store,
    read_owner,
    remove_owner,
    write_owner,
)


def open_owned(settings: Settings) -> Store:
    """Open the store this process will write to (and hold, for chDB), schema applied.

    The embedded store migrates itself: it is this machine's own. A ClickHouse server's
    schema is changed only by `railtrace db migrate`, so the sink and the API can run as a
    user without CREATE, and several of them never race to apply the same migration."""
    try:
        store = open_store(settings.store)
    except StoreLockedError as exc:
        raise StartError(str(exc)) from exc
    if not settings.store.clickhouse_url:
        store.migrate()
        return store
    pending = [m for m in store.migration_status() if m.applied_at is None]
    if pending:
        store.close()
        raise StartError(
            f"the ClickHouse database {settings.store.database!r} lacks {len(pending)} schema "
            f"migration(s) (first: {pending[0].version} {pending[0].name}); run "
            "`railtrace db migrate` with a user that may CREATE, then start this again"
        )
    return store


@dataclass(frozen=True, slots=True)
class Held:
    """The store a long-running process owns, and how it tells this machine's other commands
    where to read it: an embedded store cannot be opened twice, so `railtrace verdict` and the
    rest look for the owner file and read through the API it names."""

    store: Store
    settings: Settings

    def announce(self, api_url: str | None = None, api_token: str | None = None) -> None:
        """Write the owner file (a server store needs none: any process may read it)."""
        if not self.settings.store.clickhouse_url:
            write_owner(self.settings.store.data_dir, api_url, api_token)


@contextmanager
def held_store(settings: Settings) -> Iterator[Held]:
    """`open_owned`, for as long as the process runs; on the way out the owner file it wrote
    is removed before the store closes, so no reader is sent to a process that is gone."""
    store = open_owned(settings)
    try:
        yield Held(store, settings)
    finally:
        if not settings.store.clickhouse_url:
            remove_owner(settings.store.data_dir)
        store.close()


def open_for_reading(settings: Settings) -> Store | None:
    """The store, or None when another process holds it (read through its API then)."""
    if not settings.store.clickhouse_url and not settings.store.data_dir.is_dir():
        raise StartError(
            f"no data directory {settings.store.data_dir}; run `railtrace replay` first"
        )
    try:
        store = open_store(settings.store)
    except StoreLockedError:
        return None
    try:
        store.ping()
    except StoreError as exc:
        store.close()
        raise StartError(
            f"{settings.store.data_dir} holds no railtrace data ({exc}); run `railtrace replay`"
        ) from exc
    return store


T = TypeVar("T")
#: GET a path of the owning process's API, decoded.
Fetch = Callable[[str], Any]


def read(settings: Settings, in_store: Callable[[Store], T], via_api: Callable[[Fetch], T]) -> T:
    """An answer from the store, or, when another process holds the embedded store, from
    that process's API: `in_store` asks the one, `via_api` the other."""
    store = open_for_reading(settings)
    if store is None:
        return via_api(lambda path: through_owner(settings, path))
    try:
        return in_store(store)
    finally:
        store.close()


def open_for_schema(settings: Settings) -> Store:
    """The store as `db migrate` and `db status` need it: unmigrated is fine."""
    try:
        return open_store(settings.store)
    except StoreLockedError as exc:
        raise StartError(str(exc)) from exc
    except StoreError as exc:
        raise StartError(f"cannot open the store: {exc}") from exc


def quoted(part: str) -> str:
    """One path segment of an API URL: a job id holds no `/`, `?` or `#` by its grammar, but
    one read from an older store may, and must not change which route is asked."""
    return urllib.parse.quote(part, safe="")


def through_owner(settings: Settings, path: str) -> Any:
    """Read `path` from the API of the process that holds the chDB directory."""
    owner = read_owner(settings.store.data_dir)
    if owner is None or owner.api_url is None:
        raise StartError(
            f"{settings.store.data_dir} is held by another process that serves no API; "
            "wait for it to finish or start `railtrace serve` on it"
        )
    request = urllib.request.Request(owner.api_url.rstrip("/") + path, headers=owner.auth_headers())
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = orjson.loads(exc.read() or b"{}").get("detail", str(exc))
        except (orjson.JSONDecodeError, AttributeError):
            detail = str(exc)
        raise StartError(str(detail), 2 if exc.code == 404 else 1) from exc
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise StartError(
            f"the API of the owning process at {owner.api_url} did not answer: {exc}"
        ) from exc


def unfinished_replay(settings: Settings) -> str | None:
    """What to tell the user when the last replay into this directory stopped half way."""
    if settings.store.clickhouse_url:
        return None
    found = marker.unfinished(settings.store.data_dir)
    return None if found is None else found.describe(settings.store.data_dir)
