"""API bearer tokens: issued once in the clear, kept only as SHA-256 digests in a JSON file.

A token is `rt_<id>_<secret>`: the id names it in listings and revocations without revealing
it, the secret is 256 random bits. Random secrets that long need no slow password hash: a
digest cannot be inverted and nobody can guess their way to a preimage, which is also why
GitHub and PyPI keep their API tokens this way. The file, not the store, holds them because
the embedded chDB store has one owning process and `railtrace token create` must work while
the API runs; the API reads the file again whenever it changes.

This module imports no web framework, so the CLI can manage tokens without loading FastAPI.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from railtrace.private import private_opener

PREFIX = "rt_"
FILE_VERSION = 1


class Scope(StrEnum):
    """What a token may do. `admin` can do everything `read` can, and manage tokens."""

    READ = "read"
    ADMIN = "admin"


class TokenFileError(ValueError):
    """The tokens file exists but cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class TokenInfo:
    """One token as the file keeps it: everything but the secret."""

    token_id: str
    name: str
    scopes: frozenset[Scope]
    created_at: datetime
    expires_at: datetime | None
    digest: str

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes or Scope.ADMIN in self.scopes

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.token_id,
            "name": self.name,
            "scopes": sorted(self.scopes),
            "created_at": self.created_at.isoformat(),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
            "sha256": self.digest,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TokenInfo:
        expires = raw.get("expires_at")
        return cls(
            token_id=str(raw["id"]),
            name=str(raw["name"]),
            scopes=frozenset(Scope(s) for s in raw["scopes"]),
            created_at=datetime.fromisoformat(raw["created_at"]),
            expires_at=None if expires is None else datetime.fromisoformat(expires),
            digest=str(raw["sha256"]),
        )


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _split(token: str) -> str | None:
    """The id part of a well-formed token, or None."""
    if not token.startswith(PREFIX):
        return None
    token_id, sep, secret = token[len(PREFIX) :].partition("_")
    if not sep or len(token_id) != 12 or not secret:
        return None
    return token_id


class TokenBook:
    """The tokens file: issue, revoke and list from the CLI, check from the API.

    Writers take an exclusive lock and replace the file atomically, so two `token create`
    runs cannot lose each other's token and the API never reads half a file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # (inode, mtime_ns, size) of the file _by_id was read from; writers replace the file,
        # so a new inode says it changed even within one mtime tick
        self._seen: tuple[int, int, int, int] | None = None
        self._by_id: dict[str, TokenInfo] = {}
        self._local: dict[str, TokenInfo] = {}
        self._mutex = threading.Lock()

    # -- managing (CLI) ---------------------------------------------------------------------

    def issue(
        self,
        name: str,
        scopes: set[Scope],
        expires_in: timedelta | None = None,
        now: datetime | None = None,
    ) -> tuple[str, TokenInfo]:
        """A new token and its record; the token is shown this once and never stored."""
        if not name.strip():
            raise ValueError("a token needs a name that says who or what uses it")
        if not scopes:
            raise ValueError("a token needs at least one scope (read or admin)")
        created = (now or datetime.now(UTC)).replace(microsecond=0)
        with self._locked() as tokens:
            token_id = secrets.token_hex(6)
            while token_id in tokens:
                token_id = secrets.token_hex(6)
            token = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
            info = TokenInfo(
                token_id=token_id,
                name=name.strip(),
                scopes=frozenset(scopes),
                created_at=created,
                expires_at=None if expires_in is None else created + expires_in,
                digest=digest_of(token),
            )
            tokens[token_id] = info
        return token, info

    def issue_local(self, name: str) -> str:
        """A read token that lives only in this process's memory, for the CLI on the same
        machine (the owner file of a chDB store hands it over); it dies with the process."""
        token_id = secrets.token_hex(6)
        token = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        self._local[token_id] = TokenInfo(
            token_id=token_id,
            name=name,
            scopes=frozenset({Scope.READ}),
            created_at=datetime.now(UTC).replace(microsecond=0),
            expires_at=None,
            digest=digest_of(token),
        )
        return token

    def revoke(self, token_id: str) -> TokenInfo | None:
        """Remove a token; returns what was removed, or None if there was no such id."""
        with self._locked() as tokens:
            return tokens.pop(token_id, None)

    def tokens(self) -> list[TokenInfo]:
        """Every token, oldest first."""
        self._refresh()
        return sorted(self._by_id.values(), key=lambda t: (t.created_at, t.token_id))

    # -- checking (API) ---------------------------------------------------------------------

    def check(self, presented: str, now: datetime | None = None) -> TokenInfo | None:
        """The live token `presented` is, or None; the file is read again if it changed."""
        token_id = _split(presented)
        if token_id is None:
            return None
        self._refresh()
        info = self._by_id.get(token_id) or self._local.get(token_id)
        if info is None or not hmac.compare_digest(info.digest, digest_of(presented)):
            return None
        if info.expired(now or datetime.now(UTC)):
            return None
        return info

    def empty(self) -> bool:
        self._refresh()
        return not self._by_id

    # -- the file ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            with self._mutex:
                self._seen, self._by_id = None, {}
            return
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)
        if stamp == self._seen:
            return
        if st.st_mode & 0o077:
            raise TokenFileError(
                f"{self.path} is mode {st.st_mode & 0o777:04o}: others on this machine can "
                f"read or change who may use the API. Run `chmod 600 {self.path}`"
            )
        with self._mutex:
            self._by_id = self._read()
            self._seen = stamp

    def _read(self) -> dict[str, TokenInfo]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise TokenFileError(f"{self.path}: not a railtrace tokens file ({exc})") from exc
        if not isinstance(raw, dict) or raw.get("version") != FILE_VERSION:
            raise TokenFileError(f"{self.path}: not a version-{FILE_VERSION} tokens file")
        try:
            return {t.token_id: t for t in map(TokenInfo.from_json, raw["tokens"])}
        except (ValueError, KeyError, TypeError) as exc:
            raise TokenFileError(f"{self.path}: unreadable token entry ({exc!r})") from exc

    @contextmanager
    def _locked(self) -> Iterator[dict[str, TokenInfo]]:
        """The tokens under an exclusive lock; what the block leaves in the dict is written."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a", opener=private_opener) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            tokens = self._read()
            yield tokens
            body = json.dumps(
                {"version": FILE_VERSION, "tokens": [t.to_json() for t in tokens.values()]},
                indent=2,
            )
            tmp = self.path.with_name(self.path.name + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(body + "\n")
            os.replace(tmp, self.path)
        self._seen = None
