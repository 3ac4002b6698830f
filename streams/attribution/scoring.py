"""How much one observation explains a stall: the weights and curves attribution multiplies.

Kept apart from the correlator's bookkeeping so that an engineer can check a verdict by hand
against this file and the README's attribution page. Every figure here is a documented default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from railtrace.streams.records import LinkEventKind

#: How strongly each kind of link anomaly, on its own, suggests a fault that stops traffic.
#: A link that went down stops every flow on it; a flap or uncorrectable FEC drops packets until
#: RDMA gives up; a PFC storm may be a victim of congestion elsewhere; a traffic drop is what
#: every link of a hung job shows, so it is evidence of the hang, not of its cause. A port
#: sending pauses (PFC_PAUSING) is congested by something further on: never the source itself.
KIND_WEIGHT: dict[LinkEventKind, float] = {
    LinkEventKind.DOWN: 1.0,
    LinkEventKind.FLAP: 0.95,
    LinkEventKind.FEC_UNCORRECTABLE: 0.75,
    LinkEventKind.ERROR_BURST: 0.7,
    LinkEventKind.RX_POWER_LOW: 0.45,
    LinkEventKind.SPEED_DOWN: 0.5,
    LinkEventKind.PFC_STORM: 0.45,
    LinkEventKind.PFC_PAUSING: 0.15,
    # A counter that fell (a reboot, `clear counters`, a switch whose counters run backwards)
    # says nothing about the link carrying traffic: never evidence of a fault.
    LinkEventKind.COUNTER_RESET: 0.0,
    LinkEventKind.TRAFFIC_DROP: 0.1,
    LinkEventKind.UP: 0.0,
}

#: For a job that slowed down rather than stopped, what differs from KIND_WEIGHT: a link that
#: went down stops what it carries, so it slows a job only while traffic moves elsewhere,
#: while errors at a low rate, or a lower negotiated speed, are exactly how a gray link slows
#: one.
SLOW_KIND_WEIGHT: dict[LinkEventKind, float] = {
    LinkEventKind.SPEED_DOWN: 0.9,
    LinkEventKind.DOWN: 0.4,
    LinkEventKind.FLAP: 0.6,
    LinkEventKind.TRAFFIC_DROP: 0.0,
}

#: Xid codes (NVIDIA's Xid catalogue) by how surely they stop a GPU taking part in collectives.
XID_WEIGHT: dict[int, float] = {
    79: 1.0,  # GPU has fallen off the bus
    48: 0.95,  # double-bit ECC error
    94: 0.8,  # contained ECC error
    95: 0.95,  # uncontained ECC error
    63: 0.7,  # ECC page retirement / row remap event
    64: 0.9,  # ECC page retirement / row remap failure
    74: 0.9,  # NVLink error
    119: 0.85,  # GSP RPC timeout
    120: 0.85,  # GSP error
    13: 0.5,  # graphics engine exception (often the application)
    31: 0.5,  # GPU memory page fault (often the application)
    43: 0.4,  # GPU stopped processing
    45: 0.1,  # preemptive cleanup: a consequence of another error
}
DEFAULT_XID_WEIGHT = 0.4
#: An Xid at least this severe on a job's host is itself evidence that the job stalled.
XID_STALL_THRESHOLD = 0.8

#: For anomalies measured as a rate, the rate at which the kind's weight applies as it stands;
#: each tenfold above it adds a sixth of the weight (up to half again): a pause storm of
#: millions of frames a second says more than one just over the threshold.
MAGNITUDE_REFERENCE: dict[LinkEventKind, float] = {
    LinkEventKind.PFC_STORM: 5000.0,
    LinkEventKind.PFC_PAUSING: 5000.0,
    LinkEventKind.ERROR_BURST: 1.0,
    LinkEventKind.FEC_UNCORRECTABLE: 1.0,
}


def kind_weight(kind: LinkEventKind, value: float, slow: bool = False) -> float:
    """Weight of one anomaly, with its magnitude where it has one, capped at 1; `slow` when
    it is to explain a slowdown rather than a stall.

    >>> kind_weight(LinkEventKind.PFC_STORM, 5000.0), kind_weight(LinkEventKind.PFC_STORM, 5e6)
    (0.45, 0.675)
    >>> kind_weight(LinkEventKind.DOWN, 0.0), kind_weight(LinkEventKind.DOWN, 0.0, slow=True)
    (1.0, 0.4)
    """
    base = SLOW_KIND_WEIGHT.get(kind, KIND_WEIGHT[kind]) if slow else KIND_WEIGHT[kind]
    ref = MAGNITUDE_REFERENCE.get(kind)
    if ref is None or value <= ref:
        return base
    return round(min(1.0, base * (1.0 + min(0.5, math.log10(value / ref) / 6.0))), 4)


#: A link whose anomaly came from a transport error NCCL reported against it (the peer address
#: lies at its far end) gains this factor.
CORROBORATION_BOOST = 1.5

#: An ECMP member the job might use (crossing probability below 1) whose traffic did not
#: collapse when the job stopped, while other links of the job did, was not carrying the job:
#: a member carrying a stalled job's flow loses its traffic with it (the correlator then
#: passes probability 1). Its anomaly stays a candidate, scaled by this, so a spine link that
#: went down at the same moment is not blamed for a hang it cannot have caused. Without any
#: traffic drop on the job's links (telemetry without rates), nothing tells members apart and
#: they keep their full weight.
IDLE_MEMBER_FACTOR = 0.3


#: A job whose NCCL printed no channels (NCCL_DEBUG unset or WARN) is placed from its hosts
#: alone, and every pair of them on each rail is taken as talking (topology.PathFinder's
#: mesh_links): links it may not use at all become candidates with full weight. Its link
#: candidates are scaled by this, so the same fault is blamed with less confidence than when
#: the channels show the job's flows on the link.
INFERRED_PATHS_FACTOR = 0.8


#: Pause frames spread upstream: a switch paused on one port fills its buffers and pauses the
#: ports feeding it, which pause theirs. A port paused by a switch that is itself paused on
#: another port is a victim of that spread; its storm is scaled by this, so the port where the
#: pauses start (paused by a host NIC, or by a switch nobody pauses) is the one blamed.
PFC_VICTIM_FACTOR = 0.25
#: The port where such a spread starts, found by following the pauses back from the victims
#: among the job's links, gains this factor: many victims pointing at one port is strong
#: evidence that its peer (usually a NIC that stopped draining) is the cause.
PFC_SOURCE_BOOST = 1.4


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Anomalies count fully at the stall and fade with distance from it.

    Before the stall the fade is slow (a fault is first seen, then NCCL's transport retries
    run out); after it, fast (telemetry lags the fault by at most a sampling interval, so a
    much later anomaly is more likely a consequence than the cause).
    """

    lookback_s: float = 300.0
    lookahead_s: float = 60.0
    tau_before_s: float = 90.0
    tau_after_s: float = 30.0

    def factor(self, event_ns: int, stall_ns: int) -> float:
        """Weight of an anomaly at `event_ns` for a stall at `stall_ns`, 0 outside the window.

        >>> w = TimeWindow()
        >>> w.factor(0, 0), round(w.factor(0, 90 * 10**9), 3), w.factor(0, 400 * 10**9)
        (1.0, 0.368, 0.0)
        """
        delta_s = (event_ns - stall_ns) / 1e9
        if delta_s < -self.lookback_s or delta_s > self.lookahead_s:
            return 0.0
        tau = self.tau_before_s if delta_s < 0 else self.tau_after_s
        return math.exp(-abs(delta_s) / tau)


