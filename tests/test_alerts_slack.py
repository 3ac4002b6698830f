"""Slack delivery against a real local HTTP receiver (aiohttp) standing in for the webhook:
every payload's shape is checked there; 429 and 5xx are retried honoring Retry-After, other
4xx are not; a receiver that never answers does not hold up the caller; the webhook URL never
reaches a log. Last, `railtrace alert` end to end on the real broker.

Waits (Retry-After, backoff, pacing) are read off a `VirtualClock` the sender is given, not
measured on the wall clock: what is checked is what the sender decided, however fast or
loaded the machine is."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kafka_support import BOOTSTRAP, RAILTRACE, free_port, group_offsets, require_broker
from store_samples import LINK, T0, verdict

from railtrace.alerts.consumer import unreachable_links
from railtrace.alerts.payloads import (
    Alert,
    cabling_alert,
    flap_storm_alert,
    node_alert,
    recovery_alert,
    verdict_alert,
)
from railtrace.alerts.slack import SlackSender
from railtrace.collectors.hosts import nodeevents
from railtrace.collectors.hosts.quarantine import Decision, XidObservation
from railtrace.kafka import ensure_topics
from railtrace.settings import AlertSettings, KafkaSettings
from railtrace.streams import wire
from railtrace.streams.records import (
    CablingEvent,
    JobState,
    LinkEvent,
    LinkEventKind,
    NodeEvent,
    Verdict,
)
from railtrace.topology.ends import CablingKind, Endpoint

BASE = "http://incidents.example.net"
GRAFANA = "http://grafana.example.net"
SECRET = "xoxb-SECRET-TOKEN-7f3a"
BLOCK_TYPES = {"header", "section", "actions", "context", "divider"}


def shape_problems(payload: Any) -> list[str]:
    """What is wrong with a webhook message, as Slack's Block Kit and railtrace promise it."""
    if not isinstance(payload, dict):
        return ["not a JSON object"]
    problems = []
    text, blocks = payload.get("text"), payload.get("blocks")
    if not isinstance(text, str) or not text:
        problems.append("no plain-text fallback")
    if not isinstance(blocks, list) or not blocks:
        return [*problems, "no blocks"]
    for b in blocks:
        if b.get("type") not in BLOCK_TYPES:
            problems.append(f"unknown block {b.get('type')}")
        if b["type"] == "header" and len(b["text"]["text"]) > 150:
            problems.append("header too long")
        if b["type"] == "section" and not (b.get("text") or b.get("fields")):
            problems.append("empty section")
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    actions = [b for b in blocks if b["type"] == "actions"]
    if any(len(b["elements"]) > 25 for b in actions):
        problems.append("more than 25 elements in an actions block")
    ids = [e["action_id"] for e in buttons]
    if len(set(ids)) != len(ids) or any(len(i) > 255 for i in ids):
        problems.append(f"action ids not unique or too long: {ids}")
    if any(len(e["text"]["text"]) > 75 or len(e["url"]) > 3000 for e in buttons):
        problems.append("button text or url too long")
    urls = [e["url"] for e in buttons]
    if any(not u.startswith((BASE + "/", GRAFANA + "/")) for u in urls):
        problems.append(f"a button leads elsewhere: {urls}")
    if not urls or not urls[0].startswith(BASE + "/"):
        problems.append(f"no link back to railtrace: {urls}")
    elif isinstance(text, str) and urls[0] not in text:
        problems.append("the fallback text lacks the link")
    return problems


