"""Slurm read through slurmrestd, Slurm's REST daemon: `GET /slurm/<version>/jobs`, whose JSON
is squeue --json's (the capture's reader takes it as it is), and `/slurm/<version>/job/<id>`.

slurmrestd says no in three ways, each a failed poll like a failing scontrol: an HTTP status
(401 for credentials it refuses, 404 for a version it does not serve, 500 when slurmctld
refuses or fails), an `errors` list in the body (which a 200 may carry too), or no answer at
all (refused, reset, timed out). The JWT travels in headers only: no log line, error or
description holds it. A session lives for one call: a poll every 30 s gains nothing from a
kept connection, and a session outliving its event loop would fail the next.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import orjson

from .config import API_VERSIONS, SchedulerCollectorConfig
from .source import SourceError

#: Slurm's ESLURM_INVALID_JOB_ID: the job is not (any more) in slurmctld.
INVALID_JOB_ID = 2017
_SERVED = re.compile(r"^/slurm/(v\d+\.\d+\.\d+)/jobs/?$")


class RestdSource:
    """slurmrestd at `config.slurmrestd.url`, on the version it names or, `auto`, the newest
    the server serves that railtrace reads (asked once, and again after a 404)."""

    def __init__(self, config: SchedulerCollectorConfig) -> None:
        self.config = config
        self.restd = config.slurmrestd
        self.version: str | None = (
            None if self.restd.api_version == "auto" else self.restd.api_version
        )

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.restd.url,
            "api_version": self.version or "auto",
            "user": self.restd.user,
        }

    def missing(self) -> str | None:
        return None

    async def jobs(self) -> bytes:
        async with self._session() as http:
            version = self.version or await self._discover(http)
            path = f"/slurm/{version}/jobs"
            status, body = await self._get(http, path)
            if status == 404 and self.restd.api_version == "auto":
                self.version = None  # the server was upgraded: ask it again next poll
            _check(path, status, body, _json(body))
            return body

    async def job(self, job_id: str) -> bytes:
        async with self._session() as http:
            version = self.version or await self._discover(http)
            path = f"/slurm/{version}/job/{quote(job_id, safe='')}"
            status, body = await self._get(http, path)
            doc = _json(body)
            if any(e.get("error_number") == INVALID_JOB_ID for e in _errors(doc)):
                return b""
            _check(path, status, body, doc)
            return body

    async def _discover(self, http: aiohttp.ClientSession) -> str:
        """The newest version railtrace reads among those whose jobs endpoint the server's
        OpenAPI document lists."""
        path = "/openapi/v3"
        status, body = await self._get(http, path)
        doc = _json(body)
        _check(path, status, body, doc)
        paths = doc.get("paths") if isinstance(doc, dict) else None
        served = {m.group(1) for p in paths or () if (m := _SERVED.match(str(p)))}
        for version in API_VERSIONS:
            if version in served:
                self.version = version
                return version
        raise SourceError(
            f"slurmrestd serves jobs at {', '.join(sorted(served)) or 'no version'}; railtrace "
            f"reads {API_VERSIONS[-1]} to {API_VERSIONS[0]}"
        )

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[aiohttp.ClientSession]:
        parts = urlsplit(self.restd.url)
        unix = parts.scheme == "unix"
        connector = aiohttp.UnixConnector(path=parts.path) if unix else None
        base = "http://localhost" if unix else self.restd.url
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        try:
            async with aiohttp.ClientSession(
                base, connector=connector, timeout=timeout, headers=self._headers()
            ) as http:
                yield http
        except aiohttp.ClientError as exc:  # refused, reset, a reply cut short
            if isinstance(exc, TimeoutError):  # aiohttp's own timeouts: "timed out" as any
                raise
            said = f"slurmrestd {self.restd.url}: {type(exc).__name__}: {exc}"
            raise SourceError(said[:300]) from exc

    async def _get(self, http: aiohttp.ClientSession, path: str) -> tuple[int, bytes]:
        async with http.get(path, allow_redirects=False) as response:
            return response.status, await response.read()

    def _headers(self) -> dict[str, str]:
        r = self.restd
        if r.user is None:
            return {}
        if r.token is not None:
            token = r.token.get_secret_value()
        else:
            assert r.token_file is not None  # the config holds a user only with a token
            token = r.token_file.read_text().strip().removeprefix("SLURM_JWT=")
            if not token:
                raise SourceError(f"slurmrestd token_file {r.token_file} is empty")
        return {"X-SLURM-USER-NAME": r.user, "X-SLURM-USER-TOKEN": token}


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _errors(doc: Any) -> list[dict[str, Any]]:
    errors = doc.get("errors") if isinstance(doc, dict) else None
    return [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []


def _check(path: str, status: int, body: bytes, doc: Any) -> None:
    """Raise SourceError unless slurmrestd answered 200 with a JSON object and no errors."""
    errors = _errors(doc)
    if status == 200 and isinstance(doc, dict) and not errors:
        return
    if errors:
        e = errors[0]
        said = f"{e.get('source', '')}: {e.get('description', '')} ({e.get('error', '')})"
    elif doc is None:
        said = body.decode("utf-8", "replace").strip().split("\n")[0] or "no body"
    else:
        said = "not a JSON object"
    raise SourceError(f"slurmrestd GET {path}: HTTP {status}: {said}"[:300])
