"""How much one observation explains a stall: the weights and curves attribution multiplies.

Kept apart from the correlator's bookkeeping so that an engineer can check a verdict by hand
against this file and the README's attribution page. Every figure here is a documented default.
"""

from __future__ import annotations

import itertools
import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from railtrace.streams.records import LinkEventKind

K = LinkEventKind


class ScoringRules(BaseModel):
    """How much one observation explains a stall: the `attribution.scoring` section of the
    settings. Every figure is a documented default (the README's attribution page)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind_weight: dict[LinkEventKind, float] = Field(
        default={
            K.DOWN: 1.0,
            K.FLAP: 0.95,
            K.FEC_UNCORRECTABLE: 0.75,
            K.ERROR_BURST: 0.7,
            K.PRE_FEC_ERRORS: 0.7,
            K.RX_POWER_LOW: 0.45,
            K.SPEED_DOWN: 0.5,
            K.PFC_STORM: 0.45,
            K.PFC_PAUSING: 0.15,
            K.COUNTER_RESET: 0.0,
            K.TRAFFIC_DROP: 0.1,
            K.UP: 0.0,
        },
        description="How strongly each kind of link anomaly, on its own, suggests a fault "
        "that stops traffic. A link that went down stops every flow on it; a flap or "
        "uncorrectable FEC drops packets until RDMA gives up; a rise in what the FEC "
        "corrected is how a corrupting link shows once its job stopped sending (no frames, "
        "no frame errors, but the line still carries idles to correct); a PFC storm may be a "
        "victim of congestion elsewhere; a traffic drop is what every link of a hung job "
        "shows (evidence of the hang, not of its cause); a port sending pauses is congested "
        "by something further on; a counter that fell (a reboot, `clear counters`) says "
        "nothing about the link carrying traffic. Every kind must have a weight.",
    )
    slow_kind_weight: dict[LinkEventKind, float] = Field(
        default={
            K.SPEED_DOWN: 0.9,
            K.DOWN: 0.4,
            K.FLAP: 0.6,
            K.TRAFFIC_DROP: 0.0,
            K.PRE_FEC_ERRORS: 0.2,
        },
        description="For a job that slowed rather than stopped, what differs from "
        "kind_weight: a link that went down slows a job only while traffic moves elsewhere, "
        "while errors at a low rate or a lower negotiated speed are how a gray link slows one. "
        "What the FEC corrected costs a running job nothing (no frame is resent): a slowed "
        "job's link shows lost frames or uncorrectable blocks beside it, and a rise alone is "
        "a link degrading that other jobs' traffic crosses.",
    )
    magnitude_reference: dict[LinkEventKind, float] = Field(
        default={
            K.PFC_STORM: 5000.0,
            K.PFC_PAUSING: 5000.0,
            K.ERROR_BURST: 1.0,
            K.PRE_FEC_ERRORS: 1.0,
            K.FEC_UNCORRECTABLE: 1.0,
        },
        description="For anomalies measured as a rate, the rate at which the kind's weight "
        "applies as it stands; each tenfold above it adds a sixth of the weight (up to half "
        "again): a pause storm of millions of frames a second says more than one just over "
        "the threshold.",
    )
    xid_weight: dict[int, float] = Field(
        default={
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
        },
        description="Xid codes (NVIDIA's Xid catalogue) by how surely they stop a GPU taking "
        "part in collectives: 79 (fallen off the bus) 1.0, ECC and NVLink errors 0.8-0.95, "
        "GSP errors 0.85, application-caused exceptions 0.5, 45 (cleanup after another "
        "error) 0.1.",
    )
    default_xid_weight: float = Field(
        default=0.4, ge=0, le=1, description="An Xid not in xid_weight."
    )
    xid_stall_threshold: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="An Xid at least this severe on a job's host is itself evidence that the "
        "job stalled.",
    )
    corroboration_boost: float = Field(
        default=1.5,
        ge=1,
        description="A link whose anomaly matches a transport error NCCL reported against it "
        "(the peer address lies at its far end) gains this factor.",
    )
    idle_member_factor: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="An ECMP member the job might use whose traffic did not collapse when the "
        "job stopped, while other links of the job did, was not carrying the job; its "
        "anomaly stays a candidate scaled by this, so a spine link that went down at the "
        "same moment is not blamed for a hang it cannot have caused. Without any traffic "
        "drop on the job's links, nothing tells members apart and they keep full weight; "
        "nor does a member on the path between a host and the peer its NCCL error named, "
        "since on a link shared with other jobs this job's own drop does not show.",
    )
    inferred_paths_factor: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="A job whose NCCL printed no channels (NCCL_DEBUG unset or WARN) is placed "
        "from its hosts alone, every pair on each rail taken as talking: its link candidates "
        "are scaled by this, so the same fault is blamed with less confidence than when the "
        "channels show the job's flows on the link.",
    )
    pfc_victim_factor: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="A port paused by a switch that is itself paused on another port is a "
        "victim of spreading pauses; its storm is scaled by this, so the port where the "
        "pauses start is the one blamed.",
    )
    pfc_source_boost: float = Field(
        default=1.4,
        ge=1,
        description="The port where a spread of pauses starts, found by following them back "
        "from the victims among the job's links, gains this factor: many victims pointing "
        "at one port is strong evidence that its peer (usually a NIC that stopped draining) "
        "is the cause.",
    )

    @model_validator(mode="after")
    def _every_kind_weighed(self) -> ScoringRules:
        missing = sorted(str(k) for k in LinkEventKind if k not in self.kind_weight)
        if missing:
            raise ValueError(f"kind_weight has no weight for {', '.join(missing)}")
        return self

    def xid(self, xid: int) -> float:
        """How surely Xid `xid` takes its GPU out of the job."""
        return self.xid_weight.get(xid, self.default_xid_weight)

    def kind(self, kind: LinkEventKind, value: float, slow: bool = False) -> float:
        """Weight of one anomaly, with its magnitude where it has one, capped at 1; `slow`
        when it is to explain a slowdown rather than a stall.

        >>> r = ScoringRules()
        >>> r.kind(LinkEventKind.PFC_STORM, 5000.0), r.kind(LinkEventKind.PFC_STORM, 5e6)
        (0.45, 0.675)
        >>> r.kind(LinkEventKind.DOWN, 0.0), r.kind(LinkEventKind.DOWN, 0.0, slow=True)
        (1.0, 0.4)
        """
        base = self.kind_weight[kind]
        if slow:
            base = self.slow_kind_weight.get(kind, base)
        ref = self.magnitude_reference.get(kind)
        if ref is None or value <= ref:
            return base
        return round(min(1.0, base * (1.0 + min(0.5, math.log10(value / ref) / 6.0))), 4)


class TimeWindow(BaseModel):
    """Anomalies count fully at the stall and fade with distance from it: the
    `attribution.window` section of the settings.

    Before the stall the fade is slow (a fault is first seen, then NCCL's transport retries
    run out); after it, fast (telemetry lags the fault by at most a sampling interval, so a
    much later anomaly is more likely a consequence than the cause).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    lookback_s: float = Field(
        default=300.0,
        gt=0,
        description="Anomalies up to this long before a stall are candidates: RDMA retries and "
        "NCCL's own timeouts take minutes to turn a fault into a hang.",
    )
    lookahead_s: float = Field(
        default=60.0,
        ge=0,
        description="...and up to this long after it: telemetry sampled every 10-30 s reports "
        "a fault after the job has already stopped.",
    )
    slow_lookahead_s: float = Field(
        default=10.0,
        ge=0,
        description="For a slowed job, anomalies that began more than this after its first "
        "slow report are left out: that report already gave the slowed pace, so they are "
        "later trouble (another fault, a consequence). Room for the clocks and the log "
        "shipper (seconds), and a rate's sample may reach back its interval; state changes "
        "are reported as they happen.",
    )
    tau_before_s: float = Field(
        default=90.0, gt=0, description="How fast the weight fades before the stall (e-fold)."
    )
    tau_after_s: float = Field(
        default=30.0, gt=0, description="How fast the weight fades after the stall (e-fold)."
    )

    def factor(self, event_ns: int, stall_ns: int, span_s: float = 0.0) -> float:
        """Weight of an anomaly at `event_ns` for a stall at `stall_ns`, 0 outside the window.

        `span_s`: the anomaly may have begun anywhere in the `span_s` seconds up to `event_ns`
        (a rate is reported at the end of the interval it was measured over), so it is
        measured from the point of that span nearest the stall. With 60 s sampling an error
        burst stamped 48 s after a stall may have begun 12 s before it.

        >>> w = TimeWindow()
        >>> w.factor(0, 0), round(w.factor(0, 90 * 10**9), 3), w.factor(0, 400 * 10**9)
        (1.0, 0.368, 0.0)
        >>> round(w.factor(48 * 10**9, 0), 3), w.factor(48 * 10**9, 0, span_s=60.0)
        (0.202, 1.0)
        """
        begun = min(max(stall_ns, event_ns - int(span_s * 1e9)), event_ns)
        delta_s = (begun - stall_ns) / 1e9
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


def calibrated(knots: tuple[tuple[float, float], ...], raw: float) -> float:
    """`raw` through the calibration map `knots` ((raw, probability) pairs, raw increasing):
    straight lines between knots, the end knots' probabilities beyond them, and `raw` itself
    when there are no knots (no map fitted).

    >>> calibrated((), 0.42), calibrated(((0.4, 0.7), (0.8, 0.9)), 0.6)
    (0.42, 0.8)
    >>> calibrated(((0.4, 0.7), (0.8, 0.9)), 0.1), calibrated(((0.4, 0.7), (0.8, 0.9)), 1.0)
    (0.7, 0.9)
    """
    if not knots:
        return raw
    if raw <= knots[0][0]:
        return knots[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(knots):
        if raw <= x1:
            return round(y0 + (y1 - y0) * (raw - x0) / (x1 - x0), 4)
    return knots[-1][1]