class VirtualClock:
    """The sender's time, moved only by its own waits: `sleep` records what was asked and
    moves the clock on by it at once (yielding to the loop, so the receiver runs)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


class Receiver:
    """A Slack webhook stand-in on a free local port: records every POST with its arrival
    time on `clock`, checks its shape, and answers from `script` ((status, headers, body),
    then 200 ok), or never answers when `hang`."""

    def __init__(
        self,
        script: list[tuple[int, dict[str, str], str]] = (),
        hang: bool = False,
        clock: Any = time.monotonic,
    ):
        self.script = list(script)
        self.hang = hang
        self.clock = clock
        self.got: list[tuple[float, dict[str, Any]]] = []
        self.problems: list[str] = []
        self.url = ""
        self.closing = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != SECRET:
            return web.Response(status=404, text="no_service")
        payload = await request.json()
        self.got.append((self.clock(), payload))
        self.problems += shape_problems(payload)
        if self.hang:
            await self.closing.wait()  # until the receiver shuts down
        status, headers, body = self.script.pop(0) if self.script else (200, {}, "ok")
        return web.Response(status=status, headers=headers, text=body)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Receiver]:
        app = web.Application()
        app.router.add_post("/services/T000/B000/{token}", self.handle)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/services/T000/B000/{SECRET}"
        try:
            yield self
        finally:
            self.closing.set()
            await runner.cleanup()


def settings(**kw: Any) -> AlertSettings:
    base = {"incident_base_url": BASE, "rate_per_s": 100.0, "backoff_base_s": 0.3}
    return AlertSettings(**{**base, **kw})


def node_event() -> NodeEvent:
    return NodeEvent(
        T0, "gpu7", "xid", 79, "0000:3b:00", "fell off", True, "quarantine", "Xid 79", True
    )


#: A port cabled to the wrong host, as the cabling alerts report it.
MISWIRE = CablingEvent(
    T0,
    "leaf03",
    "swp1",
    CablingKind.MISWIRED,
    Endpoint("gpu1", "mlx5_0"),
    Endpoint("gpu2", "mlx5_0"),
)


def stalled_for_a_cost() -> Verdict:
    """A stalled job whose alert carries a cost line and every button."""
    return dataclasses.replace(verdict(), gpus=128, watchdog_at_ns=T0 + 600 * 10**9)


def every_kind() -> list[Alert]:
    flap = LinkEvent(T0, "leaf03", "Ethernet1/7", LinkEventKind.FLAP, 5.0, "5 changes in 60 s")
    return [
        verdict_alert(stalled_for_a_cost(), BASE, grafana=GRAFANA),
        node_alert(node_event(), BASE, GRAFANA),
        flap_storm_alert(flap, LINK.link_id, BASE, GRAFANA),
        cabling_alert(MISWIRE, BASE),
        recovery_alert(verdict(state=JobState.HEALTHY), "stalled, link", BASE),
    ]


async def until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_every_kind_of_alert_reaches_the_receiver_in_slack_shape() -> None:
    async def main() -> None:
        async with Receiver().running() as rx:
            sender = SlackSender(rx.url, settings())
            await sender.start()
            for a in every_kind():
                sender.emit(a)
            await until(lambda: sender.counters["sent"] == 5)
            await sender.stop()
        assert rx.problems == []
        headers = [p["blocks"][0]["text"]["text"] for _, p in rx.got]
        assert headers[1:] == [
            "Node gpu7 quarantined",
            f"Link flap storm: {LINK.link_id}",
            "Cabling miswired: leaf03:swp1",
            "Job slurm-4242 recovered",
        ]
        assert headers[0].startswith("Job slurm-4242 stalled: link leaf03:Ethernet1/7")

    asyncio.run(main())


def test_429_then_500_are_retried_honoring_retry_after_then_backoff() -> None:
    script = [(429, {"Retry-After": "1"}, "rate_limited"), (500, {}, "oops")]
    clock = VirtualClock()

    async def main() -> None:
        async with Receiver(script, clock=clock).running() as rx:
            sender = SlackSender(rx.url, settings(), clock=clock, sleep=clock.sleep)
            await sender.start()
            sender.emit(every_kind()[0])
            await until(lambda: sender.counters["sent"] == 1)
            await sender.stop()
        times = [t for t, _ in rx.got]
        assert len(times) == 3 and rx.problems == []
        # Retry-After: 1, then the backoff 0.3 * 2**1; nothing else was waited for.
        assert clock.slept == pytest.approx([1.0, 0.6])
        assert [b - a for a, b in itertools.pairwise(times)] == pytest.approx([1.0, 0.6])
        assert rx.got[0][1] == rx.got[2][1]
        assert sender.counters == {"queued": 1, "sent": 1, "retries": 2, "failed": 0, "dropped": 0}

    asyncio.run(main())


def test_the_sender_says_since_when_slack_has_been_failing_until_a_message_gets_through() -> None:
    script = [(503, {}, ""), (503, {}, "")]
    clock = VirtualClock()

    async def main() -> None:
        async with Receiver(script, clock=clock).running() as rx:
            once = settings(max_retries=1)
            sender = SlackSender(rx.url, once, clock=clock, sleep=clock.sleep)
            await sender.start()
            assert sender.failing_since is None
            sender.emit(every_kind()[0])
            await until(lambda: sender.counters["failed"] == 1)
            assert sender.failing_since == 0.0, "since the first failed attempt, not the last"
            sender.emit(every_kind()[1])
            await until(lambda: sender.counters["sent"] == 1)
            assert sender.failing_since is None
            await sender.stop()

    asyncio.run(main())


def test_retry_after_is_capped_and_retries_end_in_a_counted_failure() -> None:
    script = [(429, {"Retry-After": "30"}, ""), (503, {}, ""), (503, {}, "")]
    clock = VirtualClock()

    async def main() -> None:
        async with Receiver(script, clock=clock).running() as rx:
            fast = settings(max_retries=2, backoff_max_s=0.2)
            sender = SlackSender(rx.url, fast, clock=clock, sleep=clock.sleep)
            await sender.start()
            sender.emit(every_kind()[1])
            await until(lambda: sender.counters["failed"] == 1)
            await sender.stop()
        assert len(rx.got) == 3
        # Slack's 30 s and the 0.6 s backoff were both capped at backoff_max_s.
        assert clock.slept == pytest.approx([0.2, 0.2])
        assert (sender.counters["sent"], sender.counters["retries"]) == (0, 2)

    asyncio.run(main())


def test_400_is_a_permanent_failure_not_retried() -> None:
    clock = VirtualClock()
    refused, after = every_kind()[2], every_kind()[0]

    async def main() -> None:
        async with Receiver([(400, {}, "invalid_payload")], clock=clock).running() as rx:
            sender = SlackSender(rx.url, settings(), clock=clock, sleep=clock.sleep)
            await sender.start()
            sender.emit(refused)
            await until(lambda: sender.counters["failed"] == 1)
            # One task delivers in order: once the next alert is through, a retry of the
            # refused one would have come before it.
            sender.emit(after)
            await until(lambda: sender.counters["sent"] == 1)
            await sender.stop()
        assert [p for _, p in rx.got] == [refused.payload, after.payload]
        assert sender.counters["retries"] == 0
        assert clock.slept == []  # no backoff either

    asyncio.run(main())


def test_messages_are_paced_by_the_rate_limit() -> None:
    clock = VirtualClock()

    async def main() -> None:
        async with Receiver(clock=clock).running() as rx:
            paced = settings(rate_per_s=5.0, burst=1)
            sender = SlackSender(rx.url, paced, clock=clock, sleep=clock.sleep)
            await sender.start()
            for a in every_kind()[:3]:
                sender.emit(a)
            await until(lambda: sender.counters["sent"] == 3)
            await sender.stop()
        # One message at once (the burst), then one every 1/5 s.
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(rx.got)]
        assert gaps == pytest.approx([0.2, 0.2]), gaps

    asyncio.run(main())


def test_a_receiver_that_never_answers_does_not_block_the_caller() -> None:
    clock = VirtualClock()

    async def main() -> None:
        async with Receiver(hang=True, clock=clock).running() as rx:
            held = settings(queue_max=5, timeout_s=30)
            sender = SlackSender(rx.url, held, clock=clock, sleep=clock.sleep)
            await sender.start()
            sender.emit(every_kind()[0])
            await until(lambda: len(rx.got) == 1)  # the sender now waits on the receiver
            for _ in range(50):
                sender.emit(every_kind()[3])
            # Every call returned while the first POST is still unanswered (the receiver runs
            # on this same loop and cannot answer before this task yields): emit never waits
            # on delivery. The queue kept its 5 and gave up the rest.
            assert len(rx.got) == 1 and not rx.closing.is_set()
            assert sender.counters["sent"] + sender.counters["failed"] == 0
            assert sender.counters["dropped"] == 45
            await sender.stop(drain_s=0)
        assert sender.counters["dropped"] == 50  # the 5 still queued at stop as well
        assert sender.counters["sent"] == 0

    asyncio.run(main())


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.getMessage()} {vars(record)}")


def test_the_webhook_url_appears_in_no_log_line() -> None:
    collect = _Collect()
    logger = logging.getLogger("railtrace.alerts")
    logger.addHandler(collect)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)

    async def main() -> None:
        async with Receiver([(400, {}, "invalid_token"), (500, {}, "")]).running() as rx:
            fast = settings(max_retries=0, queue_max=1)
            for url in (rx.url, rx.url, f"http://127.0.0.1:{free_port()}/services/{SECRET}"):
                sender = SlackSender(url, fast)
                await sender.start()
                sender.emit(every_kind()[0])
                sender.emit(every_kind()[1])  # the queue holds one: a drop is logged
                await until(lambda s=sender: s.counters["failed"] + s.counters["sent"] == 1)
                await sender.stop()

    try:
        asyncio.run(main())
    finally:
        logger.removeHandler(collect)
        logger.setLevel(old_level)
    assert len(collect.lines) >= 6
    assert not [line for line in collect.lines if SECRET in line]


# --- end to end: `railtrace alert` on the real broker ----------------------------------------


async def _produce(prefix: str) -> None:
    from aiokafka import AIOKafkaProducer

    await ensure_topics(KafkaSettings(bootstrap_servers=BOOTSTRAP, topic_prefix=prefix))
    stalled = wire.encode_records([verdict("job-77")])
    x = XidObservation("gpu7", T0, 79, "0000:3b:00", "GPU has fallen off the bus.")
    decision = Decision("quarantine", "gpu7", T0, "Xid 79 (fallen off the bus)", True, (x,))
    messages = [
        ("verdicts.v1", b"job-77", stalled),
        ("verdicts.v1", b"job-77", stalled),  # redelivered: deduplicated
        ("verdicts.v1", b"junk", b"not json"),  # counted and skipped
        (
            "raw.node-events.v1",
            b"gpu7",
            nodeevents.xid_event(x, "NVRM: Xid", "kmsg", True, decision),
        ),
        ("cabling-events.v1", b"leaf03", wire.encode_records([MISWIRE])),
    ]
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
    await producer.start()
    try:
        for suffix, key, value in messages:
            await producer.send_and_wait(f"{prefix}.{suffix}", value, key=key)
    finally:
        await producer.stop()


async def _until_committed(group: str, prefix: str, timeout: float = 90) -> None:
    """Until consumer group `group` has committed every record on the alerter's topics."""
    names = [
        f"{prefix}.{t}"
        for t in ("verdicts.v1", "raw.node-events.v1", "link-events.v1", "cabling-events.v1")
    ]
    deadline = time.monotonic() + timeout
    while (offsets := await asyncio.to_thread(group_offsets, group, names))[0] < offsets[1]:
        assert time.monotonic() < deadline, f"the alerter committed {offsets[0]} of {offsets[1]}"
        await asyncio.sleep(0.5)


