"""Each collector's /metrics and /healthz, scraped over real HTTP while it collects from real
peers: the gRPC gNMI server, Debian's snmpd and snmptrap, log and kernel-log files; Kafka is a
port with nothing listening unless a test needs the real broker."""

from __future__ import annotations

import asyncio
import contextlib
import doctest
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from gnmi_server import GnmiServer, SwitchState
from kafka_support import BOOTSTRAP, RAILTRACE, free_port, require_broker
from prometheus_client.parser import text_string_to_metric_families
from snmp_support import free_udp_port, running_snmpd, snmptrap

from railtrace.collectors import health, registry, run
from railtrace.collectors.health import Readings, TargetState, assess
from railtrace.collectors.metrics import PREFIX
from railtrace.probes import endpoint
from railtrace.settings import Settings

pytestmark = pytest.mark.timeout(120)

README = Path(__file__).resolve().parents[1] / "deploy" / "collectors" / "README.md"
PLAIN_LINE = "h1:10:10 [0] NCCL INFO Channel 00/02 :    0   1   2   3"


@dataclass
class Scrape:
    """One /metrics answer: `value(name, **labels)` is the sample whose labels include those
    given (0 when there is none, as Prometheus reads an absent counter)."""

    families: list[Any]

    def value(self, name: str, **labels: str) -> float:
        found = [
            s.value
            for f in self.families
            for s in f.samples
            if s.name == name and labels.items() <= s.labels.items()
        ]
        assert len(found) <= 1, (name, labels, found)
        return found[0] if found else 0.0

    def names(self) -> set[str]:
        """Our metric families (a histogram's `_created` series is the client library's)."""
        return {
            f.name.removesuffix("_created")
            for f in self.families
            if f.name.startswith("railtrace_collector_")
        }


