"""`railtrace collect gnmi` against openconfig's reference gNMI target, side by side with
openconfig's own client (tests/gnmi_fake_support.py): the same stream, update for update.

The fake is a target railtrace did not write, and unlike its own Python target it answers
Capabilities UNIMPLEMENTED and names every path in the deprecated `Path.element`; these tests
also have it stamp in milliseconds or seconds, as some switch OSes do, or not at all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from collector_config import gnmi_collector_config
from gnmi_fake_support import FakeValue, fake_server, gnmi_cli_stream, require_tools, write_config
from gnmi_server import Certs, make_certs
from kafka_support import RAILTRACE, free_port
from prometheus_client.parser import text_string_to_metric_families

from railtrace.collectors.spool import Spool
from railtrace.streams.records import Metric
from railtrace.streams.telemetry import decode_message

pytestmark = pytest.mark.timeout(180)

REPEAT = 5
#: ns per unit the fake stamps in; None: it sends no timestamp (0).
UNITS = {"ns": 1, "ms": 10**6, "s": 10**9, "missing": None}


def fake_values(unit_ns: int | None, start_ns: int) -> list[FakeValue]:
    """Four leaves of a switch, REPEAT updates each, one second apart in the fake's unit."""
    first = None if unit_ns is None else start_ns // unit_ns
    step = 0 if unit_ns is None else 10**9 // unit_ns

    def leaf(interface: str, *rest: str) -> tuple[str, ...]:
        return ("interfaces", f"interface[name={interface}]", "state", *rest)

    counter = "uint_value: < value: {} range: < minimum: 0 maximum: 4000000000 delta_min: 100 delta_max: 9000 > >"  # noqa: E501
    return [
        FakeValue(leaf("Ethernet1", "counters", "in-octets"), counter.format(1000), REPEAT, 11,
                  first, step),
        FakeValue(leaf("Ethernet2", "counters", "in-octets"), counter.format(2000), REPEAT, 12,
                  first, step),
        FakeValue(leaf("Ethernet1", "counters", "in-fcs-errors"),
                  "int_value: < value: 0 list: < options: 0 options: 1 options: 1 options: 3 > >",
                  REPEAT, 13, first, step),
        FakeValue(leaf("Ethernet1", "oper-status"), 'string_value: < value: "UP" >', REPEAT, 14,
                  first, step),
    ]  # fmt: skip


def fake_target(port: int, certs: Certs) -> str:
    """The fake as a `[[collect.gnmi]]` table: TLS, 1 s samples, no reconnect in the test's time."""
    return f"""
[[collect.gnmi]]
name = "fake1"
address = "127.0.0.1:{port}"
sample_interval_s = 1

[collect.gnmi.tls]
ca_file = "{certs.ca}"

[collect.gnmi.backoff]
initial_s = 120
max_s = 120
"""


