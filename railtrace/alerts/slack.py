"""Delivery to one Slack incoming webhook, from a task of its own.

`emit` only queues (bounded, see `policy.AlertQueue`), so the Kafka consumer feeding it never
waits on Slack. The delivery task paces messages with a token bucket and retries 429 and 5xx
answers (and network errors) with exponential backoff, taking Slack's `Retry-After` seconds
when given, both capped at `backoff_max_s`; any other 4xx is permanent (Slack names the
reason in the body: invalid_payload, invalid_token, channel_is_archived, ...). Nothing here
raises into the caller; every outcome is counted. The webhook URL is the secret and appears
in no log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import aiohttp

from railtrace.alerts.payloads import Alert
from railtrace.alerts.policy import AlertQueue, TokenBucket
from railtrace.settings import AlertSettings

log = logging.getLogger(__name__)


def retry_after(value: str | None) -> float | None:
    """Slack's `Retry-After`: whole seconds; None when missing or not a number."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


class SlackSender:
    """Sends queued alerts to one webhook; `start` before `emit`ting, `stop` at the end.

    `clock` and `sleep` are the time the sender reads and the way it waits (pacing, backoff,
    the drain at stop); they go together, so that a test can run them on a clock of its own
    and read every wait off exactly."""

    def __init__(
        self,
        url: str,
        settings: AlertSettings,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._url = url
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.queue = AlertQueue(settings.queue_max)
        self.bucket = TokenBucket(settings.rate_per_s, settings.burst)
        self.counters = {"queued": 0, "sent": 0, "retries": 0, "failed": 0, "dropped": 0}
        # Since when (monotonic) no attempt has reached Slack; None while the last one did.
        self.failing_since: float | None = None
        self._wake = asyncio.Event()
        self._busy = False
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None

    def emit(self, alert: Alert) -> None:
        """Queue `alert` for delivery and return at once."""
        dropped = self.queue.push(alert)
        self.counters["queued"] += 1
        if dropped is not None:
            self.counters["dropped"] += 1
            log.warning(
                "alert queue full: alert dropped",
                extra={"alert": dropped.kind, "subject": dropped.subject},
            )
        self._wake.set()

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s)
        )
        self._task = asyncio.create_task(self._run(), name="slack-sender")

    async def stop(self, drain_s: float = 5.0) -> None:
        """Give queued alerts up to `drain_s` to go out, then stop; what is left is counted
        as dropped."""
        deadline = self.clock() + drain_s
        while (len(self.queue) or self._busy) and self.clock() < deadline:
            await self.sleep(0.05)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.counters["dropped"] += len(self.queue)
        if self._session is not None:
            await self._session.close()

    async def _run(self) -> None:
        while True:
            alert = self.queue.pop()
            if alert is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            self._busy = True
            try:
                await self._deliver(alert)
            except Exception as exc:  # the task must outlive any one alert
                self.counters["failed"] += 1
                log.error(
                    "alert delivery crashed",
                    extra={"alert": alert.kind, "error": type(exc).__name__},
                )
            finally:
                self._busy = False

    async def _deliver(self, alert: Alert) -> None:
        s = self.settings
        for attempt in range(s.max_retries + 1):
            while (wait := self.bucket.take(self.clock())) > 0:
                await self.sleep(wait)
            status, body, hint = await self._post(alert)
            if not 200 <= status < 300 and self.failing_since is None:
                self.failing_since = self.clock()
            if 200 <= status < 300:
                self.failing_since = None
                self.counters["sent"] += 1
                log.info("alert sent", extra={"alert": alert.kind, "subject": alert.subject})
                return
            if 0 < status < 500 and status != 429:
                self.counters["failed"] += 1
                log.error(
                    "alert refused by Slack",
                    extra={"alert": alert.kind, "status": status, "reason": body[:200]},
                )
                return
            if attempt == s.max_retries:
                break
            delay = min(
                hint if hint is not None else s.backoff_base_s * 2**attempt, s.backoff_max_s
            )
            self.counters["retries"] += 1
            log.warning(
                "alert not delivered, retrying",
                extra={"alert": alert.kind, "status": status, "retry_in_s": delay},
            )
            await self.sleep(delay)
        self.counters["failed"] += 1
        log.error(
            "alert given up after retries",
            extra={"alert": alert.kind, "subject": alert.subject, "attempts": s.max_retries + 1},
        )

    async def _post(self, alert: Alert) -> tuple[int, str, float | None]:
        """(status, body, Retry-After) of one POST; a network error or timeout is status 0,
        retried like a 5xx. Exceptions are reduced to their type: their text can hold the URL."""
        assert self._session is not None
        try:
            async with self._session.post(self._url, json=alert.payload) as resp:
                body = await resp.text()
                return resp.status, body, retry_after(resp.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError) as exc:
            return 0, type(exc).__name__, None
