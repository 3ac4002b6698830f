"""What each switch port of a simulated incident measures over time.

For every cabled switch interface it yields, each sampling interval, the counters (octets,
errors, FCS, uncorrectable FEC, PFC pause) and, on change, the oper-status, as a switch would.
Traffic follows the jobs' flows along the links they were hashed onto and stops when a job
hangs; faults and unrelated anomalies shape the counters of their own links.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from railtrace.simulate.scenario import FLOW_RATE, NS, Anomaly, Fault, Scenario
from railtrace.streams.records import Endpoint, LinkRef
from railtrace.topology.attrs import Role

IDLE_RATE = 2e5  # LLDP, BGP and the like on a link no job uses, bytes/s
COUNTER_FIELDS = (
    "in_octets",
    "out_octets",
    "in_errors",
    "in_fcs_errors",
    "fec_uncorrectable",
    "pfc_rx",
    "pfc_tx",
)


@dataclass(frozen=True, slots=True)
class PortSample:
    ts_ns: int
    port: Endpoint
    counters: dict[str, int]


@dataclass(frozen=True, slots=True)
class PortState:
    ts_ns: int
    port: Endpoint
    up: bool


def _flap_schedule(at: int) -> list[tuple[int, bool]]:
    offsets = [(0, False), (4, True), (9, False), (15, True), (21, False), (30, True)]
    return [(at + s * NS, up) for s, up in offsets]


class _Effects:
    """Per link: when it is down, and the extra error / pause rates it shows at a time."""

    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.state_changes: dict[Endpoint, list[tuple[int, bool]]] = {}
        self.troubles: list[tuple[Fault, LinkRef, int, bool]] = []  # kind, link, at, is_fault
        if sc.fault_link is not None and sc.fault_at_ns is not None:
            self.troubles.append((sc.fault, sc.fault_link, sc.fault_at_ns, True))
        for anomaly in sc.unrelated:
            self.troubles.append((anomaly.kind, anomaly.link, anomaly.at_ns, False))
        for kind, link, at, is_fault in self.troubles:
            ends = [e for e in (link.a, link.b) if sc.fabric.role(e.device) != Role.HOST]
            if kind is Fault.NIC_DOWN:
                changes = [(at, False)]
            elif kind is Fault.LINK_DOWN:
                changes = [(at, False)] if is_fault else [(at, False), (at + 45 * NS, True)]
            elif kind is Fault.FLAP:
                changes = _flap_schedule(at)
            else:
                continue
            for end in ends:
                self.state_changes.setdefault(end, []).extend(changes)

    def is_up(self, port: Endpoint, t: int) -> bool:
        up = True
        for at, state in self.state_changes.get(port, ()):
            if at <= t:
                up = state
        return up

    def extra(self, port: Endpoint, lid: str, t: int) -> dict[str, float]:
        out = {
            "in_errors": 0.0,
            "in_fcs_errors": 0.0,
            "fec_uncorrectable": 0.0,
            "pfc_rx": 0.0,
            "pfc_tx": 0.0,
        }
        for kind, link, at, _ in self.troubles:
            if t < at:
                continue
            if kind is Fault.CRC_BURST and link.link_id == lid and t < at + 90 * NS:
                out["in_fcs_errors"] += 3000.0
                out["in_errors"] += 3000.0
                out["fec_uncorrectable"] += 400.0
            elif kind is Fault.PFC_STORM:
                leaf = link.a if self.sc.fabric.role(link.a.device) == Role.LEAF else link.b
                if port == leaf:
                    out["pfc_rx"] += 2.0e6  # the stuck NIC pauses its leaf port
                elif (
                    port.device == leaf.device
                    and self.sc.fabric.role(_peer(self.sc, port)) != Role.HOST
                ):
                    out["pfc_tx"] += 900.0  # the leaf passes some back-pressure upstream
        return out


def _peer(sc: Scenario, port: Endpoint) -> str:
    ref = sc.fabric.links[sc.fabric.link_at[port]]
    return ref.b.device if ref.a == port else ref.a.device


def _traffic(sc: Scenario) -> dict[Endpoint, list[tuple[float, int | None, int]]]:
    """Per switch port: (bytes/s, stop time, direction 0=in 1=out) of every flow crossing it."""
    loads: dict[Endpoint, list[tuple[float, int | None, int]]] = {}
    for job in sc.jobs:
        stop = None if job.stalled_ns is None else job.stalled_ns + NS
        for flow in job.flows:
            here = flow.src.device
            for lid in flow.path:
                ref = sc.fabric.links[lid]
                near, far = (ref.a, ref.b) if ref.a.device == here else (ref.b, ref.a)
                for port, direction in ((near, 1), (far, 0)):
                    if sc.fabric.role(port.device) != Role.HOST:
                        loads.setdefault(port, []).append((FLOW_RATE, stop, direction))
                here = far.device
    return loads


def port_series(sc: Scenario) -> Iterator[PortSample | PortState]:
    """All samples and state changes of the incident, in time order."""
    rng = random.Random(f"series-{sc.seed}-{sc.fault}")
    effects = _Effects(sc)
    loads = _traffic(sc)
    ports = sorted(
        (end, lid)
        for lid, ref in sc.fabric.links.items()
        for end in (ref.a, ref.b)
        if sc.fabric.role(end.device) != Role.HOST
    )
    counters = {
        port: [rng.randrange(10**12, 10**15), rng.randrange(10**12, 10**15), 0, 0, 0, 0, 0]
        for port, _ in ports
    }
    # One port's octet counter is about to wrap, as 64-bit counters on long-lived ports do.
    counters[ports[rng.randrange(len(ports))][0]][0] = 2**64 - 3 * 10**11
    jitter = {dev: rng.randrange(0, 400) * 1_000_000 for dev in {p.device for p, _ in ports}}
    events: list[PortSample | PortState] = [
        PortState(sc.start_ns + jitter[p.device], p, True) for p, _ in ports
    ]
    for port, changes in effects.state_changes.items():
        events.extend(PortState(at + 150_000_000, port, up) for at, up in changes)
    out = sorted(events, key=lambda e: (e.ts_ns, e.port.device, e.port.interface))
    yield from out
    step = sc.sample_s * NS
    for k in range(1, (sc.end_ns - sc.start_ns) // step + 1):
        tick = sc.start_ns + k * step
        for port, lid in ports:
            t = tick + jitter[port.device]
            c = counters[port]
            up = effects.is_up(port, t)
            rates = [IDLE_RATE, IDLE_RATE]
            for rate, stop, direction in loads.get(port, ()):
                if stop is None or t < stop:
                    rates[direction] += rate
            extra = effects.extra(port, lid, t)
            if not up:
                rates = [0.0, 0.0]
            noise = 1.0 + rng.uniform(-0.03, 0.03)
            c[0] = (c[0] + int(rates[0] * noise * sc.sample_s)) % 2**64
            c[1] = (c[1] + int(rates[1] * noise * sc.sample_s)) % 2**64
            c[2] += int(extra["in_errors"] * sc.sample_s) + (rng.random() < 0.002)
            c[3] += int(extra["in_fcs_errors"] * sc.sample_s)
            c[4] += int(extra["fec_uncorrectable"] * sc.sample_s)
            c[5] += int(extra["pfc_rx"] * sc.sample_s) + rng.randrange(3)
            c[6] += int(extra["pfc_tx"] * sc.sample_s) + rng.randrange(3)
            yield PortSample(t, port, dict(zip(COUNTER_FIELDS, c, strict=True)))


__all__ = ["COUNTER_FIELDS", "Anomaly", "PortSample", "PortState", "port_series"]
