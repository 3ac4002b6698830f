"""A blamed link's blast radius, asked of the API: the other jobs whose traffic may cross it.

Jobs are spread over the workers by partition, so no worker knows every job's paths, and the
alerter reads only verdicts. The API does know them: it rebuilds each job's paths from the
store with the attribution's own path model (api/joblinks.py). So the alerter asks
`GET /v1/links/{id}/jobs` once per alert it sends, and an alert goes out all the same when the
API cannot answer, saying why the radius is not known rather than implying there is none.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import aiohttp

log = logging.getLogger(__name__)

#: How long one link's answer is reused: the many jobs one bad uplink stalls are alerted within
#: seconds of each other, and their radius is the same question.
REUSE_S = 30.0


@dataclass(frozen=True, slots=True)
class OtherJob:
    """A job whose paths may cross the link, as the API's blast radius lists it."""

    job_id: str
    weight: float
    state: str | None
    blamed: bool


@dataclass(frozen=True, slots=True)
class Radius:
    """The jobs crossing a link, likeliest first; `known` False (with `reason`) when the
    API could not say, which is not the same as no other job."""

    link_id: str
    jobs: tuple[OtherJob, ...] = ()
    known: bool = True
    reason: str = ""

    def others(self, job_id: str) -> tuple[OtherJob, ...]:
        """The crossing jobs but `job_id`, whose alert this is."""
        return tuple(j for j in self.jobs if j.job_id != job_id)


class BlastRadius:
    """Asks the API at `base_url` with a read token; answers are kept `REUSE_S` per link."""

    def __init__(
        self,
        base_url: str,
        token: str,
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.clock = clock
        self.counters = {"radius_asked": 0, "radius_unknown": 0}
        self._session: aiohttp.ClientSession | None = None
        self._kept: dict[str, tuple[float, Radius]] = {}

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def of(self, link_id: str, until_ns: int) -> Radius:
        """The link's radius among the jobs started by `until_ns`; never raises."""
        kept = self._kept.get(link_id)
        now = self.clock()
        if kept is not None and now - kept[0] < REUSE_S:
            return kept[1]
        self.counters["radius_asked"] += 1
        try:
            radius = Radius(link_id, tuple(_jobs(await self._get(link_id, until_ns))))
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError) as exc:
            self.counters["radius_unknown"] += 1
            reason = _reason(exc, self.base_url)
            log.warning("blast radius not known", extra={"link": link_id, "reason": reason})
            return Radius(link_id, known=False, reason=reason)
        self._kept = {k: v for k, v in self._kept.items() if now - v[0] < REUSE_S}
        self._kept[link_id] = (now, radius)
        return radius

    async def _get(self, link_id: str, until_ns: int) -> Any:
        if self._session is None:  # made here: a session belongs to the running loop
            self._session = aiohttp.ClientSession(timeout=self.timeout)
        # Rounded up to the second: a job that started in the verdict's own second counts.
        until = datetime.fromtimestamp(-(-until_ns // 1_000_000_000), tz=UTC)
        url = f"{self.base_url}/v1/links/{quote(link_id, safe=':/@')}/jobs"
        params = {"until": until.strftime("%Y-%m-%dT%H:%M:%SZ")}
        async with self._session.get(url, params=params, headers=self._headers) as response:
            if response.status != 200:
                raise RefusedError(response.status)
            return await response.json()


class RefusedError(ValueError):
    """The API answered, but not with a radius."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def _jobs(body: Any) -> list[OtherJob]:
    return [
        OtherJob(str(j["job_id"]), float(j["weight"]), j.get("state"), bool(j["blamed"]))
        for j in body["jobs"]
    ]


#: What an API refusal means for the person reading the alert.
_REFUSALS = {
    401: "refused alerts.api_token",
    403: "refused alerts.api_token",
    404: "does not know the link (is it serving the same cables.csv?)",
    503: "was started without a topology",
}


def _reason(exc: BaseException, base_url: str) -> str:
    """Why the API did not say, in words a reader of the alert can act on."""
    where = f"the API at {base_url}"
    if isinstance(exc, TimeoutError):
        return f"{where} did not answer in time"
    if isinstance(exc, aiohttp.ClientError):
        return f"{where} could not be reached ({type(exc).__name__})"
    if isinstance(exc, RefusedError):
        return f"{where} {_REFUSALS.get(exc.status, 'answered')} (HTTP {exc.status})"
    return f"{where} answered something other than a blast radius"