def _scrape(port: int) -> tuple[str, tuple[int, dict[str, Any]]]:
    """The alerter's /metrics text and its /healthz status and body."""
    import json
    import urllib.error
    import urllib.request

    base = f"http://127.0.0.1:{port}"
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
            return metrics, (r.status, json.load(r))
    except (urllib.error.URLError, OSError):
        return "", (0, {})


def test_railtrace_alert_sends_each_alert_once_from_the_topics(tmp_path: Path) -> None:
    require_broker()
    run_id = uuid.uuid4().hex[:10]
    log_path = tmp_path / "alert.log"
    metrics_port = free_port()

    async def main() -> None:
        await _produce(f"t{run_id}")
        async with Receiver().running() as rx:
            env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
            env.update(
                RAILTRACE_KAFKA__BOOTSTRAP_SERVERS=BOOTSTRAP,
                RAILTRACE_KAFKA__TOPIC_PREFIX=f"t{run_id}",
                RAILTRACE_WORKER__APP_ID=f"a{run_id}",
                RAILTRACE_ALERTS__SLACK_WEBHOOK_URL=rx.url,
                RAILTRACE_ALERTS__INCIDENT_BASE_URL=BASE,
                RAILTRACE_ALERTS__FROM_BEGINNING="true",
                RAILTRACE_ALERTS__RATE_PER_S="20",
                RAILTRACE_ALERTS__METRICS_LISTEN=f"127.0.0.1:{metrics_port}",
            )
            with log_path.open("wb") as log:
                proc = await asyncio.create_subprocess_exec(
                    RAILTRACE,
                    "--log-level",
                    "INFO",
                    "alert",
                    env=env,
                    stdout=log,
                    stderr=log,
                )
                try:
                    await until(lambda: len(rx.got) >= 3, timeout=90)
                    # Not a pause for a duplicate to show up: once the group has committed
                    # every record of the four topics, each was judged, and a duplicate
                    # alert would be queued; stopping drains the queue to the receiver.
                    await _until_committed(f"a{run_id}-alerts", f"t{run_id}")
                    await until(lambda: _scrape(metrics_port)[0].count("sent_total 3.0") == 1)
                    metrics, (status, health) = _scrape(metrics_port)
                    assert "railtrace_alert_records_total 5.0" in metrics
                    assert "railtrace_alert_healthy 1.0" in metrics
                    assert status == 200 and health["role"] == "alert" and health["ok"]
                finally:
                    proc.send_signal(signal.SIGTERM)
                    rc = await asyncio.wait_for(proc.wait(), 30)
            logs = log_path.read_text()
            assert rc == 0, logs
            assert rx.problems == []
            headers = sorted(p["blocks"][0]["text"]["text"] for _, p in rx.got)
            assert headers == [
                "Cabling miswired: leaf03:swp1",
                "Job job-77 stalled: link leaf03:Ethernet1/7 <-> gpu-node-12:mlx5_3",
                "Node gpu7 quarantined",
            ], logs
            verdict_msg = next(p for _, p in rx.got if p["text"].startswith("railtrace: job"))
            assert verdict_msg["text"].endswith(f"{BASE}/incidents/job-77")
            stopped = next(line for line in logs.splitlines() if "alerts stopped" in line)
            for counter in ("sent=3", "suppressed=1", "bad_records=1", "dropped=0"):
                assert counter in stopped, stopped
            assert SECRET not in logs
            assert "loopback" not in logs

    asyncio.run(main())


