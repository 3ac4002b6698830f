"""What every switch port counts: bytes, packets, errors, FEC, pauses, over event time.

A job's flows move their bytes in the communication part of each training step (the rest of
the step is compute, when the links idle), so a sample shorter than a step sees bursts and a
longer one an average. Counters are cumulative from the switch's last clear; a reset starts
them again from zero. Every healthy link shows pre-FEC symbol errors and corrected FEC blocks
at its own steady rate, as PAM4 links do; only a fault makes frames uncorrectable.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field

from railtrace.world.incident import FLOW_RATE, NS, Incident, Job, LinkFault
from railtrace.world.routing import Route, Router
from railtrace.world.shape import Cable, Port

#: Bytes on the wire per RoCE packet (4096 bytes of payload plus headers).
PACKET_BYTES = 4200
#: LLDP, BGP and the like on every link, bytes/s each way.
CHATTER = 2e5
#: Pause frames a second: received from a NIC that stopped draining, and passed upstream.
PAUSE_SOURCE = 1.5e5
PAUSE_SPREAD = 4e4


@dataclass(slots=True)
class _Segment:
    start: int
    end: int
    period_ns: float
    window_ns: float  # the communication part at the end of each period
    bytes_per_step: float
    bytes_before: float
    steps_before: int


@dataclass(slots=True)
class JobClock:
    """A job's progress in event time: steps done and bytes one of its flows moved by t."""

    segments: list[_Segment] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, job: Job, end_ns: int) -> JobClock:
        clock = cls()
        step = job.step_s * NS
        per_step = FLOW_RATE * job.comm_fraction * job.step_s
        cuts = [(job.started_ns, 1.0)]
        if job.slowed_ns is not None:
            cuts.append((job.slowed_ns, job.slowdown))
        stop = job.stalled_ns if job.stalled_ns is not None else end_ns
        if job.paused is not None:
            cuts.append((job.paused[0], 0.0))
            cuts.append((job.paused[1], job.slowdown if job.slowed_ns is not None else 1.0))
        cuts.sort()
        done_bytes, done_steps = 0.0, 0
        for (at, factor), nxt in zip(cuts, [*cuts[1:], (stop, 0.0)], strict=True):
            until = min(nxt[0], stop)
            if until <= at:
                continue
            if factor == 0.0:
                seg = _Segment(at, until, math.inf, 0.0, 0.0, done_bytes, done_steps)
            else:
                period = step * factor
                window = period - (1 - job.comm_fraction) * step
                seg = _Segment(at, until, period, window, per_step, done_bytes, done_steps)
                done_steps += int((until - at) // period)
                done_bytes = _moved(seg, until - at)
            clock.segments.append(seg)
            clock.starts.append(at)
        return clock

    def _at(self, t: int) -> tuple[_Segment | None, float]:
        i = bisect.bisect_right(self.starts, t) - 1
        if i < 0:
            return None, 0.0
        seg = self.segments[i]
        return seg, min(t, seg.end) - seg.start

    def bytes(self, t: int) -> float:
        seg, into = self._at(t)
        return 0.0 if seg is None else _moved(seg, into)

    def step_ns(self, t: int) -> float | None:
        """How long a step takes at t (None while paused or before the start)."""
        seg, _ = self._at(t)
        return None if seg is None or seg.period_ns == math.inf else seg.period_ns

    def steps(self, t: int) -> int:
        seg, into = self._at(t)
        if seg is None:
            return 0
        if seg.period_ns == math.inf:
            return seg.steps_before
        return seg.steps_before + int(into // seg.period_ns)


def _moved(seg: _Segment, into: float) -> float:
    """Bytes by `into` ns into `seg`: whole steps, and the part of the current step's
    communication window gone by."""
    if seg.period_ns == math.inf:
        return seg.bytes_before
    k, rest = divmod(into, seg.period_ns)
    partial = max(0.0, rest - (seg.period_ns - seg.window_ns)) / seg.window_ns
    return seg.bytes_before + (int(k) + min(1.0, partial)) * seg.bytes_per_step


@dataclass(frozen=True, slots=True)
class Sample:
    """One port's counters at one sample, as the switch counts them."""

    ts_ns: int  # the switch's own clock
    port: Port
    counters: dict[str, int]


@dataclass(frozen=True, slots=True)
class StateChange:
    ts_ns: int
    port: Port
    up: bool


@dataclass(frozen=True, slots=True)
class SpeedChange:
    ts_ns: int
    port: Port
    gbps: int


@dataclass(slots=True)
class _Share:
    """Bytes a job's flows send through a port in one direction, from `from_ns` to `to_ns`."""

    job: int
    weight: float
    from_ns: int
    to_ns: int


class Telemetry:
    """Per switch port, what it counts; built once per incident."""

    def __init__(self, inc: Incident, rng: random.Random) -> None:
        self.inc = inc
        self.rng = rng
        self.clocks = [JobClock.of(job, inc.end_ns) for job in inc.jobs]
        self.shares: dict[tuple[Port, str], list[_Share]] = defaultdict(list)
        self.background: dict[tuple[Port, str], float] = defaultdict(float)
        self.faults: dict[Cable, list[LinkFault]] = defaultdict(list)
        for fault in inc.link_faults:
            self.faults[fault.cable].append(fault)
        self.baseline = {
            c: math.exp(rng.uniform(math.log(50), math.log(5e5))) for c in inc.cluster.cables
        }
        self._spread_pauses()
        self._route_jobs()
        for route, rate in inc.background:
            for (cable, up), share in route.items():
                src, dst = (cable.a, cable.b) if up else (cable.b, cable.a)
                self.background[(src, "out")] += rate * share
                self.background[(dst, "in")] += rate * share

    def _route_jobs(self) -> None:
        inc = self.inc
        downs = {f.cable: f for f in inc.link_faults if f.kind == "down"}
        for j, job in enumerate(inc.jobs):
            moved: list[tuple[Route, int]] = []
            for flow in job.flows:
                cut = next((downs[c] for c, _ in flow.route if c in downs), None)
                until = inc.end_ns if cut is None else cut.at_ns
                self._add_route(j, flow.route, job.started_ns, until)
                if cut is not None and job.stalled_ns is None:
                    # The job survived: its flow was routed around the dead cable.
                    router = Router(inc.cluster, inc.dims.routing, down={cut.cable})
                    again = router.route(flow.src, flow.dst, hash(flow.src_rank) & 0xFFFF)
                    moved.append((again, cut.at_ns))
            for route, at in moved:
                self._add_route(j, route, at, inc.end_ns)

    def _add_route(self, job: int, route: Route, from_ns: int, to_ns: int) -> None:
        for (cable, up), share in route.items():
            src, dst = (cable.a, cable.b) if up else (cable.b, cable.a)
            self.shares[(src, "out")].append(_Share(job, share, from_ns, to_ns))
            self.shares[(dst, "in")].append(_Share(job, share, from_ns, to_ns))

    def _spread_pauses(self) -> None:
        """Per port, from when it receives and sends pause frames, and how many a second."""
        self.pauses: dict[tuple[Port, str], list[tuple[int, float]]] = defaultdict(list)
        cluster = self.inc.cluster
        for fault in self.inc.link_faults:
            if fault.kind != "pfc":
                continue
            cable, at = fault.cable, fault.at_ns
            leaf = cable.b.device
            self.pauses[(cable.b, "rx")].append((at, PAUSE_SOURCE))
            for up in cluster.up.get(leaf, []):
                self.pauses[(up.a, "tx")].append((at + NS, PAUSE_SPREAD))
                self.pauses[(up.b, "rx")].append((at + NS, PAUSE_SPREAD))
                spine = up.b.device
                for other in cluster.cables:
                    if other.b.device == spine and other.a.device != leaf:
                        self.pauses[(other.b, "tx")].append((at + 3 * NS, PAUSE_SPREAD / 4))
                        self.pauses[(other.a, "rx")].append((at + 3 * NS, PAUSE_SPREAD / 4))

    # -- what one port counts at one true time ---------------------------------------------

    def _bytes(self, port: Port, way: str, t: int, cable: Cable) -> float:
        total = (CHATTER + self.background.get((port, way), 0.0)) * (t - self.inc.start_ns) / NS
        for s in self.shares.get((port, way), ()):
            if t <= s.from_ns:
                continue
            clock = self.clocks[s.job]
            total += s.weight * (clock.bytes(min(t, s.to_ns)) - clock.bytes(s.from_ns))
        for fault in self.faults.get(cable, ()):
            if fault.kind in ("down", "flap") and t > fault.at_ns:
                # Nothing crosses a dead cable: what would have is lost (the jobs over it
                # stalled, or were routed elsewhere from then on).
                back = fault.up_ns if fault.kind == "flap" and fault.up_ns is not None else None
                stop = min(t, back) if back is not None else t
                lost_rate = CHATTER + self.background.get((port, way), 0.0)
                total -= lost_rate * (stop - fault.at_ns) / NS
        return max(total, 0.0)

    def counters(self, port: Port, t: int) -> dict[str, float]:
        """Cumulative counts since the incident began (before any clear), at true time t."""
        cable = self.inc.cluster.at[port]
        rx = self._bytes(port, "in", t, cable)
        tx = self._bytes(port, "out", t, cable)
        elapsed = (t - self.inc.start_ns) / NS
        symbols = self.baseline[cable] * elapsed
        errors = 0.0
        pfc_rx = pfc_tx = 0.0
        for fault in self.faults.get(cable, ()):
            if fault.kind == "errors" and t > fault.at_ns:
                after = rx - self._bytes(port, "in", fault.at_ns, cable)
                errors += fault.ratio * after / PACKET_BYTES
                symbols += 200 * self.baseline[cable] * (t - fault.at_ns) / NS
        for at, rate in self.pauses.get((port, "rx"), ()):
            pfc_rx += rate * max(0, t - at) / NS
        for at, rate in self.pauses.get((port, "tx"), ()):
            pfc_tx += rate * max(0, t - at) / NS
        return {
            "in_octets": rx,
            "out_octets": tx,
            "in_pkts": rx / PACKET_BYTES,
            "out_pkts": tx / PACKET_BYTES,
            "in_errors": errors,
            "in_fcs_errors": errors,
            "fec_uncorrectable": errors,
            "fec_corrected": symbols * 0.8,
            "symbol_errors": symbols,
            "pfc_rx": pfc_rx,
            "pfc_tx": pfc_tx,
        }
