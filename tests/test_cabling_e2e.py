"""A swapped cable, from the switch to the API: a real gRPC gNMI target streams its LLDP
neighbours to `railtrace collect gnmi`, which produces to a real broker; the worker checks them
against cables.csv and the sink serves the differences at /v1/topology/cabling."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gnmi_server import GnmiServer, SwitchState
from kafka_support import Stack, require_broker, stack

PLAN = {"Ethernet1": ("hgx-01", "mlx5_0"), "Ethernet2": ("hgx-02", "mlx5_0")}


class ServerThread:
    """The gNMI target on its own event loop, so the test can block on HTTP meanwhile."""

    def __init__(self, state: SwitchState) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = GnmiServer(state)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(30)

    def call(self, fn: Callable[..., None], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def switch() -> Iterator[ServerThread]:
    # Cabled with the two NICs swapped: Ethernet1 reaches hgx-02, Ethernet2 reaches hgx-01.
    state = SwitchState(lldp={"Ethernet1": PLAN["Ethernet2"], "Ethernet2": PLAN["Ethernet1"]})
    server = ServerThread(state)
    try:
        yield server
    finally:
        server.stop()


def _topology(tmp: Path) -> Path:
    topo = tmp / "topology"
    topo.mkdir()
    rows = [
        f"{host},dcim.interface,{nic},leaf1,dcim.interface,{port}"
        for port, (host, nic) in PLAN.items()
    ]
    header = "side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name"
    (topo / "cables.csv").write_text("\n".join([header, *rows]) + "\n")
    return topo


def _wait(s: Stack, want: Callable[[list[dict[str, Any]]], bool], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    got: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            got = s.get("/v1/topology/cabling")["differences"]
        except TimeoutError:  # the sink busy writing: ask again until the deadline
            continue
        if want(got):
            return got
        time.sleep(0.5)
    raise AssertionError(f"cabling never became as expected; last {got}\n{s.logs()}")


def test_a_swap_seen_by_lldp_reaches_the_api_and_leaves_it_when_recabled(
    tmp_path: Path, switch: ServerThread
) -> None:
    require_broker()
    with stack(tmp_path, _topology(tmp_path), RAILTRACE_WORKER__LLDP_SETTLE_S="2") as s:
        config = s.collector_settings(
            f"""[[collect.gnmi]]
name = "leaf1"
address = "{switch.server.address}"
profile = "openconfig"
sample_interval_s = 1
insecure = true
"""
        )
        s.start("--config", str(config), "collect", "gnmi", name="collector")
        got = _wait(s, lambda d: len(d) == 2)
        assert [(d["interface"], d["kind"], d["planned"], d["seen"]) for d in got] == [
            (
                "Ethernet1",
                "miswired",
                {"device": "hgx-01", "interface": "mlx5_0"},
                {"device": "hgx-02", "interface": "mlx5_0"},
            ),
            (
                "Ethernet2",
                "miswired",
                {"device": "hgx-02", "interface": "mlx5_0"},
                {"device": "hgx-01", "interface": "mlx5_0"},
            ),
        ]
        assert (
            got[0]["detail"]
            == "leaf1:Ethernet1 should reach hgx-01:mlx5_0 but LLDP sees hgx-02:mlx5_0"
        )

        # The technician swaps the cables back: ON_CHANGE updates clear both differences.
        for port, far in PLAN.items():
            switch.call(switch.server.set_neighbour, port, far)
        _wait(s, lambda d: d == [])

        # A cable pulled: its neighbour is deleted, and once settled the port is missing.
        switch.call(switch.server.set_neighbour, "Ethernet2", None)
        (missing,) = _wait(s, lambda d: len(d) == 1)
        assert (missing["interface"], missing["kind"], missing["seen"]) == (
            "Ethernet2",
            "missing",
            None,
        )