@pytest.mark.parametrize(
    ("incident", "grafana", "warned"),
    [
        ("http://127.0.0.1:8000", None, ["incident_base_url"]),
        ("http://localhost:8000/", "http://[::1]:3000", ["incident_base_url", "grafana_base_url"]),
        ("http://0.0.0.0:8000", "https://grafana.example.net", ["incident_base_url"]),
        ("https://railtrace.example.net", "http://127.0.0.2:3000", ["grafana_base_url"]),
        ("https://railtrace.example.net", None, []),
        ("http://10.1.2.3:8000", None, []),
    ],
)
def test_a_loopback_base_url_is_warned_with_the_setting_that_fixes_it(
    incident: str, grafana: str | None, warned: list[str]
) -> None:
    warnings = unreachable_links(
        AlertSettings(incident_base_url=incident, grafana_base_url=grafana)
    )
    assert len(warnings) == len(warned)
    for name, text in zip(warned, warnings, strict=True):
        assert f"RAILTRACE_ALERTS__{name.upper()}" in text
        assert "will not open for anyone else" in text


def test_the_default_settings_warn_that_slack_links_point_at_this_machine() -> None:
    (warning,) = unreachable_links(AlertSettings())
    assert warning.startswith("alerts.incident_base_url is http://127.0.0.1:8000")


