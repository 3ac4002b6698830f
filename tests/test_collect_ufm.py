"""`railtrace collect ufm` against a real HTTP server speaking UFM Telemetry's Prometheus text:
counters that rise between polls, a garbled line, an unmapped GUID, a port going Down, dead
and hanging endpoints, the mapping CSV's errors, and the real process onto Kafka."""

from __future__ import annotations

import asyncio
import contextlib
import doctest
import logging
import os
import random
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from kafka_support import BOOTSTRAP, RAILTRACE, free_port, read_topic, require_broker
from prometheus_client.parser import text_string_to_metric_families

from railtrace.collectors import run
from railtrace.collectors.backoff import next_delay
from railtrace.collectors.emit import Collected
from railtrace.collectors.ufm import (
    SwitchNamesError,
    UfmCollectorConfig,
    UfmEndpoint,
    names,
    parse_switches_csv,
    prometheus,
)
from railtrace.collectors.ufm.collector import UfmCollector
from railtrace.collectors.ufm.prometheus import parse_text
from railtrace.settings import Settings
from railtrace.streams.records import Metric, TelemetryValue
from railtrace.streams.telemetry import decode_message

pytestmark = pytest.mark.timeout(120)

README = Path(__file__).resolve().parents[1] / "deploy" / "collectors" / "README.md"
LEAF = "0x0002c90300f172a0"  # written as UFM's `source` label writes it
LEAF_SHORT = "2c90300f172a0"  # and as its `node_guid` label does
SPINE = "b8cef60300a1b2c3"
STRANGER = "0x00000000deadbeef"
SWITCHES = f"""node_guid,device,port_num,interface
{LEAF_SHORT},ib-leaf-01,,
{LEAF},ib-leaf-01,1,sw1p1
0x{SPINE.upper()},ib-spine-01,,
"""
T0_MS = 1_700_000_000_000


def labels(guid: str, port: int) -> str:
    short = guid.lower().removeprefix("0x").lstrip("0")
    return (
        f'source="0x{short.zfill(16)}", node_guid="{short}", '
        f'port_guid="{short[:-1]}{port}", port_num="{port}"'
    )


def ufm_text(n: int) -> str:
    """UFM's answer to its n-th request (0-based): counters rise by n, time by n seconds, and
    port 2 of the leaf goes from Active to Down at n = 1."""
    ts = T0_MS + n * 1000
    leaf1, leaf2, spine = labels(LEAF, 1), labels(LEAF, 2), labels(SPINE, 7)
    lines = [
        "# TYPE PortXmitDataExtended counter",
        f"PortXmitDataExtended{{{leaf1}}} {85554128244 + n * 1000} {ts}",
        f"PortRcvDataExtended{{{leaf1}}} {2**62 + n * 250} {ts}",
        f"PortXmitPktsExtended{{{leaf1}}} {1188251785 + n} {ts}",
        f"SymbolErrorCounterExtended{{{leaf1}}} {3 + n} {ts}",
        f"LinkDownedCounterExtended{{{leaf2}}} {n} {ts}",
        f"PortFECCorrectableBlockCounter{{{leaf2}}} {100 * n} {ts}",
        f"PortXmitWaitExtended{{{leaf1}}} {999 + n} {ts}",  # IB credit wait: not mapped
        f"logical_state{{{leaf1}}} 4 {ts}",  # IB PortState 4 = Active
        f"logical_state{{{leaf2}}} {'Active' if n == 0 else 'Down'} {ts}",
        'PortRcvErrorsExtended{node_guid="2c90300f172a0", port_num="2" 17',  # garbled
        f"PortRcvErrorsExtended{{{spine}}} {5 + n} {ts}",
        f"PortXmitDataExtended{{{labels(STRANGER, 1)}}} {n} {ts}",  # not in the CSV
    ]
    return "\n".join(lines) + "\n"


