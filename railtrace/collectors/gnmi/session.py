"""One target's life: connect, check Capabilities, Subscribe, emit, and reconnect on failure.

Every target runs in its own task with its own channel, so a switch that refuses, hangs or
sends garbage costs only its own task. A stream that ends for any reason is reopened after
a jittered exponential backoff; the backoff starts over once a stream has delivered data, so
a switch that drops its stream now and then is back within a second or so, while one that is
down is retried ever less often. Only a target that retrying cannot fix (no usable
encoding, unreadable TLS files) is given up, with the reason in its status and the log.

A target that answers Capabilities with UNIMPLEMENTED (openconfig's reference fake target, some
switch OSes) is subscribed anyway, with its configured `fallback_encoding`: said once in the
log, and counted per session in its status.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc

from ...proto.gen import gnmi_pb2, gnmi_pb2_grpc
from ..emit import Emit, Outgoing
from ..gnmicjson import header
from .channel import call_metadata, open_channel
from .config import GnmiTarget
from .convert import REFUSED, UNSTAMPED, convert_notification, encode
from .errors import TargetFailedError
from .profiles import PROFILES, Profile
from .xpaths import from_xpath

log = logging.getLogger(__name__)

#: The encodings railtrace can turn into gnmic json without a schema.
USABLE_ENCODINGS = ("PROTO", "JSON_IETF", "JSON")

#: A stream silent for this many sample intervals (and at least IDLE_MIN_S) is presumed dead:
#: a switch that vanished without a TCP reset would otherwise hold the task forever.
IDLE_INTERVALS = 3
IDLE_MIN_S = 30.0


class StreamEndedError(Exception):
    """The target ended or stalled the Subscribe stream; the session is reopened."""


@dataclass
class TargetStatus:
    """What one target's task has done, for logs, health endpoints and tests.

    `state` is one of connecting, streaming, backoff, failed, stopped; `down_since` is the
    monotonic time it last stopped streaming (or was created), None while streaming.
    `failures` counts sessions lost or not opened, each followed by a reconnect; `updates`
    counts the updates of every notification received, `malformed_updates` those dropped for a
    missing path, an unreadable value or a timestamp that is no time. `malformed_since` is the
    monotonic time since which every update received was malformed (None once one was not),
    `malformed_reason` the last reason. `odd_timestamps` counts notifications not stamped in
    ns, by how they were read (`us`, `ms`, `s`, `missing`, `rejected`: `convert.Converted`).
    `capabilities_fallbacks` counts sessions subscribed with the fallback encoding because the
    target does not implement Capabilities.
    """

    name: str
    state: str = "connecting"
    down_since: float | None = field(default_factory=time.monotonic)
    connects: int = 0
    failures: int = 0
    notifications: int = 0
    updates: int = 0
    messages: int = 0
    malformed_updates: int = 0
    sync_responses: int = 0
    encoding: str = ""
    last_error: str = ""
    malformed_since: float | None = None
    malformed_reason: str = ""
    odd_timestamps: Counter[str] = field(default_factory=Counter)
    capabilities_fallbacks: int = 0

    def set_state(self, state: str) -> None:
        """Change `state`, keeping `down_since` in step with it."""
        if state == "streaming":
            self.down_since = None
        elif self.down_since is None:
            self.down_since = time.monotonic()
        self.state = state


def choose_encoding(supported: list[str], wanted: tuple[str, ...]) -> str:
    """The first of `wanted` (restricted to what railtrace reads) that the target supports."""
    for name in wanted:
        if name in USABLE_ENCODINGS and name in supported:
            return name
    offered = ", ".join(supported) or "none"
    raise TargetFailedError(
        f"no usable gNMI encoding: target supports {offered}; railtrace needs one of "
        f"{', '.join(n for n in wanted if n in USABLE_ENCODINGS)}"
    )


def subscribe_request(profile: Profile, sample_interval_ns: int, encoding: str) -> Any:
    """The one SubscribeRequest of a session: STREAM mode, SAMPLE and ON_CHANGE paths."""
    subscriptions = [
        gnmi_pb2.Subscription(
            path=from_xpath(p),
            mode=gnmi_pb2.SAMPLE,
            sample_interval=sample_interval_ns,
        )
        for p in profile.sample
    ]
    subscriptions += [
        gnmi_pb2.Subscription(path=from_xpath(p), mode=gnmi_pb2.ON_CHANGE)
        for p in profile.on_change
    ]
    return gnmi_pb2.SubscribeRequest(
        subscribe=gnmi_pb2.SubscriptionList(
            prefix=gnmi_pb2.Path(origin=profile.origin, target=profile.target),
            subscription=subscriptions,
            mode=gnmi_pb2.SubscriptionList.STREAM,
            encoding=gnmi_pb2.Encoding.Value(encoding),
        )
    )


#: What a session's LLDP re-sync replaces: every interface's neighbours.
LLDP_ROOT = "lldp/interfaces"


def backoff_delay(target: GnmiTarget, attempt: int, rng: random.Random) -> float:
    """Exponential delay for the given failed attempt (0-based), jittered over its upper half."""
    b = target.backoff
    ceiling = min(b.max_s, b.initial_s * b.factor**attempt)
    return rng.uniform(ceiling / 2, ceiling)


class TargetSession:
    """Runs one target until cancelled or until it fails for good."""

    def __init__(self, target: GnmiTarget, emit: Emit, rng: random.Random | None = None):
        self.target = target
        self.profile = PROFILES[target.profile]
        self.emit = emit
        self.status = TargetStatus(target.name)
        self._rng = rng or random.Random()
        self._log_extra = {"target": target.name, "address": target.address}

    async def run(self) -> None:
        """Stream, reconnecting with backoff; returns only when the target has failed for
        good. Never raises but CancelledError: one target must not take down the others."""
        attempt = 0
        try:
            while True:
                self.status.set_state("connecting")
                delivered = False
                try:
                    delivered = await self._session()
                except TargetFailedError as exc:
                    self.status.set_state("failed")
                    self.status.last_error = str(exc)
                    log.error(
                        "gnmi target failed, not retried: %s",
                        exc,
                        extra={**self._log_extra, "error": str(exc)},
                    )
                    return
                except (grpc.aio.AioRpcError, StreamEndedError, TimeoutError) as exc:
                    delivered = self._note_failure(_describe(exc))
                except Exception as exc:  # a bug or an emit failure: log it, keep the task
                    log.exception("gnmi session error", extra=self._log_extra)
                    delivered = self._note_failure(f"{type(exc).__name__}: {exc}")
                if delivered:
                    attempt = 0
                delay = backoff_delay(self.target, attempt, self._rng)
                attempt += 1
                self.status.set_state("backoff")
                log.info(
                    "gnmi reconnect in %.1fs",
                    delay,
                    extra={**self._log_extra, "delay_s": round(delay, 3), "attempt": attempt},
                )
                await asyncio.sleep(delay)
        finally:
            if self.status.state != "failed":
                self.status.set_state("stopped")

    def _note_failure(self, reason: str) -> bool:
        """Record a failed or ended session; True if it had delivered data first."""
        delivered = self.status.state == "streaming"
        self.status.failures += 1
        self.status.last_error = reason
        log.warning("gnmi stream lost: %s", reason, extra={**self._log_extra, "error": reason})
        return delivered

    async def _session(self) -> bool:
        """One connection: Capabilities, then Subscribe until the stream ends."""
        target = self.target
        metadata = call_metadata(target)
        channel = open_channel(target)
        try:
            stub = gnmi_pb2_grpc.gNMIStub(channel)
            try:
                caps = await stub.Capabilities(
                    gnmi_pb2.CapabilityRequest(),
                    metadata=metadata,
                    timeout=target.connect_timeout_s,
                )
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                    raise
                encoding = self._fall_back()
            else:
                encoding = self._check_capabilities(caps)
            request = subscribe_request(self.profile, target.sample_interval_ns, encoding)
            call = stub.Subscribe(metadata=metadata)
            try:
                await call.write(request)
                self.status.connects += 1
                log.info(
                    "gnmi subscribed",
                    extra={**self._log_extra, "encoding": encoding, "profile": self.profile.name},
                )
                await self._read(call)
            finally:
                call.cancel()
        finally:
            await channel.close()
        return False  # _read only ever leaves by raising

    def _fall_back(self) -> str:
        """The encoding to subscribe with when the target does not implement Capabilities."""
        encoding = self.target.fallback_encoding or self.profile.encodings[0]
        self.status.encoding = encoding
        self.status.capabilities_fallbacks += 1
        if self.status.capabilities_fallbacks == 1:
            log.warning(
                "gnmi target does not implement Capabilities: subscribing with the fallback "
                "encoding %s",
                encoding,
                extra={**self._log_extra, "encoding": encoding},
            )
        return encoding

    def _check_capabilities(self, caps: Any) -> str:
        supported = [gnmi_pb2.Encoding.Name(e) for e in caps.supported_encodings]
        encoding = choose_encoding(supported, self.profile.encodings)
        self.status.encoding = encoding
        models = {str(m.name) for m in caps.supported_models}
        missing = [m for m in self.profile.models if m not in models]
        if missing:
            # Targets often list models incompletely; the subscription tells for sure.
            log.warning(
                "gnmi target does not list expected models",
                extra={**self._log_extra, "missing_models": missing},
            )
        return encoding

    async def _read(self, call: Any) -> None:
        idle_s = max(IDLE_MIN_S, IDLE_INTERVALS * self.target.sample_interval_s)
        while True:
            try:
                async with asyncio.timeout(idle_s):
                    response = await call.read()
            except TimeoutError:
                raise StreamEndedError(f"no data for {idle_s:.0f}s") from None
            if response is grpc.aio.EOF:
                raise StreamEndedError("target closed the stream")
            if self.status.down_since is not None:
                self.status.set_state("streaming")
                await self._lldp_resync()
            await self._handle(response)

    async def _lldp_resync(self) -> None:
        """Say that the LLDP table starts afresh with this session.

        A new Subscribe re-sends every neighbour the switch has now, but nothing about those
        that went away while no session was up; without this, such a neighbour would stay in
        the worker's table for good (a cable moved during an outage would show both ends).
        """
        if not any("lldp" in path for path in self.profile.on_change):
            return
        now = time.time_ns()
        message = {**header(self.target.name, self.profile.name, now), "deletes": [LLDP_ROOT]}
        await self.emit(Outgoing("gnmi", self.target.name.encode(), encode(message), True, now))
        self.status.messages += 1

    async def _handle(self, response: Any) -> None:
        kind = response.WhichOneof("response")
        if kind == "sync_response":
            self.status.sync_responses += 1
            log.debug("gnmi sync response", extra=self._log_extra)
        elif kind == "update":
            await self._notification(response.update)
        elif kind == "error":
            log.warning(
                "gnmi target sent an error response: %s",
                response.error.message,
                extra={**self._log_extra, "code": int(response.error.code)},
            )

    async def _notification(self, notification: Any) -> None:
        status = self.status
        status.notifications += 1
        status.updates += len(notification.update)
        converted = convert_notification(
            notification,
            source=self.target.name,
            subscription=self.profile.name,
            received_ns=time.time_ns(),
        )
        if converted is None:
            return
        if converted.stamp != "ns":
            self._odd_timestamp(converted.stamp, int(notification.timestamp))
        if converted.good_updates:
            status.malformed_since = None
        if converted.bad_updates:
            status.malformed_updates += len(converted.bad_updates)
            status.malformed_reason = converted.bad_updates[0]
            if not converted.good_updates and status.malformed_since is None:
                status.malformed_since = time.monotonic()
            log.warning(
                "gnmi malformed updates dropped: %s",
                converted.bad_updates[0],
                extra={**self._log_extra, "dropped": len(converted.bad_updates)},
            )
        if converted.message is None:
            return
        await self.emit(
            Outgoing(
                stream="gnmi",
                key=self.target.name.encode(),
                value=encode(converted.message),
                state_change=converted.state_change,
                ts_ns=converted.ts_ns,
            )
        )
        status.messages += 1

    def _odd_timestamp(self, how: str, stamp: int) -> None:
        """Count a notification not stamped in ns; say so the first time for each way."""
        counts = self.status.odd_timestamps
        counts[how] += 1
        if counts[how] > 1 or how == REFUSED:  # a refusal is logged as malformed updates
            return
        if how == UNSTAMPED:
            message = "gnmi target sends notifications without a timestamp: stamped when received"
        else:
            message = f"gnmi target stamps notifications in {how} where gNMI has ns: read as {how}"
        log.warning(message, extra={**self._log_extra, "timestamp": stamp})


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc) or type(exc).__name__
