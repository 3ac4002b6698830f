"""The SNMP trap receiver against real notifications: Debian's net-snmp snmptrap, v2c and v3."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from snmp_support import (
    TRAP_ENGINE_ID,
    V3_AUTH_KEY,
    V3_PRIV_KEY,
    V3_USER,
    binary,
    lo_ifindex,
    running_snmpd,
    snmptrap,
)

from railtrace.collectors.emit import Collected
from railtrace.collectors.snmp import (
    IfNameCache,
    SnmpPoller,
    SnmpTarget,
    TrapReceiver,
    TrapReceiverConfig,
)
from railtrace.streams.records import Metric
from railtrace.streams.telemetry.snmp import decode_snmp

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _net_snmp_tools() -> None:
    # Skip (fail in CI) up front rather than from inside a worker thread mid-test.
    binary("snmptrap")


LINK_DOWN = "1.3.6.1.6.3.1.1.5.3"
LINK_UP = "1.3.6.1.6.3.1.1.5.4"
V3_ARGS = ("-v", "3", "-e", TRAP_ENGINE_ID, "-u", V3_USER, "-l", "authPriv")
V3_KEYS = ("-a", "SHA", "-A", V3_AUTH_KEY, "-x", "AES", "-X", V3_PRIV_KEY)


def link_trap(trap: str, index: int, status: int) -> tuple[str, ...]:
    return (
        "",  # uptime: snmptrap fills in its own
        trap,
        f"1.3.6.1.2.1.2.2.1.1.{index}",
        "i",
        str(index),
        f"1.3.6.1.2.1.2.2.1.8.{index}",
        "i",
        str(status),
    )


def config(**overrides: Any) -> TrapReceiverConfig:
    return TrapReceiverConfig.model_validate(
        {
            "host": "127.0.0.1",
            "port": 0,
            "communities": ["public"],
            "users": [
                {
                    "user": V3_USER,
                    "auth_key": V3_AUTH_KEY,
                    "priv_key": V3_PRIV_KEY,
                    "engine_id": TRAP_ENGINE_ID,
                }
            ],
            **overrides,
        }
    )


async def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the receiver"
        await asyncio.sleep(0.02)


def with_receiver(
    body: Callable[[TrapReceiver, Collected, int], Awaitable[None]],
    ifnames: IfNameCache | None = None,
) -> tuple[TrapReceiver, Collected]:
    collected = Collected()

    async def run() -> TrapReceiver:
        receiver = TrapReceiver(config(), collected, ifnames or IfNameCache())
        _, port = await receiver.start()
        try:
            await body(receiver, collected, port)
        finally:
            await receiver.close()
        return receiver

    return asyncio.run(run()), collected


def decoded(message: bytes) -> list[tuple[str, str, Metric, object]]:
    return [(v.device, v.interface, v.metric, v.value) for v in decode_snmp(orjson.loads(message))]


def test_v2c_link_down_from_an_unknown_agent(tmp_path: Path) -> None:
    async def body(receiver: TrapReceiver, collected: Collected, port: int) -> None:
        await asyncio.to_thread(
            snmptrap, tmp_path, "-v", "2c", "-c", "public", f"127.0.0.1:{port}",
            *link_trap(LINK_DOWN, 7, 2),
        )  # fmt: skip
        await wait_for(lambda: len(collected.messages) == 1)

    receiver, collected = with_receiver(body)
    [message] = collected.on("snmp")
    assert message.state_change is True
    assert message.key == b"127.0.0.1"
    body_ = orjson.loads(message.value)
    assert body_["kind"] == "trap" and body_["ts_ns"] == message.ts_ns
    # Nobody polled 127.0.0.1: the device is the agent address, the interface its ifIndex.
    assert decoded(message.value) == [("127.0.0.1", "7", Metric.OPER_STATUS, "down")]
    assert receiver.stats.emitted == 1


def test_v3_auth_priv_link_up(tmp_path: Path) -> None:
    async def body(receiver: TrapReceiver, collected: Collected, port: int) -> None:
        await asyncio.to_thread(
            snmptrap, tmp_path, *V3_ARGS, *V3_KEYS, f"127.0.0.1:{port}", *link_trap(LINK_UP, 3, 1)
        )
        await wait_for(lambda: len(collected.messages) == 1)

    _, collected = with_receiver(body)
    [message] = collected.on("snmp")
    assert message.state_change is True
    assert decoded(message.value) == [("127.0.0.1", "3", Metric.OPER_STATUS, "up")]


def test_trap_after_a_poll_names_device_and_interface_from_the_poll(tmp_path: Path) -> None:
    """The poller fills the shared cache from a real snmpd on 127.0.0.1; a linkDown from that
    address then names the polled device and `lo`."""
    index = lo_ifindex()
    cache = IfNameCache()
    with running_snmpd(tmp_path / "agent") as agent:

        async def body(receiver: TrapReceiver, collected: Collected, port: int) -> None:
            target = SnmpTarget(
                name="leaf-lo", host=agent.host, port=agent.port, community=agent.community
            )
            poller = SnmpPoller([target], Collected(), ifnames=cache)
            try:
                assert await poller.poll_once(target) is not None
            finally:
                poller.close()
            await asyncio.to_thread(
                snmptrap, tmp_path, "-v", "2c", "-c", "public", f"127.0.0.1:{port}",
                *link_trap(LINK_DOWN, index, 2),
            )  # fmt: skip
            await wait_for(lambda: len(collected.messages) == 1)

        _, collected = with_receiver(body, cache)
    [message] = collected.on("snmp")
    assert message.key == b"leaf-lo"
    assert decoded(message.value) == [("leaf-lo", "lo", Metric.OPER_STATUS, "down")]


def test_unusable_traps_are_counted_and_the_receiver_goes_on(tmp_path: Path) -> None:
    def send(port: int, *args: str) -> None:
        snmptrap(tmp_path, "-v", "2c", "-c", "public", f"127.0.0.1:{port}", *args)

    async def body(receiver: TrapReceiver, collected: Collected, port: int) -> None:
        # An enterprise notification railtrace has no use for.
        await asyncio.to_thread(send, port, "", "1.3.6.1.4.1.8072.2.3.0.1")
        # A linkDown naming no interface.
        await asyncio.to_thread(send, port, "", LINK_DOWN)
        # Not SNMP at all, and a trap with a community nobody configured.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:
            raw.sendto(b"\x30\x05garbage", ("127.0.0.1", port))
        await asyncio.to_thread(
            snmptrap, tmp_path, "-v", "2c", "-c", "guessed", f"127.0.0.1:{port}",
            *link_trap(LINK_DOWN, 4, 2),
        )  # fmt: skip
        # v3 from an engine id no user is configured for.
        await asyncio.to_thread(
            snmptrap, tmp_path, *V3_ARGS[:3], "8000000001ffffff", *V3_ARGS[4:], *V3_KEYS,
            f"127.0.0.1:{port}", *link_trap(LINK_DOWN, 4, 2),
        )  # fmt: skip
        # ...and then a good one still gets through.
        await asyncio.to_thread(send, port, *link_trap(LINK_DOWN, 5, 2))
        await wait_for(lambda: len(collected.messages) == 1)
        drops = receiver.engine_drops()
        assert drops["snmpInASNParseErrs"] == 1
        assert drops["snmpInBadCommunityNames"] == 1
        assert drops["usmStatsUnknownEngineIDs"] + drops["usmStatsUnknownUserNames"] >= 1

    receiver, collected = with_receiver(body)
    assert receiver.stats.unknown == 1
    assert receiver.stats.malformed == 1
    assert receiver.stats.emitted == 1
    assert decoded(collected.messages[0].value) == [("127.0.0.1", "5", Metric.OPER_STATUS, "down")]


def test_a_taken_port_fails_at_start() -> None:
    async def run() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
            taken.bind(("127.0.0.1", 0))
            receiver = TrapReceiver(config(port=taken.getsockname()[1]), Collected(), IfNameCache())
            with pytest.raises(OSError):
                await receiver.start()

    asyncio.run(run())
