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

from railtrace.simulate.scenario import (
    DOWN_FAULTS,
    FLOW_RATE,
    FULL_SPEED_GBPS,
    LOW_SPEED_GBPS,
    NS,
    Anomaly,
    Fault,
    Scenario,
)
from railtrace.topology.attrs import Role
from railtrace.topology.ends import Endpoint, LinkRef

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
    #: The transceiver's receive power, for the ports whose optics are watched (None: not).
    rx_power_dbm: float | None = None


@dataclass(frozen=True, slots=True)
class PortNeighbour:
    """What a port's LLDP sees at its far end: the device and port as cabled."""

    ts_ns: int
    port: Endpoint
    remote: Endpoint


@dataclass(frozen=True, slots=True)
class PortSpeed:
    """The speed a port negotiated, reported at the start and on change."""

    ts_ns: int
    port: Endpoint
    gbps: float


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
        self.watched_optics: set[Endpoint] = set()
        self.slowed_ports: dict[Endpoint, int] = {}  # port -> when it came back at low speed
        self.dying_optics: dict[Endpoint, int] = {}
        self.troubles: list[tuple[Fault, LinkRef, int, bool]] = []  # kind, link, at, is_fault
        for strike in sc.strikes:
            if strike.link is not None:
                self.troubles.append((strike.kind, strike.link, strike.at_ns, True))
        rng = random.Random(f"effects-{sc.seed}-{sc.fault}")
        # Per port: (from, until, extra counter rates) of the troubles that touch it.
        self.rates: dict[Endpoint, list[tuple[int, int | None, dict[str, float]]]] = {}
        for anomaly in sc.unrelated:
            self.troubles.append((anomaly.kind, anomaly.link, anomaly.at_ns, False))
        for kind, link, at, is_fault in self.troubles:
            ends = [e for e in (link.a, link.b) if sc.fabric.role(e.device) != Role.HOST]
            if kind is Fault.LINK_DOWN and not is_fault:
                changes = [(at, False), (at + 45 * NS, True)]  # unrelated: back up
            elif kind in DOWN_FAULTS:
                changes = [(at, False)]
            elif kind is Fault.FLAP:
                changes = _flap_schedule(at)
            elif kind is Fault.SPEED_DOWN:
                changes = [(at, False), (at + 2 * NS, True)]  # renegotiation
                for end in ends:
                    self.slowed_ports[end] = at + 2 * NS
            else:
                changes = []
            self._counters(kind, link, at, ends, rng)
            for end in ends:
                self.state_changes.setdefault(end, []).extend(changes)

    def _counters(
        self, kind: Fault, link: LinkRef, at: int, ends: list[Endpoint], rng: random.Random
    ) -> None:
        if kind is Fault.CRC_BURST:
            burst = {"in_fcs_errors": 3000.0, "in_errors": 3000.0, "fec_uncorrectable": 400.0}
            for end in ends:
                self._add(end, at, at + 90 * NS, **burst)
        elif kind is Fault.GRAY:
            # A few corrupted frames a second: RDMA retransmits them, so the link stays up
            # and NCCL never complains, but every retransmit stalls the ring.
            fcs = 5.0 + 45.0 * rng.random()
            fec = 1.0 + 9.0 * rng.random()
            for end in ends:
                self._add(end, at, in_fcs_errors=fcs, in_errors=fcs, fec_uncorrectable=fec)
        elif kind is Fault.PFC_STORM:
            self._pfc_spread(link, at)
        if kind is Fault.OPTIC:
            # Errors in the last half minute before the light is too weak to hold the link.
            for end in ends:
                self._add(end, at - 30 * NS, at, in_fcs_errors=40.0, in_errors=40.0)
                self.dying_optics[end] = at
            # The switch's optics are watched: every port of the leaf reports its power.
            for end in ends:
                for port, _ in self.sc.fabric.ports(end.device):
                    self.watched_optics.add(port)

    def rx_power(self, port: Endpoint, t: int, noise: float) -> float | None:
        """Receive power of a watched port: steady near -2 dBm, or falling over the three
        minutes before a dying optic fails, through -10 dBm (the alarm) to no light."""
        if port not in self.watched_optics:
            return None
        healthy = -2.0 + noise
        fails = self.dying_optics.get(port)
        if fails is None or t < fails - 180 * NS:
            return healthy
        if t >= fails:
            return -40.0
        return healthy - 12.0 * (t - (fails - 180 * NS)) / (180 * NS)

    def _add(self, port: Endpoint, start: int, until: int | None = None, **rates: float) -> None:
        self.rates.setdefault(port, []).append((start, until, rates))

    def _pfc_spread(self, link: LinkRef, at: int) -> None:
        """A NIC stops draining: it pauses its leaf port, the leaf pauses everything feeding it
        (its spines and its other hosts), and the spines, filling up, pause their other leaves.
        Every one of those ports sees a storm; only the leaf port facing the NIC is the source."""
        fabric = self.sc.fabric
        leaf = link.a if fabric.role(link.a.device) == Role.LEAF else link.b
        self._add(leaf, at, pfc_rx=2.0e6)
        for port, _ in self.sc.fabric.ports(leaf.device):
            if port == leaf:
                continue
            far = self.peer_port(port)
            upstream = fabric.role(far.device) != Role.HOST
            self._add(port, at + NS, pfc_tx=6.0e4 if upstream else 3.0e4)
            if not upstream:
                continue
            self._add(far, at + NS, pfc_rx=6.0e4)  # the spine is paused by the leaf: a victim
            for spine_port, _ in self.sc.fabric.ports(far.device):
                if spine_port == far:
                    continue
                other = self.peer_port(spine_port)
                if fabric.role(other.device) == Role.SUPER_SPINE:
                    continue
                self._add(spine_port, at + 3 * NS, pfc_tx=2.0e4)
                self._add(other, at + 3 * NS, pfc_rx=2.0e4)  # other leaves, paused by the spine

    def peer_port(self, port: Endpoint) -> Endpoint:
        ref = self.sc.fabric.links[self.sc.fabric.link_at[port]]
        return ref.b if ref.a == port else ref.a

    def is_up(self, port: Endpoint, t: int) -> bool:
        up = True
        for at, state in self.state_changes.get(port, ()):
            if at <= t:
                up = state
        return up

    def extra(self, port: Endpoint, t: int) -> dict[str, float]:
        """Extra counter rates (per second) the troubles add at `port` at `t`."""
        out = dict.fromkeys(
            ("in_errors", "in_fcs_errors", "fec_uncorrectable", "pfc_rx", "pfc_tx"), 0.0
        )
        for start, end, rates in self.rates.get(port, ()):
            if start <= t and (end is None or t < end):
                for name, rate in rates.items():
                    out[name] += rate
        return out