@dataclass
class Client:
    http: aiohttp.ClientSession
    base: str
    role: str

    async def metrics(self) -> Scrape:
        async with self.http.get(self.base + "/metrics") as resp:
            assert resp.status == 200
            text = await resp.text()
        scrape = Scrape(list(text_string_to_metric_families(text)))
        undocumented = {n for n in scrape.names() if f"`{n}" not in README.read_text()}
        assert not undocumented, f"metrics missing from {README}: {sorted(undocumented)}"
        # A collector's own families (named after it) are the ones its spec declares.
        own = {n for n in scrape.names() if n.startswith(f"{PREFIX}{self.role}_")}
        undeclared = own - {PREFIX + f for f in registry.spec(self.role).families}
        assert not undeclared, f"families the {self.role} spec does not name: {undeclared}"
        return scrape

    async def health(self) -> tuple[int, dict[str, Any]]:
        async with self.http.get(self.base + "/healthz") as resp:
            return resp.status, orjson.loads(await resp.read())

    async def until(self, check: Callable[[Scrape], bool], timeout: float = 30) -> Scrape:
        deadline = time.monotonic() + timeout
        while True:
            scrape = await self.metrics()
            if check(scrape):
                return scrape
            assert time.monotonic() < deadline, "metrics never got there"
            await asyncio.sleep(0.1)

    async def until_health(
        self, check: Callable[[int, dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            status, doc = await self.health()
            if check(status, doc):
                return doc
            assert time.monotonic() < deadline, f"health never got there: {status} {doc}"
            await asyncio.sleep(0.1)


def settings(tmp: Path, role: str, bootstrap: str | None = None, **collect: Any) -> Settings:
    """Settings for one collector: any free port for its endpoint, a spool under `tmp`, and
    Kafka at `bootstrap` (default: a port nothing listens on)."""
    return Settings(
        kafka={
            "bootstrap_servers": bootstrap or f"127.0.0.1:{free_port()}",
            "topic_prefix": f"m{uuid.uuid4().hex[:8]}",
        },
        collect={
            "spool_dir": tmp / "spool",
            "metrics_listen": {role: "127.0.0.1:0"},
            **collect,
        },
    )


@contextlib.asynccontextmanager
async def collector(s: Settings, role: str) -> AsyncIterator[Client]:
    """The collector process `railtrace collect <role>` runs, in this event loop."""
    process = run.CollectorProcess(s, role)
    stop = asyncio.Event()
    task = asyncio.create_task(process.run(stop))
    try:
        deadline = time.monotonic() + 20
        while not process.endpoint.address:
            if task.done():
                task.result()
            assert time.monotonic() < deadline, "the endpoint never listened"
            await asyncio.sleep(0.02)
        async with aiohttp.ClientSession() as http:
            yield Client(http, f"http://{process.endpoint.address}", role)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        process.close()


@pytest.fixture(autouse=True)
def _short_final_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kafka is away in most tests: the spool cannot empty, so don't wait for it at the end.
    monkeypatch.setattr(run, "FINAL_DRAIN_S", 0.2)


def problems(doc: dict[str, Any]) -> set[str]:
    return {p.split(":", 1)[0] for p in doc["problems"]}


# -- the health rules ---------------------------------------------------------------------------

UP, DOWN_LONG = TargetState(None, "streaming"), TargetState(10.0, "backoff")
HEALTH_CASES = [
    ("all calm", Readings(100.0, 0, 1000, None), set()),
    ("spool at 90% is still fine", Readings(100.0, 900, 1000, None), set()),
    ("spool past 90%", Readings(100.0, 901, 1000, None), {"spool"}),
    ("delivery failing within grace", Readings(100.0, 0, 1000, 50.0, "x"), set()),
    ("delivery failing past grace", Readings(100.0, 0, 1000, 30.0, "x"), {"delivery"}),
    (
        "one target down, one up",
        Readings(100.0, 0, 1000, None, targets={"a": UP, "b": DOWN_LONG}),
        set(),
    ),
    (
        "every target down past grace",
        Readings(100.0, 0, 1000, None, targets={"a": DOWN_LONG, "b": DOWN_LONG}),
        {"targets"},
    ),
    (
        "every target down, the last one lost within grace",
        Readings(100.0, 0, 1000, None, targets={"a": DOWN_LONG, "b": TargetState(95.0, "x")}),
        set(),
    ),
    ("no targets at all (logs, xid)", Readings(100.0, 0, 1000, None, targets={}), set()),
]


@pytest.mark.parametrize(
    ("readings", "expected"), [c[1:] for c in HEALTH_CASES], ids=[c[0] for c in HEALTH_CASES]
)
def test_health_rules(readings: Readings, expected: set[str]) -> None:
    got = assess("gnmi", readings, grace_s=60.0)
    assert {p.split(":", 1)[0] for p in got.problems} == expected
    assert got.ok is (not expected)


@pytest.mark.parametrize("module", [health, endpoint])
def test_docstring_examples_hold(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


# -- gNMI ---------------------------------------------------------------------------------------


def test_gnmi_updates_are_counted_and_a_lost_target_is_reconnected_and_turns_health_bad(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        server = await GnmiServer().start()
        target = {
            "name": "leaf1",
            "address": server.address,
            "insecure": True,
            "sample_interval_s": 1.0,
            "connect_timeout_s": 2,
            "backoff": {"initial_s": 0.05, "max_s": 0.2},
        }
        s = settings(tmp_path, "gnmi", gnmi=[target], health_grace_s=1.0)
        async with collector(s, "gnmi") as client:
            up = await client.until(
                lambda m: (
                    m.value("railtrace_collector_gnmi_session_up", target="leaf1") == 1
                    and m.value("railtrace_collector_gnmi_notifications_total", target="leaf1") >= 4
                )
            )
            updates = up.value("railtrace_collector_gnmi_updates_total", target="leaf1")
            notifications = up.value("railtrace_collector_gnmi_notifications_total")
            assert updates >= notifications >= 4
            assert up.value("railtrace_collector_gnmi_connects_total", target="leaf1") == 1
            assert up.value("railtrace_collector_gnmi_reconnects_total", target="leaf1") == 0
            emitted = up.value("railtrace_collector_messages_emitted_total", stream="gnmi")
            assert emitted == up.value("railtrace_collector_gnmi_messages_total") >= 4
            status, doc = await client.health()
            assert doc["role"] == "gnmi"
            assert doc["targets"] == {"leaf1": {"up": True, "state": "streaming"}}
            assert "targets" not in problems(doc)

            await server.stop()
            lost = await client.until(
                lambda m: (
                    m.value("railtrace_collector_gnmi_session_up", target="leaf1") == 0
                    and m.value("railtrace_collector_gnmi_reconnects_total", target="leaf1") >= 2
                )
            )
            assert lost.value("railtrace_collector_gnmi_connects_total") == 1
            doc = await client.until_health(lambda st, d: "targets" in problems(d))
            status, doc = await client.health()
            assert status == 503 and doc["ok"] is False
            assert doc["targets"]["leaf1"]["up"] is False
            assert "UNAVAILABLE" in doc["targets"]["leaf1"]["error"]
            scrape = await client.metrics()
            assert scrape.value("railtrace_collector_healthy", role="gnmi") == 0

    asyncio.run(main())


def test_a_gnmi_target_whose_every_update_is_malformed_is_unhealthy_though_its_session_is_up(
    tmp_path: Path,
) -> None:
    """/healthz used to call such a target up: its stream was open, though nothing in it was
    usable (openconfig's reference fake target, whose every path was unread, looked so)."""

    async def main() -> None:
        server = await GnmiServer(SwitchState(only_malformed=True)).start()
        target = {
            "name": "leaf1",
            "address": server.address,
            "insecure": True,
            "sample_interval_s": 1.0,
            "connect_timeout_s": 2,
        }
        s = settings(tmp_path, "gnmi", gnmi=[target], health_grace_s=1.0)
        try:
            async with collector(s, "gnmi") as client:
                doc = await client.until_health(lambda st, d: "targets" in problems(d))
                scrape = await client.metrics()
        finally:
            await server.stop()
        assert doc["ok"] is False  # (Kafka is away too: `delivery` may be a problem as well)
        leaf1 = doc["targets"]["leaf1"]
        assert leaf1["up"] is False and leaf1["state"] == "malformed"
        assert leaf1["error"].startswith("every update malformed: ")
        assert scrape.value("railtrace_collector_gnmi_session_up", target="leaf1") == 1
        assert scrape.value("railtrace_collector_gnmi_malformed_updates_total") >= 3

    asyncio.run(main())


def test_gnmi_fallbacks_and_odd_timestamps_are_counted_per_target(tmp_path: Path) -> None:
    async def main() -> None:
        state = SwitchState(capabilities=False, stamp_unit_ns=10**6)
        server = await GnmiServer(state).start()
        target = {
            "name": "leaf1",
            "address": server.address,
            "insecure": True,
            "sample_interval_s": 1.0,
            "fallback_encoding": "JSON",
        }
        s = settings(tmp_path, "gnmi", gnmi=[target])
        try:
            async with collector(s, "gnmi") as client:
                scrape = await client.until(
                    lambda m: m.value("railtrace_collector_gnmi_messages_total") >= 4
                )
                status, doc = await client.health()
        finally:
            await server.stop()
        fallbacks = "railtrace_collector_gnmi_capabilities_fallbacks_total"
        assert scrape.value(fallbacks, target="leaf1") == 1
        odd = "railtrace_collector_gnmi_odd_timestamps_total"
        assert scrape.value(odd, target="leaf1", reason="ms") >= 4
        assert scrape.value(odd, target="leaf1", reason="rejected") == 0
        assert status == 200 and doc["targets"]["leaf1"]["state"] == "streaming"

    asyncio.run(main())


# -- SNMP ---------------------------------------------------------------------------------------

LINK_DOWN = "1.3.6.1.6.3.1.1.5.3"


def link_down(index: int) -> tuple[str, ...]:
    """snmptrap's arguments after the destination for a linkDown of ifIndex `index`."""
    return (
        "",  # uptime: snmptrap fills in its own
        LINK_DOWN,
        f"1.3.6.1.2.1.2.2.1.1.{index}", "i", str(index),
        f"1.3.6.1.2.1.2.2.1.8.{index}", "i", "2",
    )  # fmt: skip


def test_snmp_polls_timeouts_and_traps_are_counted_per_target(tmp_path: Path) -> None:
    with running_snmpd(tmp_path / "snmpd") as agent:
        trap_port = free_udp_port()
        targets = [
            {
                "name": "agent",
                "host": agent.host,
                "port": agent.port,
                "community": agent.community,
                "interval_s": 1,
                "timeout_s": 0.5,
                "retries": 0,
            },
            {
                "name": "silent",
                "host": "127.0.0.1",
                "port": free_udp_port(),
                "community": "public",
                "interval_s": 1,
                "timeout_s": 0.3,
                "retries": 0,
            },
        ]
        traps = {"host": "127.0.0.1", "port": trap_port, "communities": ["public"]}
        s = settings(tmp_path, "snmp", snmp={"targets": targets, "traps": traps})

        async def main() -> None:
            async with collector(s, "snmp") as client:
                polled = await client.until(
                    lambda m: (
                        m.value("railtrace_collector_snmp_poll_successes_total", target="agent")
                        >= 1
                        and m.value("railtrace_collector_snmp_poll_timeouts_total", target="silent")
                        >= 1
                        # counted as a success before its message is handed over: wait for both
                        and m.value("railtrace_collector_messages_emitted_total", stream="snmp")
                        >= 1
                    )
                )
                value = polled.value
                assert value("railtrace_collector_snmp_target_up", target="agent") == 1
                assert value("railtrace_collector_snmp_target_up", target="silent") == 0
                assert value("railtrace_collector_snmp_poll_failures_total", target="agent") == 0
                assert value(
                    "railtrace_collector_snmp_poll_failures_total", target="silent"
                ) == value("railtrace_collector_snmp_poll_timeouts_total", target="silent")
                durations = "railtrace_collector_snmp_poll_duration_seconds_count"
                assert value(durations, target="agent") >= 1
                assert value(durations, target="silent") >= 1
                assert value("railtrace_collector_messages_emitted_total", stream="snmp") >= 1
                _, doc = await client.health()
                assert doc["targets"]["agent"]["up"] is True
                assert doc["targets"]["silent"]["up"] is False
                assert "timeout" in doc["targets"]["silent"]["error"]
                assert "targets" not in problems(doc)  # one agent answering is enough

                for community in ("public", "not-the-community"):
                    await asyncio.to_thread(
                        snmptrap, tmp_path, "-v", "2c", "-c", community,
                        f"127.0.0.1:{trap_port}", *link_down(7),
                    )  # fmt: skip
                trapped = await client.until(
                    lambda m: (
                        m.value("railtrace_collector_snmp_traps_received_total") == 1
                        and m.value(
                            "railtrace_collector_snmp_traps_rejected_total",
                            reason="snmpInBadCommunityNames",
                        )
                        == 1
                    )
                )
                rejected = "railtrace_collector_snmp_traps_rejected_total"
                assert trapped.value(rejected, reason="unknown") == 0
                assert trapped.value(rejected, reason="malformed") == 0

        asyncio.run(main())


# -- logs ---------------------------------------------------------------------------------------


def _logs(tmp: Path, **overrides: Any) -> dict[str, Any]:
    return {
        "paths": [f"{tmp / 'jobs'}/{{job_id}}/*.log"],
        "state_file": tmp / "offsets.json",
        "idle_flush_ms": 50,
        **overrides,
    }


def test_collect_logs_serves_its_metrics_and_health_from_the_settings_file(
    tmp_path: Path,
) -> None:
    """The whole path a user takes: the CLI, a settings file, a port chosen by the system."""
    config = tmp_path / "railtrace.toml"
    config.write_text(
        f"""
[kafka]
bootstrap_servers = "127.0.0.1:{free_port()}"

[collect]
spool_dir = "{tmp_path / "spool"}"

[collect.metrics_listen]
logs = "127.0.0.1:0"

[collect.logs]
paths = ["{tmp_path / "jobs"}/{{job_id}}/*.log"]
state_file = "{tmp_path / "offsets.json"}"
idle_flush_ms = 50
"""
    )
    log_file = tmp_path / "jobs" / "4242" / "rank0.log"
    log_file.parent.mkdir(parents=True)
    log_file.write_text(PLAIN_LINE + "\n")
    stderr = tmp_path / "collector.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    with stderr.open("wb") as out:
        proc = subprocess.Popen(
            [
                RAILTRACE,
                "--log-json",
                "--log-level",
                "INFO",
                "--config",
                str(config),
                "collect",
                "logs",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        base = "http://" + _listening(stderr, proc)

        def scrape() -> Scrape:
            with urllib.request.urlopen(base + "/metrics", timeout=10) as resp:
                return Scrape(list(text_string_to_metric_families(resp.read().decode())))

        first = _until(scrape, lambda m: m.value("railtrace_collector_logs_lines_total") == 1)
        assert first.value("railtrace_collector_logs_files_followed", role="logs") == 1
        with log_file.open("a") as f:
            f.write(f"{PLAIN_LINE}\n" * 4)
        later = _until(scrape, lambda m: m.value("railtrace_collector_logs_lines_total") == 5)
        assert later.value("railtrace_collector_messages_emitted_total", stream="logs") >= 2
        assert later.value("railtrace_collector_logs_files_adopted_total") == 1
        assert later.value("railtrace_collector_messages_delivered_total") == 0
        with urllib.request.urlopen(base + "/healthz", timeout=10) as resp:
            doc = orjson.loads(resp.read())
        assert doc["role"] == "logs" and doc["files_followed"] == 1
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0, stderr.read_text()[-3000:]


def _listening(stderr: Path, proc: subprocess.Popen[bytes]) -> str:
    """The address the collector's log says its endpoint is listening on."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in stderr.read_text(errors="replace").splitlines():
            if line.startswith("{") and '"metrics endpoint listening"' in line:
                return str(orjson.loads(line)["address"])
        assert proc.poll() is None, stderr.read_text()[-3000:]
        time.sleep(0.1)
    raise AssertionError(f"no endpoint address logged:\n{stderr.read_text()[-3000:]}")


def _until(scrape: Callable[[], Scrape], check: Callable[[Scrape], bool]) -> Scrape:
    deadline = time.monotonic() + 30
    while not check(got := scrape()):
        assert time.monotonic() < deadline, "metrics never got there"
        time.sleep(0.1)
    return got


def test_a_full_spool_with_kafka_away_counts_its_drops_and_reports_itself(
    tmp_path: Path,
) -> None:
    lines = 60_000  # ~6 MiB: more than a 4 MiB segment past a 1 MiB spool
    log_file = tmp_path / "jobs" / "7" / "rank0.log"
    log_file.parent.mkdir(parents=True)
    log_file.write_text(f"{PLAIN_LINE} {'x' * 40}\n" * lines)
    s = settings(tmp_path, "logs", logs=_logs(tmp_path), spool_max_bytes=1 << 20)

    async def main() -> None:
        async with collector(s, "logs") as client:
            full = await client.until(
                lambda m: (
                    m.value("railtrace_collector_logs_lines_total") == lines
                    and m.value("railtrace_collector_spool_dropped_total", stream="logs") > 0
                )
            )
            batches = full.value("railtrace_collector_logs_batches_total")
            dropped = full.value("railtrace_collector_spool_dropped_total", stream="logs")
            assert full.value("railtrace_collector_messages_emitted_total") == batches > dropped
            assert full.value("railtrace_collector_messages_delivered_total") == 0
            assert full.value("railtrace_collector_delivery_failures_total") >= 1
            assert full.value("railtrace_collector_kafka_connected") == 0
            assert full.value("railtrace_collector_spool_segments") >= 2
            assert full.value("railtrace_collector_spool_bytes") > 0.9 * (1 << 20)
            assert full.value("railtrace_collector_spool_oldest_unsent_age_seconds") > 0
            assert full.value("railtrace_collector_healthy") == 0
            status, doc = await client.health()
            assert status == 503
            assert "spool" in problems(doc)
            assert doc["spool"]["dropped"] == dropped

    asyncio.run(main())


def test_delivered_messages_are_counted_and_a_collector_with_a_broker_is_healthy(
    tmp_path: Path,
) -> None:
    require_broker()
    log_file = tmp_path / "jobs" / "9" / "rank0.log"
    log_file.parent.mkdir(parents=True)
    log_file.write_text(f"{PLAIN_LINE}\n" * 3)
    s = settings(tmp_path, "logs", BOOTSTRAP, logs=_logs(tmp_path))

    async def main() -> None:
        async with collector(s, "logs") as client:
            sent = await client.until(
                lambda m: (
                    m.value("railtrace_collector_messages_delivered_total") >= 1
                    and m.value("railtrace_collector_spool_bytes") == 0
                ),
                timeout=60,
            )
            assert sent.value("railtrace_collector_messages_delivered_total") == sent.value(
                "railtrace_collector_messages_emitted_total", stream="logs"
            )
            assert sent.value("railtrace_collector_kafka_connected") == 1
            assert sent.value("railtrace_collector_spool_oldest_unsent_age_seconds") == 0
            assert sent.value("railtrace_collector_healthy") == 1
            status, doc = await client.health()
            assert (status, doc["ok"], doc["problems"]) == (200, True, [])

    asyncio.run(main())


# -- Xid ----------------------------------------------------------------------------------------

XID79 = (
    "2026-12-06T18:44:12+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus."
)


def test_xids_and_quarantines_are_counted(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("2026-12-06T18:44:11+0000 gpu7 kernel: mlx5_core: link up\n")
    xid = {"file": kern, "state_file": tmp_path / "xid.json", "poll_interval_ms": 20}
    s = settings(tmp_path, "xid", xid=xid)

    async def main() -> None:
        async with collector(s, "xid") as client:
            await client.until(lambda m: m.value("railtrace_collector_xid_kernel_lines_total") == 1)
            with kern.open("a") as f:
                f.write(XID79 + "\n")
            got = await client.until(
                lambda m: m.value("railtrace_collector_xid_node_events_total") == 1
            )
            assert got.value("railtrace_collector_xid_events_total") == 1
            assert got.value("railtrace_collector_xid_quarantines_total") == 1
            assert got.value("railtrace_collector_xid_quarantined_nodes") == 1
            assert (
                got.value("railtrace_collector_messages_emitted_total", stream="node-events") == 1
            )
            _, doc = await client.health()
            assert doc["quarantined"] == ["gpu7"]

    asyncio.run(main())
