"""The UFM collector: every UFM Telemetry endpoint polled over HTTP in its own task.

Each endpoint is fetched every `interval_s` (jittered by up to 10% so endpoints sharing an
interval drift apart), parsed line by line (`prometheus`), translated into one raw gNMI
message per switch (`convert`) and handed to `emit`. A failing endpoint (refused, timed out,
HTTP error) is counted and logged and retried after an exponential, jittered backoff; it never
holds up another endpoint's task. UFM serves only its latest sample, so a switch whose sample
time has not moved since the last message is skipped (counted `stale`), never sent twice.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp
import orjson

from ..backoff import next_delay
from ..emit import Emit, Outgoing
from .config import UfmCollectorConfig, UfmEndpoint
from .convert import Converted, convert_poll
from .names import SwitchNames
from .prometheus import parse_text

log = logging.getLogger(__name__)


@dataclass
class EndpointStats:
    """Counters of one endpoint, for metrics, health and tests. `down_since` is the monotonic
    time of the first failed poll since the last good one (or when polling began), None while
    the last poll succeeded. `unmapped_guids` is a gauge: GUIDs of the last good poll that the
    mapping file does not name."""

    polls: int = 0
    successes: int = 0
    failures: int = 0
    samples: int = 0
    malformed: int = 0
    unmapped_samples: int = 0
    unmapped_guids: int = 0
    not_mapped: int = 0
    stale: int = 0
    messages: int = 0
    state_changes: int = 0
    emit_failures: int = 0
    last_error: str | None = None
    down_since: float | None = field(default_factory=time.monotonic)


def _ssl(endpoint: UfmEndpoint) -> ssl.SSLContext | bool:
    if not endpoint.verify_tls:
        return False
    if endpoint.ca_file is not None:
        return ssl.create_default_context(cafile=str(endpoint.ca_file))
    return True


class UfmCollector:
    """Polls every endpoint; `stats` holds each endpoint's EndpointStats by name."""

    def __init__(
        self,
        config: UfmCollectorConfig,
        names: SwitchNames,
        emit: Emit,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.names = names
        self.emit = emit
        self.stats = {e.name: EndpointStats() for e in config.endpoints}
        self._rng = rng or random.Random()
        self._status: dict[tuple[str, str], str] = {}
        self._last_ts: dict[str, int] = {}
        self._unmapped_logged: set[str] = set()

    @property
    def endpoints(self) -> Sequence[UfmEndpoint]:
        return self.config.endpoints

    async def run(self) -> None:
        """Poll every endpoint until cancelled."""
        log.info("ufm collector starting", extra={"endpoints": len(self.endpoints)})
        async with aiohttp.ClientSession(raise_for_status=True) as http, asyncio.TaskGroup() as g:
            for endpoint in self.endpoints:
                g.create_task(self._forever(http, endpoint), name=f"ufm:{endpoint.name}")

    async def _forever(self, http: aiohttp.ClientSession, endpoint: UfmEndpoint) -> None:
        failures_in_a_row = 0
        while True:
            ok = await self.poll_once(http, endpoint)
            failures_in_a_row = 0 if ok else failures_in_a_row + 1
            delay = next_delay(
                endpoint.interval_s, endpoint.backoff_max_s, failures_in_a_row, self._rng
            )
            await asyncio.sleep(delay)

    async def poll_once(self, http: aiohttp.ClientSession, endpoint: UfmEndpoint) -> bool:
        """Fetch, translate and emit one endpoint's latest sample; False (counted, logged)
        when the endpoint could not be read. Never raises but CancelledError."""
        stats = self.stats.setdefault(endpoint.name, EndpointStats())
        stats.polls += 1
        try:
            text = await self._fetch(http, endpoint)
        except (aiohttp.ClientError, TimeoutError, OSError, UnicodeDecodeError) as exc:
            stats.failures += 1
            stats.last_error = _describe(exc)
            if stats.down_since is None:
                stats.down_since = time.monotonic()
            log.warning(
                "ufm poll failed",
                extra={"endpoint": endpoint.name, "url": endpoint.url, "error": stats.last_error},
            )
            return False
        stats.successes += 1
        stats.down_since = None
        stats.last_error = None
        # Parsing a large fabric's text takes a while: off the loop, so /healthz and the
        # other endpoints' tasks keep running.
        converted, samples, malformed = await asyncio.to_thread(
            self._translate, text, dict(self._status)
        )
        stats.samples += samples
        stats.malformed += len(malformed) + converted.bad_values
        stats.unmapped_samples += converted.unmapped_samples
        stats.unmapped_guids = len(converted.unmapped_guids)
        stats.not_mapped += converted.not_mapped
        if malformed:
            line, reason = malformed[0]
            log.warning(
                "ufm lines not readable, skipped",
                extra={"endpoint": endpoint.name, "count": len(malformed), "first_line": line,
                       "reason": reason},
            )  # fmt: skip
        for guid in sorted(converted.unmapped_guids - self._unmapped_logged):
            self._unmapped_logged.add(guid)
            log.warning(
                "ufm node GUID not in the switches file, skipped",
                extra={"endpoint": endpoint.name, "node_guid": guid},
            )
        self._status.update(converted.status)
        await self._emit(endpoint, stats, converted)
        return True

    async def _fetch(self, http: aiohttp.ClientSession, endpoint: UfmEndpoint) -> str:
        auth = None
        if endpoint.username is not None and endpoint.password is not None:
            auth = aiohttp.BasicAuth(endpoint.username, endpoint.password.get_secret_value())
        async with http.get(
            endpoint.url,
            auth=auth,
            ssl=_ssl(endpoint),
            timeout=aiohttp.ClientTimeout(total=endpoint.timeout_s),
        ) as response:
            return await response.text()

    def _translate(
        self, text: str, last_status: dict[tuple[str, str], str]
    ) -> tuple[Converted, int, list[tuple[int, str]]]:
        """Parse and convert on a worker thread; `last_status` is a copy taken on the loop."""
        parsed = parse_text(text)
        converted = convert_poll(
            parsed.samples,
            self.names,
            data_unit_bytes=self.config.data_unit_bytes,
            received_ns=time.time_ns(),
            last_status=last_status,
        )
        return converted, len(parsed.samples), parsed.malformed

    async def _emit(self, endpoint: UfmEndpoint, stats: EndpointStats, c: Converted) -> None:
        for switch in c.messages:
            if switch.ts_ns <= self._last_ts.get(switch.device, 0):
                stats.stale += 1
                continue
            outgoing = Outgoing(
                stream="gnmi",
                key=switch.device.encode(),
                value=orjson.dumps(switch.message),
                state_change=switch.state_change,
                ts_ns=switch.ts_ns,
            )
            try:
                await self.emit(outgoing)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the spool not writable: count it, keep polling
                stats.emit_failures += 1
                log.error(
                    "ufm message not handed to delivery",
                    extra={"endpoint": endpoint.name, "device": switch.device,
                           "error": _describe(exc)},
                )  # fmt: skip
                continue
            self._last_ts[switch.device] = switch.ts_ns
            stats.messages += 1
            stats.state_changes += switch.state_change


def _describe(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"HTTP {exc.status} {exc.message}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"