def test_railtrace_alert_without_a_webhook_exits_with_a_clear_message() -> None:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    done = subprocess.run(  # noqa: PLW1510 - return code asserted
        [RAILTRACE, "alert"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "no Slack webhook configured" in done.stderr
    assert "RAILTRACE_ALERTS__SLACK_WEBHOOK_URL" in " ".join(done.stderr.split())


def test_railtrace_alert_warns_once_at_startup_that_default_links_point_at_this_machine() -> None:
    """Before it even reaches the broker (none listens here), so the warning is the first
    thing a deployment's log shows."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env.update(
        RAILTRACE_ALERTS__SLACK_WEBHOOK_URL="http://127.0.0.1:9/hook",
        RAILTRACE_KAFKA__BOOTSTRAP_SERVERS=f"127.0.0.1:{free_port()}",
    )
    done = subprocess.run(  # noqa: PLW1510 - the broker is absent: only the log is checked
        [RAILTRACE, "alert"], env=env, capture_output=True, text=True, timeout=60
    )
    logs = " ".join(done.stderr.split())
    assert logs.count("will not open for anyone else") == 1, done.stderr
    assert "RAILTRACE_ALERTS__INCIDENT_BASE_URL" in logs


def test_railtrace_alert_shows_times_in_the_site_zone() -> None:
    from zoneinfo import ZoneInfo

    from railtrace.alerts.consumer import AlertConsumer
    from railtrace.settings import Settings

    settings = Settings(site={"timezone": "Europe/Berlin"}, alerts={"incident_base_url": BASE})
    sent: list[Alert] = []

    class Collect:
        def emit(self, alert: Alert) -> None:
            sent.append(alert)

    consumer = AlertConsumer(settings, Collect())
    assert consumer.policy.zone == ZoneInfo("Europe/Berlin")
    asyncio.run(consumer.handle(consumer.verdicts, b"job", wire.encode_records([verdict()])))
    (alert,) = sent
    assert "*Stalled at*\n2026-05-05 06:16:47 UTC (08:16:47 CEST)" in [
        f["text"] for f in alert.payload["blocks"][1]["fields"]
    ]


def test_the_alerter_reads_the_fabric_for_next_steps_and_runs_without_a_broken_one(
    tmp_path: Path,
) -> None:
    from railtrace.compose.fabric import alert_topology
    from railtrace.settings import Settings
    from railtrace.simulate import Fault, write_capture

    said: list[str] = []
    write_capture(tmp_path / "cap", 64, Fault.LINK_DOWN, 1)
    fabric = alert_topology(Settings(api={"topology_dir": str(tmp_path / "cap")}), said.append)
    assert fabric is not None and fabric.role("leaf-su01-r0") == "leaf"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cables.csv").write_text("not,a,cabling,plan\n")
    broken = Settings(worker={"topology_dir": str(tmp_path / "broken")})
    assert alert_topology(broken, said.append) is None
    assert said and said[0].startswith("topology not loaded: link alerts carry no next steps")
    assert alert_topology(Settings(), said.append) is None
