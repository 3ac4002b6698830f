"""`railtrace alert`: the Kafka side of the alerts.

An aiokafka consumer in group `<app_id>-alerts` reads verdicts, raw node events, link events
and cabling events, decodes them with the topics' own codecs, asks the policy what is worth
sending and hands that to the sender, which never makes it wait. A record that does not
decode is counted and skipped (the worker and sink already dead-letter bad input). Offsets
are committed automatically: an alert is a notice, not a ledger, and a restart within the
commit interval at worst repeats a few (which Slack shows twice) or, for a new group, starts
at the end of the topics unless `alerts.from_beginning` is set.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import signal
import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from aiokafka import AIOKafkaConsumer

from railtrace import kafka
from railtrace.alerts import probes
from railtrace.alerts.blast import BlastRadius
from railtrace.alerts.payloads import Alert
from railtrace.alerts.policy import AlertPolicy
from railtrace.alerts.slack import SlackSender
from railtrace.collectors.hosts import nodeevents
from railtrace.kafka import topics
from railtrace.probes.endpoint import Endpoint
from railtrace.probes.health import Health
from railtrace.settings import AlertSettings, Settings
from railtrace.streams import wire
from railtrace.streams.records import CablingEvent, CauseKind, LinkEvent, Verdict
from railtrace.topology.attrs import Role

log = logging.getLogger(__name__)


class Emitter(Protocol):
    def emit(self, alert: Alert) -> None: ...


class AlertConsumer:
    """Reads the four topics and feeds what the policy admits to `sender`."""

    def __init__(
        self,
        settings: Settings,
        sender: Emitter,
        role: Callable[[str], Role | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`role` is the fabric's, when known: a link verdict's next steps need to tell its
        host end from its switch end."""
        self.settings = settings
        self.sender = sender
        self.clock = clock
        self.policy = AlertPolicy(settings.alerts, settings.site.zone, role=role)
        self.group = f"{settings.worker.app_id}-alerts"
        prefix = settings.kafka.topic_prefix
        self.verdicts = topics.name(prefix, topics.VERDICTS)
        self.node_events = topics.name(prefix, topics.RAW_NODE_EVENTS)
        self.link_events = topics.name(prefix, topics.LINK_EVENTS)
        self.cabling_events = topics.name(prefix, topics.CABLING_EVENTS)
        self.counters = {"records": 0, "bad_records": 0}
        self.radius = _radius(settings)
        # Since when (monotonic) the group has given this consumer no partition; None once it has.
        self.unassigned_since: float | None = clock()

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until `stop` is set."""
        consumer = AIOKafkaConsumer(
            self.verdicts,
            self.node_events,
            self.link_events,
            self.cabling_events,
            group_id=self.group,
            enable_auto_commit=True,
            auto_offset_reset="earliest" if self.settings.alerts.from_beginning else "latest",
            **kafka.client_kwargs(self.settings.kafka),
        )
        await consumer.start()
        log.info("alert consumer started", extra={"group": self.group})
        try:
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=500, max_records=500)
                if consumer.assignment():
                    self.unassigned_since = None
                elif self.unassigned_since is None:
                    self.unassigned_since = self.clock()
                for tp, records in batches.items():
                    for r in records:
                        await self.handle(tp.topic, r.key, r.value)
        finally:
            await consumer.stop()
            if self.radius is not None:
                await self.radius.stop()

    async def handle(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        """Decode one record and emit the alerts it makes; bad records are counted."""
        self.counters["records"] += 1
        now = self.clock()
        try:
            if topic == self.node_events:
                record = nodeevents.to_record(nodeevents.decode(value or b""))
                self._emit(self.policy.on_node_event(record, now))
                return
            for item in wire.decode_records(value or b""):
                if isinstance(item, Verdict) and topic == self.verdicts:
                    self._emit(await self._with_radius(item, self.policy.on_verdict(item, now)))
                elif isinstance(item, LinkEvent) and topic == self.link_events:
                    link_id = key.decode() if key else f"{item.device}:{item.interface}"
                    self._emit(self.policy.on_link_event(item, link_id, now))
                elif isinstance(item, CablingEvent) and topic == self.cabling_events:
                    self._emit(self.policy.on_cabling(item, now))
                else:
                    raise ValueError(f"unexpected {type(item).__name__} record")
        except (ValueError, UnicodeDecodeError) as exc:  # WireError is a ValueError
            self.counters["bad_records"] += 1
            log.warning("bad record skipped", extra={"topic": topic, "reason": str(exc)[:200]})

    async def _with_radius(self, v: Verdict, alert: Alert | None) -> Alert | None:
        """The alert of a blamed link, once admitted, with the link's blast radius; asked
        only then, so a suppressed repeat costs the API nothing."""
        link = v.cause_link
        if alert is None or alert.kind != "verdict" or self.radius is None:
            return alert
        if v.tied or v.cause_kind is not CauseKind.LINK or link is None:
            return alert
        until = v.decided_at_ns or v.stalled_at_ns or 0
        return self.policy.verdict_alert(v, await self.radius.of(link.link_id, until))

    def _emit(self, alert: Alert | None) -> None:
        if alert is not None:
            self.sender.emit(alert)


def _radius(settings: Settings) -> BlastRadius | None:
    """The API client for link alerts' blast radius; without a token there is none, which is
    said once at start, as the alerts then name no other jobs."""
    a = settings.alerts
    if a.api_token is None:
        log.warning(
            "alerts.api_token is not set: link alerts will not name the other jobs on the link; "
            "create a read token (railtrace token create --name alerts) and set "
            "RAILTRACE_ALERTS__API_TOKEN"
        )
        return None
    base = a.api_url or a.incident_base_url
    return BlastRadius(base, a.api_token.get_secret_value(), a.api_timeout_s, clock=time.monotonic)


def _loopback(url: str) -> bool:
    """True when `url` names this machine: a link to it opens only on the alerter's host."""
    host = urlsplit(url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or host.endswith(".localhost")
    return address.is_loopback or address.is_unspecified


def unreachable_links(settings: AlertSettings) -> list[str]:
    """Warnings for base URLs that only this machine can open. The incident base URL defaults
    to the API's local address, which works for a demo and silently sends everyone else a
    dead link, so a deployment that forgot to set it should hear so before the first alert."""
    names = {
        "incident_base_url": settings.incident_base_url,
        "grafana_base_url": settings.grafana_base_url,
    }
    return [
        f"alerts.{name} is {url}, a loopback address: links in Slack will not open for "
        f"anyone else; set RAILTRACE_ALERTS__{name.upper()} (or {name} under [alerts] in "
        "the config file) to the address people reach it at"
        for name, url in names.items()
        if url is not None and _loopback(url)
    ]


def run_alerts(
    settings: Settings, role: Callable[[str], Role | None] | None = None
) -> dict[str, int]:
    """Run the consumer and the sender until SIGTERM or SIGINT; returns the counters, which
    are also logged. `role` is the fabric's, as `AlertConsumer` takes it."""
    url = settings.alerts.slack_webhook_url
    if url is None:
        raise ValueError("alerts.slack_webhook_url is not set")

    async def main() -> dict[str, int]:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        sender = SlackSender(url.get_secret_value(), settings.alerts)
        consumer = AlertConsumer(settings, sender, role)

        def counters() -> dict[str, int]:
            radius = {} if consumer.radius is None else consumer.radius.counters
            return {**consumer.counters, **consumer.policy.counters, **sender.counters, **radius}

        def health() -> Health:
            readings = probes.Readings(
                time.monotonic(),
                sender.failing_since,
                len(sender.queue),
                settings.alerts.queue_max,
                consumer.unassigned_since,
            )
            return probes.assess(readings, settings.alerts.health_grace_s)

        endpoint = Endpoint(
            settings.alerts.metrics_listen,
            probes.registry(lambda: probes.families(counters(), health(), len(sender.queue))),
            health,
        )
        await endpoint.start()
        await sender.start()
        try:
            await consumer.run(stop)
        finally:
            await sender.stop()
            await endpoint.stop()
        done = counters()
        log.info("alerts stopped", extra=done)
        return done

    return asyncio.run(main())
