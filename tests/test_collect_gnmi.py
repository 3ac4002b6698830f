"""The gNMI collector against a real gRPC gNMI server (tests/gnmi_server.py) on 127.0.0.1.

Every message the collector emits is decoded with railtrace's own gnmic decoder, so these
tests prove the collector's output is what the streaming worker understands.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from collector_config import gnmi_collector_config
from gnmi_server import Certs, GnmiServer, SwitchState, make_certs
from kafka_support import RAILTRACE, free_port

from railtrace.collectors.emit import Collected
from railtrace.collectors.errors import CollectorFailedError
from railtrace.collectors.gnmi import (
    Backoff,
    Credentials,
    GnmiCollector,
    GnmiTarget,
    TlsSettings,
)
from railtrace.proto.gen import gnmi_pb2
from railtrace.streams.records import Metric
from railtrace.streams.telemetry import decode_message
from railtrace.streams.telemetry.cabling import CablingWatch
from railtrace.streams.telemetry.gnmic import decode_with_lldp
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.lldp import PlanIndex

FAST = Backoff(initial_s=0.05, max_s=0.2)


def target(name: str, address: str, **kw: Any) -> GnmiTarget:
    kw.setdefault("insecure", True)
    return GnmiTarget(
        name=name, address=address, sample_interval_s=1.0, backoff=FAST, connect_timeout_s=2, **kw
    )


def values(collected: Collected, key: str | None = None) -> list[Any]:
    out = []
    for m in collected.on("gnmi"):
        if key is None or m.key == key.encode():
            out.extend(decode_message(orjson.loads(m.value)))
    return out


async def until(check: Callable[[], bool], timeout: float = 8.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


async def collect(
    targets: list[GnmiTarget], check: Callable[[GnmiCollector, Collected], bool]
) -> tuple[GnmiCollector, Collected]:
    collected = Collected()
    collector = GnmiCollector(targets, collected)
    task = asyncio.create_task(collector.run())
    try:
        await until(lambda: check(collector, collected) or task.done())
        assert not task.done() or check(collector, collected), collector.statuses
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return collector, collected


@pytest.mark.parametrize("encodings", [("PROTO",), ("JSON_IETF",), ("JSON",)])
def test_samples_decode_to_telemetry_values(encodings: tuple[str, ...]) -> None:
    async def main() -> None:
        server = await GnmiServer(SwitchState(encodings=encodings)).start()
        try:
            # two samples per interface: the initial one and one an interval later. Waited
            # for by what is asserted (both interfaces' second in_octets), not by a message
            # count: on a loaded machine the server's second sample can be counted before the
            # collector has emitted all of it.
            collector, collected = await collect(
                [target("leaf1", server.address)],
                lambda c, m: (
                    server.state.samples >= 2
                    and sum(v.metric is Metric.IN_OCTETS for v in values(m, "leaf1")) >= 4
                ),
            )
        finally:
            await server.stop()
        status = collector.statuses["leaf1"]
        assert status.encoding == encodings[0]
        assert status.sync_responses == 1
        sub = server.state.subscribes[0].subscribe
        assert sub.mode == 0  # STREAM
        modes = {(s.mode, s.sample_interval) for s in sub.subscription}
        assert (2, 1_000_000_000) in modes and (1, 0) in modes  # SAMPLE at 1 s, ON_CHANGE
        got = values(collected, "leaf1")
        octets = sorted((v.interface, v.value) for v in got if v.metric is Metric.IN_OCTETS)
        assert octets == [("Ethernet1", 1000), ("Ethernet1", 1100), ("Ethernet2", 2000),
                          ("Ethernet2", 2100)]  # fmt: skip
        assert {v.device for v in got} == {"leaf1"}
        fcs = {(v.interface, v.value) for v in got if v.metric is Metric.IN_FCS_ERRORS}
        assert ("Ethernet1", 7) in fcs and ("Ethernet1", 8) in fcs
        status_values = [v for v in got if v.metric is Metric.OPER_STATUS]
        assert {(v.interface, v.value) for v in status_values} == {
            ("Ethernet1", "up"),
            ("Ethernet2", "up"),
        }
        # oper-status messages (and the session's LLDP re-sync marker, which has only
        # deletes) are marked as state changes, counter samples are not
        for m in collected.on("gnmi"):
            body = orjson.loads(m.value)
            is_status = "updates" not in body or body["updates"][0]["Path"] == "oper-status"
            assert m.state_change is is_status
            assert m.ts_ns == body["timestamp"]

    asyncio.run(main())


def test_on_change_update_is_streamed() -> None:
    async def main() -> None:
        server = await GnmiServer().start()

        def changed(c: GnmiCollector, m: Collected) -> bool:
            if c.statuses["leaf1"].sync_responses and server.state.oper_status["Ethernet2"] == "UP":
                server.set_oper_status("Ethernet2", "DOWN")
            return any(v.metric is Metric.OPER_STATUS and v.value == "down" for v in values(m))

        try:
            _, collected = await collect([target("leaf1", server.address)], changed)
        finally:
            await server.stop()
        down = [m for m in collected.on("gnmi") if b"DOWN" in m.value]
        assert down and all(m.state_change for m in down)

    asyncio.run(main())


def test_reconnects_after_the_server_drops_the_stream() -> None:
    async def main() -> None:
        server = await GnmiServer(SwitchState(drop_after=3)).start()
        try:
            collector, collected = await collect(
                [target("leaf1", server.address)], lambda c, m: server.state.streams >= 3
            )
        finally:
            await server.stop()
        status = collector.statuses["leaf1"]
        assert status.connects >= 3 and status.failures >= 2
        assert "closed the stream" in status.last_error
        # every stream delivered its first 3 notifications
        assert len(collected.on("gnmi")) >= 6

    asyncio.run(main())


def test_malformed_updates_are_counted_while_good_ones_flow() -> None:
    async def main() -> None:
        server = await GnmiServer(SwitchState(malformed=True, encodings=("PROTO",))).start()
        try:
            collector, collected = await collect(
                [target("leaf1", server.address)],
                lambda c, m: server.state.samples >= 2 and c.statuses["leaf1"].notifications >= 6,
            )
        finally:
            await server.stop()
        status = collector.statuses["leaf1"]
        # three bad updates in every counter notification (2 interfaces x >= 2 samples)
        assert status.malformed_updates >= 12 and status.malformed_updates % 3 == 0
        assert status.state != "failed" and status.failures == 0
        got = values(collected)
        assert {v.interface for v in got if v.metric is Metric.IN_OCTETS} == {
            "Ethernet1",
            "Ethernet2",
        }
        assert not [v for v in got if v.metric in (Metric.IN_DISCARDS, Metric.IN_ERRORS)]

    asyncio.run(main())


def test_a_refusing_target_does_not_stall_a_good_one() -> None:
    async def main() -> None:
        server = await GnmiServer().start()
        dead = f"127.0.0.1:{free_port()}"
        try:
            collector, collected = await collect(
                [target("dead1", dead), target("leaf1", server.address)],
                lambda c, m: len(values(m, "leaf1")) >= 4 and c.statuses["dead1"].failures >= 2,
            )
        finally:
            await server.stop()
        dead_status = collector.statuses["dead1"]
        assert "UNAVAILABLE" in dead_status.last_error
        assert dead_status.connects == 0
        assert not [m for m in collected.messages if m.key == b"dead1"]

    asyncio.run(main())


def test_capabilities_without_usable_encoding_fail_the_target_clearly() -> None:
    async def main() -> None:
        server = await GnmiServer(SwitchState(encodings=("BYTES", "ASCII"))).start()
        try:
            collected = Collected()
            collector = GnmiCollector([target("leaf1", server.address)], collected)
            with pytest.raises(CollectorFailedError, match="every gNMI target failed") as failed:
                await asyncio.wait_for(collector.run(), 5)
        finally:
            await server.stop()
        status = collector.statuses["leaf1"]
        assert status.state == "failed"
        assert "no usable gNMI encoding" in status.last_error
        assert "BYTES, ASCII" in status.last_error
        assert f"leaf1: {status.last_error}" in str(failed.value)
        assert server.state.streams == 0 and not collected.messages

    asyncio.run(main())


def test_one_target_without_usable_encoding_fails_alone_while_another_streams() -> None:
    async def main() -> None:
        bad = await GnmiServer(SwitchState(encodings=("BYTES",))).start()
        good = await GnmiServer().start()
        try:
            collector, collected = await collect(
                [target("leaf1", bad.address), target("leaf2", good.address)],
                lambda c, m: c.statuses["leaf1"].state == "failed" and len(values(m)) >= 4,
            )
        finally:
            await bad.stop()
            await good.stop()
        leaf2 = collector.statuses["leaf2"]
        assert leaf2.state == "stopped" and leaf2.failures == 0  # stopped by the test alone
        assert {v.device for v in values(collected)} == {"leaf2"}

    asyncio.run(main())


def test_collect_gnmi_exits_non_zero_with_the_reason_when_no_target_is_left(
    tmp_path: Path,
) -> None:
    """It used to log the failure and exit 0, as if it had been asked to stop."""

    async def main() -> tuple[int, str]:
        server = await GnmiServer(SwitchState(encodings=("BYTES", "ASCII"))).start()
        config = gnmi_collector_config(
            tmp_path,
            f'[[collect.gnmi]]\nname = "leaf1"\naddress = "{server.address}"\ninsecure = true\n',
        )
        try:
            proc = await asyncio.create_subprocess_exec(
                RAILTRACE, "--config", str(config), "collect", "gnmi",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            _, err = await asyncio.wait_for(proc.communicate(), 60)
        finally:
            await server.stop()
        assert proc.returncode is not None
        return proc.returncode, err.decode()

    code, err = asyncio.run(main())
    assert code == 1, err
    err = " ".join(err.split())  # the console wraps long lines
    assert "every gNMI target failed" in err
    assert "leaf1: no usable gNMI encoding: target supports BYTES, ASCII" in err


def test_collect_gnmi_without_any_target_exits_non_zero(tmp_path: Path) -> None:
    done = subprocess.run(
        [RAILTRACE, "--config", str(gnmi_collector_config(tmp_path, "")), "collect", "gnmi"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "no gNMI target" in done.stderr


def test_credentials_are_sent_as_metadata() -> None:
    async def main() -> None:
        state = SwitchState(username="rt", password="s3cret")
        server = await GnmiServer(state).start()
        good = Credentials(username="rt", password="s3cret")  # type: ignore[arg-type]
        bad = Credentials(username="rt", password="wrong")  # type: ignore[arg-type]
        try:
            collector, _ = await collect(
                [
                    target("leaf1", server.address, credentials=good),
                    target("leaf2", server.address, credentials=bad),
                ],
                lambda c, m: bool(values(m, "leaf1")) and c.statuses["leaf2"].failures >= 1,
            )
        finally:
            await server.stop()
        assert "UNAUTHENTICATED" in collector.statuses["leaf2"].last_error

    asyncio.run(main())


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("pki"))


def test_mutual_tls_with_the_right_ca_streams(certs: Certs) -> None:
    async def main() -> None:
        server = await GnmiServer(certs=certs, mtls=True).start()
        tls = TlsSettings(ca_file=certs.ca, cert_file=certs.client_cert, key_file=certs.client_key)
        try:
            _, collected = await collect(
                [target("leaf1", server.address, insecure=False, tls=tls)],
                lambda c, m: len(values(m)) >= 4,
            )
        finally:
            await server.stop()
        assert {v.device for v in values(collected)} == {"leaf1"}

    asyncio.run(main())


def test_tls_with_a_wrong_ca_fails_clearly(certs: Certs) -> None:
    async def main() -> None:
        server = await GnmiServer(certs=certs).start()
        wrong = TlsSettings(ca_file=certs.other_ca)
        try:
            collector, collected = await collect(
                [target("leaf1", server.address, insecure=False, tls=wrong)],
                lambda c, m: c.statuses["leaf1"].failures >= 2,
            )
        finally:
            await server.stop()
        status = collector.statuses["leaf1"]
        assert status.connects == 0 and not collected.messages
        assert "UNAVAILABLE" in status.last_error
        assert any(w in status.last_error.lower() for w in ("certificate", "handshake", "ssl"))

    asyncio.run(main())


def test_missing_tls_file_fails_the_target(tmp_path: Path) -> None:
    async def main() -> None:
        tls = TlsSettings(ca_file=tmp_path / "absent.pem")
        collector = GnmiCollector(
            [target("leaf1", "127.0.0.1:1", insecure=False, tls=tls)], Collected()
        )
        with pytest.raises(CollectorFailedError, match="cannot read TLS CA"):
            await asyncio.wait_for(collector.run(), 5)
        assert collector.statuses["leaf1"].state == "failed"
        assert "cannot read TLS CA" in collector.statuses["leaf1"].last_error

    asyncio.run(main())


def test_target_config_refuses_plaintext_unless_asked() -> None:
    with pytest.raises(ValueError, match="insecure"):
        GnmiTarget(name="leaf1", address="10.0.0.1:6030")
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        GnmiTarget(name="leaf1", address="10.0.0.1:6030", insecure=True, sample_interval_s=0.5)
    assert GnmiTarget(name="l", address="a:1", insecure=True).sample_interval_ns == 10**10


def test_a_new_session_starts_the_lldp_table_afresh_so_a_neighbour_lost_meanwhile_goes() -> None:
    """The switch loses a neighbour while no session is up; the next session's dump does not
    mention it, and only the collector's re-sync marker tells the worker it is gone."""
    plan = PlanIndex(
        [
            (Endpoint("leaf1", "Ethernet1"), Endpoint("hgx-01", "mlx5_0")),
            (Endpoint("leaf1", "Ethernet2"), Endpoint("hgx-02", "mlx5_0")),
        ]
    )
    state = SwitchState(
        drop_after=6,  # counters (2), oper-status (2), neighbours (2): then the stream ends
        lldp={"Ethernet1": ("hgx-01", "mlx5_0"), "Ethernet2": ("hgx-02", "mlx5_0")},
    )
    slow = Backoff(initial_s=1.0, max_s=1.0)  # time to unplug between the two sessions

    def lldp_messages(collected: Collected) -> list[Any]:
        return [m for m in collected.on("gnmi") if b"lldp" in m.value]

    async def main() -> Collected:
        server = await GnmiServer(state).start()
        collected = Collected()
        leaf1 = target("leaf1", server.address).model_copy(update={"backoff": slow})
        collector = GnmiCollector([leaf1], collected)
        task = asyncio.create_task(collector.run())
        try:
            await until(lambda: len(lldp_messages(collected)) >= 3)  # marker + 2 neighbours
            state.lldp.pop("Ethernet2")  # unplugged while the session is down: no delete sent
            await until(lambda: state.streams >= 2 and len(lldp_messages(collected)) >= 5)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await server.stop()
        return collected

    collected = asyncio.run(main())
    # A table re-filling within the settle time raises nothing; what stays missing does.
    watch = CablingWatch("leaf1", plan, settle_ns=500_000_000)
    events = []
    for m in lldp_messages(collected):
        for update in decode_with_lldp(orjson.loads(m.value))[1]:
            events += watch.apply(update)
    events += watch.tick(max(m.ts_ns or 0 for m in lldp_messages(collected)) + 10**10)
    assert watch.neighbours() == {"Ethernet1": [Endpoint("hgx-01", "mlx5_0")]}
    assert [(e.interface, e.kind) for e in events] == [("Ethernet2", CablingKind.MISSING)]
    assert all(m.state_change for m in lldp_messages(collected))