def path_factor(crossing_probability: float) -> float:
    """A link the job surely uses counts fully; one of many ECMP choices still counts half.

    Halving, not scaling by the probability, because a fault on an ECMP member that did stall
    the job means the job's flow was hashed onto it; the probability only says how often that
    happens. Telemetry can settle it: a member whose traffic collapsed when the job stopped was
    carrying the job, and the correlator then passes probability 1.

    >>> path_factor(1.0), path_factor(0.0), path_factor(1 / 32)
    (1.0, 0.0, 0.515625)
    """
    if crossing_probability <= 0.0:
        return 0.0
    return 0.5 + 0.5 * min(crossing_probability, 1.0)


def combine(scores: list[float]) -> float:
    """Several independent pieces of evidence for one culprit: 1 - prod(1 - s). The caller
    passes one score per independent observation: repeats of one kind of anomaly on one link
    (both ends, every counter, every re-arm) are one observation, or many small scores would
    add up to a blame.

    >>> round(combine([0.5, 0.5]), 2), combine([])
    (0.75, 0.0)
    """
    miss = 1.0
    for s in scores:
        miss *= 1.0 - min(max(s, 0.0), 1.0)
    return 1.0 - miss


def confidence(best: float, runner_up: float) -> float:
    """Confidence in the top candidate: its own strength times its margin over the next one.

    >>> confidence(0.9, 0.0), confidence(0.8, 0.8), confidence(0.0, 0.0)
    (0.9, 0.4, 0.0)
    """
    if best <= 0.0:
        return 0.0
    return round(best * best / (best + runner_up), 4)