def scrape(metrics_port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    found = [
        v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items()
    ]
    return found[0] if found else 0.0


def run_side_by_side(tmp: Path, unit_ns: int | None) -> dict[str, Any]:
    """The fake, `railtrace collect gnmi` and gnmi_cli in one run; what each saw."""
    certs = make_certs(tmp)
    start_ns = time.time_ns()
    config = write_config(tmp / "fake.pb.txt", "fake1", fake_values(unit_ns, start_ns))
    metrics_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    with fake_server(config, certs, tmp / "fake_server.log") as port:
        settings = gnmi_collector_config(tmp, fake_target(port, certs), f"127.0.0.1:{metrics_port}")
        with (tmp / "railtrace.log").open("wb") as log:
            railtrace = subprocess.Popen(
                [RAILTRACE, "--config", str(settings), "collect", "gnmi"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            cli = gnmi_cli_stream(port, certs.ca)
            deadline = time.monotonic() + 90
            while True:  # until railtrace's one session has ended: the fake ends every stream
                assert railtrace.poll() is None, (tmp / "railtrace.log").read_text()
                try:
                    samples = scrape(metrics_port)
                except OSError:
                    samples = {}
                if value(samples, "railtrace_collector_gnmi_reconnects_total") >= 1:
                    break
                assert time.monotonic() < deadline, (tmp / "railtrace.log").read_text()
                time.sleep(0.2)
        finally:
            railtrace.send_signal(signal.SIGTERM)
            railtrace.wait(60)
    spool = Spool(tmp / "spool" / "gnmi", 1 << 30)
    try:
        messages = [orjson.loads(m.value) for _, m in spool.peek(1_000_000)]
    finally:
        spool.close()
    return {
        "cli": cli,
        "messages": [m for m in messages if "updates" in m],
        "samples": samples,
        "log": (tmp / "railtrace.log").read_text(),
        "start_ns": start_ns,
        "end_ns": time.time_ns(),
    }


@pytest.mark.parametrize("unit", list(UNITS))
def test_railtrace_and_gnmi_cli_read_the_same_updates_from_openconfigs_fake_target(
    tmp_path: Path, unit: str
) -> None:
    require_tools()
    unit_ns = UNITS[unit]
    seen = run_side_by_side(tmp_path, unit_ns)
    cli, messages, samples = seen["cli"], seen["messages"], seen["samples"]

    # gnmi_cli, openconfig's own client, got every update the fake was configured to send
    assert len(cli) == 4 * REPEAT, cli
    # railtrace counted the same number, none malformed (each used to be: no `elem` path)
    assert value(samples, "railtrace_collector_gnmi_updates_total") == len(cli)
    assert value(samples, "railtrace_collector_gnmi_malformed_updates_total") == 0
    # ... and they are the same updates: path, value and time, one for one
    ours = [
        (u["Path"], str(next(iter(u["values"].values()))), m["timestamp"])
        for m in messages
        for u in m["updates"]
    ]
    if unit_ns is None:  # unstamped: railtrace stamps with the time received, gnmi_cli shows 0
        assert {stamp for _, _, stamp in cli} == {0}
        assert all(seen["start_ns"] <= ts <= seen["end_ns"] for _, _, ts in ours)
        assert sorted(p[:2] for p in ours) == sorted(p[:2] for p in cli)
    else:
        assert sorted(ours) == sorted((p, v, stamp * unit_ns) for p, v, stamp in cli)
        # in the run's second, not in January 1970, whatever unit the target stamps in
        first = min(ts for _, _, ts in ours)
        assert abs(first - seen["start_ns"]) <= unit_ns, (first, seen["start_ns"])

    # decoded as the worker decodes them, with their values
    decoded = [v for m in messages for v in decode_message(m)]
    octets = [
        v.value for v in decoded if (v.interface, v.metric) == ("Ethernet1", Metric.IN_OCTETS)
    ]
    assert octets == [
        int(v) for p, v, _ in cli if p.endswith("Ethernet1]/state/counters/in-octets")
    ]
    assert {(v.interface, v.metric) for v in decoded} == {
        ("Ethernet1", Metric.IN_OCTETS),
        ("Ethernet2", Metric.IN_OCTETS),
        ("Ethernet1", Metric.IN_FCS_ERRORS),
        ("Ethernet1", Metric.OPER_STATUS),
    }
    assert {v.value for v in decoded if v.metric is Metric.OPER_STATUS} == {"up"}

    # the fake answers Capabilities UNIMPLEMENTED: subscribed anyway, counted, said once
    assert value(samples, "railtrace_collector_gnmi_capabilities_fallbacks_total") == 1
    assert value(samples, "railtrace_collector_gnmi_connects_total") == 1
    assert seen["log"].count("does not implement Capabilities") == 1
    odd = "railtrace_collector_gnmi_odd_timestamps_total"
    if unit != "ns":
        assert value(samples, odd, reason=unit) == len(cli)  # one update per notification
    assert sum(value(samples, odd, reason=r) for r in ("us", "ms", "s", "missing", "rejected")) == (
        0 if unit == "ns" else len(cli)
    )