@dataclass
class UfmServer:
    """A UFM Telemetry endpoint on a thread of its own: `/metrics` answers ufm_text(n) for
    its n-th request (n frozen while `frozen`), `/hang` never answers."""

    url: str = ""
    requests: int = 0
    frozen: bool = False
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    async def _metrics(self, _: web.Request) -> web.Response:
        n = self.requests
        if not self.frozen:
            self.requests += 1
        return web.Response(text=ufm_text(n), content_type="text/plain")

    async def _hang(self, _: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def serving(self) -> Iterator[UfmServer]:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/hang", self._hang)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        port = free_port()
        self._loop.run_until_complete(runner.setup())
        self._loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
        thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            thread.join(10)
            self._loop.close()


@pytest.fixture
def server() -> Iterator[UfmServer]:
    with UfmServer().serving() as s:
        yield s


def config(tmp: Path, *endpoints: dict[str, Any]) -> UfmCollectorConfig:
    switches = tmp / "switches.csv"
    switches.write_text(SWITCHES)
    return UfmCollectorConfig(endpoints=endpoints, switches=switches)  # type: ignore[arg-type]


def collector(cfg: UfmCollectorConfig, emit: Collected) -> UfmCollector:
    assert cfg.switches is not None
    switch_names = parse_switches_csv(cfg.switches.read_text(), cfg.interface_template)
    return UfmCollector(cfg, switch_names, emit, rng=random.Random(1))


def values(emit: Collected) -> list[TelemetryValue]:
    return [v for m in emit.on("gnmi") for v in decode_message(orjson.loads(m.value))]


def value(got: list[TelemetryValue], ts_ms: int, interface: str, metric: Metric) -> Any:
    found = [
        v.value
        for v in got
        if v.ts_ns == ts_ms * 1_000_000 and v.interface == interface and v.metric == metric
    ]
    assert len(found) == 1, (ts_ms, interface, metric, found)
    return found[0]


# -- polling one endpoint -----------------------------------------------------------------------


def test_polls_become_openconfig_gnmi_messages_per_switch(
    tmp_path: Path, server: UfmServer, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config(tmp_path, {"name": "ufm-a", "url": server.url})
    assert cfg.endpoints[0].url == server.url + "/metrics"  # the default path
    emit = Collected()
    ufm = collector(cfg, emit)

    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            for _ in range(2):
                assert await ufm.poll_once(http, cfg.endpoints[0])

    with caplog.at_level(logging.WARNING, logger="railtrace.collectors.ufm.collector"):
        asyncio.run(main())

    messages = emit.on("gnmi")
    assert [(m.key, m.state_change) for m in messages] == [
        (b"ib-leaf-01", False),
        (b"ib-spine-01", False),
        (b"ib-leaf-01", True),  # port 2 went Down
        (b"ib-spine-01", False),
    ]
    first = orjson.loads(messages[0].value)
    assert first["source"] == "ib-leaf-01" and first["subscription-name"] == "ufm"
    assert first["timestamp"] == messages[0].ts_ns == T0_MS * 1_000_000
    assert first["time"] == "2023-11-14T22:13:20Z"
    out_octets = "state/counters/out-octets"
    assert {
        "Path": f"interface[name=sw1p1]/{out_octets}",
        "values": {f"interface/{out_octets}": 85554128244 * 4},
    } in first["updates"]

    got = values(emit)
    assert {v.device for v in got} == {"ib-leaf-01", "ib-spine-01"}
    for n in (0, 1):
        ts = T0_MS + n * 1000
        assert value(got, ts, "sw1p1", Metric.OUT_OCTETS) == (85554128244 + n * 1000) * 4
        # past 2**64 octets: sent as a counter64 that wrapped, exact to the octet
        assert value(got, ts, "sw1p1", Metric.IN_OCTETS) == (2**62 + n * 250) * 4 % 2**64
        assert value(got, ts, "sw1p1", Metric.OUT_PKTS) == 1188251785 + n
        assert value(got, ts, "sw1p1", Metric.SYMBOL_ERRORS) == 3 + n
        assert value(got, ts, "sw1p1", Metric.OPER_STATUS) == "up"
        assert value(got, ts, "2", Metric.CARRIER_TRANSITIONS) == n
        assert value(got, ts, "2", Metric.FEC_CORRECTED) == 100 * n
        assert value(got, ts, "2", Metric.OPER_STATUS) == ("up" if n == 0 else "down")
        assert value(got, ts, "7", Metric.IN_ERRORS) == 5 + n
    assert not [v for v in got if v.interface == "2" and v.metric == Metric.IN_ERRORS]

    stats = ufm.stats["ufm-a"]
    assert (stats.polls, stats.successes, stats.failures, stats.down_since) == (2, 2, 0, None)
    assert stats.samples == 2 * 11  # every line but the comment and the garbled one
    assert stats.malformed == 2
    assert stats.unmapped_guids == 1 and stats.unmapped_samples == 2
    assert stats.not_mapped == 2  # PortXmitWaitExtended, twice
    assert (stats.messages, stats.state_changes, stats.stale) == (4, 1, 0)
    unmapped = [r for r in caplog.records if getattr(r, "node_guid", None) == "deadbeef"]
    assert len(unmapped) == 1  # logged once, not once per poll


def test_a_sample_time_that_did_not_move_is_not_sent_twice(
    tmp_path: Path, server: UfmServer
) -> None:
    cfg = config(tmp_path, {"name": "ufm-a", "url": server.url + "/metrics"})
    emit = Collected()
    ufm = collector(cfg, emit)
    server.frozen = True

    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            await ufm.poll_once(http, cfg.endpoints[0])
            await ufm.poll_once(http, cfg.endpoints[0])

    asyncio.run(main())
    assert len(emit.on("gnmi")) == 2  # one per switch, from the first poll only
    assert ufm.stats["ufm-a"].stale == 2


def test_data_unit_bytes_one_takes_the_counter_as_bytes(tmp_path: Path, server: UfmServer) -> None:
    cfg = config(tmp_path, {"name": "ufm-a", "url": server.url}).model_copy(
        update={"data_unit_bytes": 1}
    )
    emit = Collected()

    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            await collector(cfg, emit).poll_once(http, cfg.endpoints[0])

    asyncio.run(main())
    assert value(values(emit), T0_MS, "sw1p1", Metric.OUT_OCTETS) == 85554128244


def test_dead_and_hanging_endpoints_are_counted_and_do_not_stall_the_live_one(
    tmp_path: Path, server: UfmServer
) -> None:
    cfg = config(
        tmp_path,
        {"name": "live", "url": server.url, "interval_s": 1},
        {"name": "dead", "url": f"http://127.0.0.1:{free_port()}/metrics", "interval_s": 1},
        {"name": "hung", "url": server.url + "/hang", "interval_s": 1, "timeout_s": 1},
        # Still waiting for its first answer when the live one has answered three times: the
        # live one was polled beside it, not after it (no wall-clock bound needed).
        {"name": "stuck", "url": server.url + "/hang", "interval_s": 1, "timeout_s": 600},
    )
    emit = Collected()
    ufm = collector(cfg, emit)

    async def main() -> None:
        task = asyncio.create_task(ufm.run())
        deadline = time.monotonic() + 120
        while ufm.stats["live"].successes < 3 or ufm.stats["hung"].failures < 1:
            assert not task.done(), task
            assert time.monotonic() < deadline, ufm.stats
            await asyncio.sleep(0.05)
        stuck = ufm.stats["stuck"]
        assert (stuck.successes, stuck.failures) == (0, 0), stuck
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    live, dead, hung = (ufm.stats[n] for n in ("live", "dead", "hung"))
    assert live.down_since is None and live.failures == 0 and live.messages >= 6
    assert dead.successes == 0 and dead.failures >= 1 and dead.down_since is not None
    assert "Connect" in (dead.last_error or ""), dead.last_error
    assert hung.successes == 0 and hung.last_error == "timed out"
    assert {m.key for m in emit.on("gnmi")} == {b"ib-leaf-01", b"ib-spine-01"}


def test_backoff_grows_per_failure_up_to_its_ceiling() -> None:
    endpoint = UfmEndpoint(name="x", url="http://h", interval_s=10, backoff_max_s=60)
    rng = random.Random(3)
    delays = [
        next_delay(endpoint.interval_s, endpoint.backoff_max_s, failures, rng)
        for failures in (0, 1, 2, 3, 50)
    ]
    for got, base in zip(delays, (10, 20, 40, 60, 60), strict=True):
        assert base * 0.9 <= got <= base * 1.1


# -- the text and the mapping file ---------------------------------------------------------------


@pytest.mark.parametrize("module", [prometheus, names])
def test_docstring_examples_hold(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_one_garbled_line_costs_only_itself() -> None:
    text = ufm_text(0)
    with pytest.raises(ValueError):  # why the collector has its own reader
        list(text_string_to_metric_families(text))
    parsed = parse_text(text)
    assert [line for line, _ in parsed.malformed] == [11]
    assert len(parsed.samples) == 11
    assert parsed.samples[-1].labels["node_guid"] == "deadbeef"


@pytest.mark.parametrize(
    ("csv_text", "expected"),
    [
        ("guid,device\n1,a\n", "missing column(s) node_guid"),
        ("node_guid,device\n1,a\nxyz,b\n", "switches.csv line 3: not a 64-bit hex GUID: 'xyz'"),
        ("node_guid,device\n0x01,a\n1,b\n", "line 3: GUID 1 is 'b' here, 'a' on line 2"),
        ("node_guid,device\n1,\n", "line 2: empty device"),
        ("node_guid,device\n1,leaf:1\n", "line 2: device 'leaf:1' would be read as host:port"),
        (
            "node_guid,device,port_num,interface\n1,a,0,x\n1,a,300,y\n",
            "line 2: port_num '0' is not an IB port number",
        ),
        ("node_guid,device,port_num,interface\n1,a,1,\n", "line 2: empty interface"),
        ("node_guid,device,port_num,interface\n1,a,1,sw 1\n", "contains whitespace or brackets"),
        ("node_guid,device,port_num,interface\n1,a,1,x\n1,a,2,x\n", "'x' is given to GUID 1"),
        ("node_guid,device\n1,a\n2,a\n", "device 'a' is named by GUIDs 1, 2"),
    ],
)
def test_mapping_file_errors_name_their_lines(csv_text: str, expected: str) -> None:
    with pytest.raises(SwitchNamesError) as caught:
        parse_switches_csv(csv_text, "{port_num}")
    assert expected in str(caught.value)


def test_every_bad_line_is_reported_at_once() -> None:
    with pytest.raises(SwitchNamesError) as caught:
        parse_switches_csv("node_guid,device\nq,a\n2,b\nr,c\n", "{port_num}")
    assert [line.split(":")[0] for line in str(caught.value).splitlines()] == [
        "switches.csv line 2",
        "switches.csv line 4",
    ]


def test_settings_refuse_what_cannot_work(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="need `switches`"):
        UfmCollectorConfig(endpoints=[{"name": "a", "url": "http://h"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="must contain"):
        UfmCollectorConfig(interface_template="ib")
    with pytest.raises(ValueError, match="basic auth needs"):
        UfmEndpoint(name="a", url="http://h", username="u")
    with pytest.raises(ValueError, match="http"):
        UfmEndpoint(name="a", url="ftp://h/metrics")
    with pytest.raises(ValueError):
        UfmCollectorConfig(data_unit_bytes=2)  # type: ignore[arg-type]


# -- the collector process ------------------------------------------------------------------------


def test_metrics_and_health_of_the_ufm_collector(
    tmp_path: Path, server: UfmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "FINAL_DRAIN_S", 0.2)  # Kafka is away: the spool cannot empty
    cfg = config(
        tmp_path,
        {"name": "live", "url": server.url, "interval_s": 1},
        {"name": "dead", "url": f"http://127.0.0.1:{free_port()}/", "interval_s": 1},
    )
    s = Settings(
        kafka={"bootstrap_servers": f"127.0.0.1:{free_port()}", "topic_prefix": "u"},
        collect={
            "spool_dir": tmp_path / "spool",
            "metrics_listen": {"ufm": "127.0.0.1:0"},
            "ufm": cfg.model_dump(),
        },
    )

    async def main() -> None:
        process = run.CollectorProcess(s, "ufm")
        stop = asyncio.Event()
        task = asyncio.create_task(process.run(stop))
        try:
            async with aiohttp.ClientSession() as http:
                deadline = time.monotonic() + 30
                while True:
                    assert not task.done()
                    await asyncio.sleep(0.1)
                    if not process.endpoint.address:
                        continue
                    base = f"http://{process.endpoint.address}"
                    async with http.get(base + "/metrics") as resp:
                        text = await resp.text()
                    found = {
                        (s.name, s.labels.get("target")): s.value
                        for f in text_string_to_metric_families(text)
                        for s in f.samples
                    }
                    # A poll counts as answered before its messages are translated and
                    # emitted (off the loop): wait for both, not for one and read the other.
                    if (
                        found.get(("railtrace_collector_ufm_poll_successes_total", "live"), 0) >= 2
                        and found.get(("railtrace_collector_ufm_messages_total", "live"), 0) >= 4
                        and found.get(("railtrace_collector_ufm_poll_failures_total", "dead"), 0)
                        >= 1
                    ):
                        break
                    assert time.monotonic() < deadline, found
                async with http.get(base + "/healthz") as resp:
                    doc = orjson.loads(await resp.read())
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
            process.close()
        assert found[("railtrace_collector_ufm_endpoint_up", "live")] == 1
        assert found[("railtrace_collector_ufm_endpoint_up", "dead")] == 0
        assert found[("railtrace_collector_ufm_poll_failures_total", "dead")] >= 1
        assert found[("railtrace_collector_ufm_unmapped_guids", "live")] == 1
        assert found[("railtrace_collector_ufm_messages_total", "live")] >= 4
        ours = {name for name, _ in found if name.startswith("railtrace_collector_ufm")}
        assert len(ours) == 12
        readme = README.read_text()
        assert not [n for n in ours if f"`{n}" not in readme], "document them in the README"
        assert doc["targets"]["live"] == {"up": True, "state": "up"}
        assert doc["targets"]["dead"]["up"] is False

    asyncio.run(main())


def test_collect_ufm_process_puts_translated_messages_on_the_raw_gnmi_topic(
    tmp_path: Path, server: UfmServer
) -> None:
    require_broker()
    prefix = f"u{uuid.uuid4().hex[:8]}"
    (tmp_path / "switches.csv").write_text(SWITCHES)
    settings_file = tmp_path / "railtrace.toml"
    settings_file.write_text(
        f"""
[kafka]
bootstrap_servers = "{BOOTSTRAP}"
topic_prefix = "{prefix}"

[collect]
spool_dir = "{tmp_path / "spool"}"

[collect.metrics_listen]
ufm = "127.0.0.1:0"

[collect.ufm]
switches = "{tmp_path / "switches.csv"}"

[[collect.ufm.endpoints]]
name = "ufm-a"
url = "{server.url}/metrics"
interval_s = 1
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    proc = subprocess.Popen(
        [RAILTRACE, "--config", str(settings_file), "collect", "ufm"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        got: list[tuple[bytes, bytes]] = []
        while time.monotonic() < deadline and len({k for k, _ in got}) < 2:
            assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")
            got = asyncio.run(read_topic(f"{prefix}.raw.gnmi.v1"))
            time.sleep(0.5)
        decoded = [v for _, value in got for v in decode_message(orjson.loads(value))]
        assert {k for k, _ in got} == {b"ib-leaf-01", b"ib-spine-01"}, got
        assert value(decoded, T0_MS, "sw1p1", Metric.OUT_OCTETS) == 85554128244 * 4
        assert value(decoded, T0_MS, "7", Metric.IN_ERRORS) == 5
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out.decode(errors="replace")


def test_collect_ufm_without_its_switches_file_fails_clearly(tmp_path: Path) -> None:
    settings_file = tmp_path / "railtrace.toml"
    settings_file.write_text(
        f"""
[collect.ufm]
switches = "{tmp_path / "missing.csv"}"

[[collect.ufm.endpoints]]
name = "ufm-a"
url = "http://127.0.0.1:1/metrics"
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    done = subprocess.run(
        [RAILTRACE, "--config", str(settings_file), "collect", "ufm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "missing.csv" in done.stderr