@pytest.mark.parametrize("encoding", [None, "JSON_IETF"])
def test_a_target_without_capabilities_is_subscribed_with_the_fallback_encoding(
    encoding: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """Such a target used to be retried for ever, never subscribed."""
    state = SwitchState(capabilities=False, drop_after=6)  # every session ends: three of them

    async def main() -> tuple[GnmiCollector, Collected]:
        server = await GnmiServer(state).start()
        try:
            return await collect(
                [target("leaf1", server.address, fallback_encoding=encoding)],
                lambda c, m: state.streams >= 3 and len(values(m)) >= 12,
            )
        finally:
            await server.stop()

    with caplog.at_level(logging.WARNING, logger="railtrace.collectors.gnmi.session"):
        collector, collected = asyncio.run(main())
    wanted = encoding or "PROTO"  # the openconfig profile's first
    assert {gnmi_pb2.Encoding.Name(s.subscribe.encoding) for s in state.subscribes} == {wanted}
    status = collector.statuses["leaf1"]
    assert status.encoding == wanted and status.capabilities_fallbacks >= 3
    said = [r for r in caplog.records if "does not implement Capabilities" in r.getMessage()]
    assert len(said) == 1  # once, not at every reconnect
    assert {v.metric for v in values(collected)} >= {Metric.IN_OCTETS, Metric.OPER_STATUS}


def test_a_capabilities_error_other_than_unimplemented_is_still_retried() -> None:
    async def main() -> None:
        state = SwitchState(username="rt", password="s3cret")  # UNAUTHENTICATED for others
        server = await GnmiServer(state).start()
        try:
            collector, _ = await collect(
                [target("leaf1", server.address)],
                lambda c, m: c.statuses["leaf1"].failures >= 2,
            )
        finally:
            await server.stop()
        status = collector.statuses["leaf1"]
        assert status.capabilities_fallbacks == 0 and state.streams == 0
        assert "UNAUTHENTICATED" in status.last_error

    asyncio.run(main())


@pytest.mark.parametrize(("unit", "per_unit"), [("ms", 10**6), ("s", 10**9)])
def test_a_target_stamping_in_ms_or_s_is_read_in_that_unit_and_counted(
    unit: str, per_unit: int
) -> None:
    async def main() -> tuple[GnmiCollector, Collected, int]:
        before = time.time_ns()
        server = await GnmiServer(SwitchState(stamp_unit_ns=per_unit)).start()
        try:
            collector, collected = await collect(
                [target("leaf1", server.address)], lambda c, m: len(values(m)) >= 4
            )
        finally:
            await server.stop()
        return collector, collected, before

    collector, collected, before = asyncio.run(main())
    stamps = [v.ts_ns for v in values(collected)]
    # within the run, to the unit's precision: not January 1970
    assert all(before - per_unit <= ts <= time.time_ns() for ts in stamps), stamps
    counted = collector.statuses["leaf1"].odd_timestamps
    assert counted[unit] >= 2 and set(counted) == {unit}