Load = tuple[float, int | None, int, int | None, float]


def _traffic(sc: Scenario) -> dict[Endpoint, list[Load]]:
    """Per switch port: (bytes/s, stop time, direction 0=in 1=out, slowed from, slowdown) of
    every flow crossing it."""
    loads: dict[Endpoint, list[Load]] = {}
    for job in sc.jobs:
        stop = None if job.stalled_ns is None else job.stalled_ns + NS
        for flow in job.flows:
            here = flow.src.device
            for lid in flow.path:
                ref = sc.fabric.links[lid]
                near, far = (ref.a, ref.b) if ref.a.device == here else (ref.b, ref.a)
                for port, direction in ((near, 1), (far, 0)):
                    if sc.fabric.role(port.device) != Role.HOST:
                        loads.setdefault(port, []).append(
                            (FLOW_RATE, stop, direction, job.slowed_ns, job.slowdown)
                        )
                here = far.device
    return loads


Item = PortSample | PortState | PortNeighbour | PortSpeed


def port_series(sc: Scenario) -> Iterator[Item]:
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
    # Drawn in device order: a set's order changes with the hash seed, and a seed must give
    # the same capture in every process.
    devices = sorted({p.device for p, _ in ports})
    jitter = {dev: rng.randrange(0, 400) * 1_000_000 for dev in devices}
    events: list[Item] = [PortState(sc.start_ns + jitter[p.device], p, True) for p, _ in ports]
    # Every port's LLDP neighbour, once at the start, as cabled (not as planned).
    for port, lid in ports:
        ref = sc.fabric.links[lid]
        events.append(
            PortNeighbour(
                sc.start_ns + jitter[port.device], port, ref.b if ref.a == port else ref.a
            )
        )
    events.extend(
        PortSpeed(sc.start_ns + jitter[port.device], port, FULL_SPEED_GBPS) for port, _ in ports
    )
    events.extend(
        PortSpeed(at + 150_000_000, port, LOW_SPEED_GBPS)
        for port, at in effects.slowed_ports.items()
    )
    for port, changes in effects.state_changes.items():
        events.extend(PortState(at + 150_000_000, port, up) for at, up in changes)
    out = sorted(events, key=lambda e: (e.ts_ns, e.port.device, e.port.interface))
    yield from out
    step = sc.sample_s * NS
    for k in range(1, (sc.telemetry_end_ns - sc.start_ns) // step + 1):
        tick = sc.start_ns + k * step
        for port, _ in ports:
            t = tick + jitter[port.device]
            c = counters[port]
            up = effects.is_up(port, t)
            rates = [IDLE_RATE, IDLE_RATE]
            for rate, stop, direction, slowed, slowdown in loads.get(port, ()):
                if stop is None or t < stop:
                    rates[direction] += rate if slowed is None or t < slowed else rate / slowdown
            extra = effects.extra(port, t)
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
            power = effects.rx_power(port, t, rng.uniform(-0.3, 0.3))
            yield PortSample(t, port, dict(zip(COUNTER_FIELDS, c, strict=True)), power)


__all__ = [
    "COUNTER_FIELDS",
    "Anomaly",
    "Item",
    "PortNeighbour",
    "PortSample",
    "PortSpeed",
    "PortState",
    "port_series",
]
