"""The SNMP poller against a real agent: Debian's net-snmp snmpd, v2c and v3 authPriv."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import orjson
import pytest
from snmp_support import Agent, free_udp_port, running_snmpd

from railtrace.collectors.emit import Collected
from railtrace.collectors.snmp import SnmpPoller, SnmpTarget
from railtrace.streams.records import Metric
from railtrace.streams.telemetry.snmp import decode_snmp

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    with running_snmpd(tmp_path_factory.mktemp("snmpd")) as running:
        yield running


def v2c(agent: Agent, name: str = "agent-v2c", **overrides: object) -> SnmpTarget:
    fields: dict[str, object] = {
        "name": name,
        "host": agent.host,
        "port": agent.port,
        "community": agent.community,
        "timeout_s": 0.5,
        "retries": 0,
        **overrides,
    }
    return SnmpTarget.model_validate(fields)


def v3(agent: Agent, name: str = "agent-v3", priv_key: str | None = None) -> SnmpTarget:
    return SnmpTarget.model_validate(
        {
            "name": name,
            "host": agent.host,
            "port": agent.port,
            "version": "3",
            "v3": {
                "user": agent.user,
                "auth_protocol": "SHA",
                "auth_key": agent.auth_key,
                "priv_protocol": "AES",
                "priv_key": priv_key or agent.priv_key,
            },
            "timeout_s": 0.5,
            "retries": 0,
        }
    )


def _lo_values(message: bytes) -> dict[Metric, object]:
    return {v.metric: v.value for v in decode_snmp(orjson.loads(message)) if v.interface == "lo"}


async def _poll(target: SnmpTarget) -> tuple[SnmpPoller, Collected]:
    collected = Collected()
    poller = SnmpPoller([target], collected)
    try:
        await poller.poll_once(target)
    finally:
        poller.close()
    return poller, collected


@pytest.mark.parametrize("make_target", [v2c, v3], ids=["v2c", "v3-authPriv-SHA-AES"])
def test_poll_decodes_into_loopback_counters_and_status(agent: Agent, make_target: object) -> None:
    target = make_target(agent)  # type: ignore[operator]
    poller, collected = asyncio.run(_poll(target))
    [message] = collected.on("snmp")
    assert poller.stats[target.name].failures == 0
    assert message.key == target.name.encode()
    assert message.state_change is False
    body = orjson.loads(message.value)
    assert body["device"] == target.name and body["kind"] == "poll"
    assert body["ts_ns"] == message.ts_ns
    values = _lo_values(message.value)
    assert values[Metric.OPER_STATUS] == "up"
    in_octets = values[Metric.IN_OCTETS]
    assert isinstance(in_octets, int) and in_octets > 0
    assert isinstance(values[Metric.OUT_OCTETS], int)
    assert poller.ifnames.ifnames(target.name)[str(body_index(body, "lo"))] == "lo"


def body_index(body: dict[str, object], name: str) -> str:
    ifnames = body["ifnames"]
    assert isinstance(ifnames, dict)
    [index] = [i for i, n in ifnames.items() if n == name]
    return str(index)


def test_wrong_v3_key_is_a_counted_failure_not_a_message(agent: Agent) -> None:
    target = v3(agent, priv_key="not-the-priv-key")
    poller, collected = asyncio.run(_poll(target))
    assert collected.messages == []
    stats = poller.stats[target.name]
    assert stats.failures == 1 and stats.last_error


def test_bad_targets_are_counted_and_logged_while_the_good_one_keeps_its_interval(
    agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    good = v2c(agent, "good", interval_s=0.2)
    wrong_community = v2c(agent, "wrong-community", community="nope", interval_s=0.2)
    nobody_there = v2c(agent, "closed-port", port=free_udp_port(), interval_s=0.2)
    collected = Collected()
    poller = SnmpPoller([good, wrong_community, nobody_there], collected)

    def enough() -> bool:
        good_polls = sum(orjson.loads(m.value)["device"] == "good" for m in collected.on("snmp"))
        bad = (poller.stats[t.name].failures for t in (wrong_community, nobody_there))
        return good_polls >= 5 and all(f >= 2 for f in bad)

    async def run_until_enough(timeout: float = 60) -> None:
        # Until each target has done what is checked below, not for a fixed time: a loaded
        # machine polls fewer times in 1.5 s than an idle one.
        task = asyncio.create_task(poller.run())
        deadline = asyncio.get_running_loop().time() + timeout
        while not enough():
            assert not task.done(), task
            assert asyncio.get_running_loop().time() < deadline, poller.stats
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    with caplog.at_level(logging.WARNING, logger="railtrace.collectors.snmp.poller"):
        asyncio.run(run_until_enough())

    devices = [orjson.loads(m.value)["device"] for m in collected.on("snmp")]
    # The bad targets each wait 0.5 s per poll; the good one polls every 0.2 s regardless.
    assert set(devices) == {"good"}
    assert devices.count("good") >= 5
    for bad in ("wrong-community", "closed-port"):
        assert poller.stats[bad].failures >= 2
        # Every finished poll failed; the last one may have been cut short by the cancel.
        assert poller.stats[bad].polls - poller.stats[bad].failures in (0, 1)
    assert poller.stats["good"].failures == 0
    failed = {r.__dict__.get("device") for r in caplog.records if r.msg == "snmp poll failed"}
    assert failed == {"wrong-community", "closed-port"}


def test_a_failing_emit_is_counted_and_polling_goes_on(agent: Agent) -> None:
    calls = []

    async def broken_emit(message: object) -> None:
        calls.append(message)
        raise RuntimeError("spool full")

    target = v2c(agent)
    poller = SnmpPoller([target], broken_emit)

    async def twice() -> None:
        try:
            assert await poller.poll_once(target) is None
            assert await poller.poll_once(target) is None
        finally:
            poller.close()

    asyncio.run(twice())
    assert len(calls) == 2
    assert poller.stats[target.name].emit_failures == 2
