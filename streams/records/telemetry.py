"""Telemetry records: what a switch or NIC port reports (`TelemetryValue`), its rates
(`LinkSample`) and the anomalies and state changes made of them (`LinkEvent`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Metric(StrEnum):
    """Interface-level quantities railtrace understands, whatever path or OID carried them."""

    IN_OCTETS = "in_octets"
    OUT_OCTETS = "out_octets"
    IN_PKTS = "in_pkts"
    OUT_PKTS = "out_pkts"
    IN_ERRORS = "in_errors"
    OUT_ERRORS = "out_errors"
    IN_DISCARDS = "in_discards"
    OUT_DISCARDS = "out_discards"
    IN_FCS_ERRORS = "in_fcs_errors"
    SYMBOL_ERRORS = "symbol_errors"
    FEC_CORRECTED = "fec_corrected"
    FEC_UNCORRECTABLE = "fec_uncorrectable"
    PFC_RX_PAUSE = "pfc_rx_pause"
    PFC_TX_PAUSE = "pfc_tx_pause"
    ECN_MARKED = "ecn_marked"
    CARRIER_TRANSITIONS = "carrier_transitions"
    OPER_STATUS = "oper_status"
    RX_POWER_DBM = "rx_power_dbm"
    TEMPERATURE_C = "temperature_c"
    PORT_SPEED_GBPS = "port_speed_gbps"  # the speed the port negotiated


#: Metrics that are monotonically increasing counters (turned into rates); the rest are gauges
#: or states and pass through as they are.
COUNTER_METRICS = frozenset(
    {
        Metric.IN_OCTETS,
        Metric.OUT_OCTETS,
        Metric.IN_PKTS,
        Metric.OUT_PKTS,
        Metric.IN_ERRORS,
        Metric.OUT_ERRORS,
        Metric.IN_DISCARDS,
        Metric.OUT_DISCARDS,
        Metric.IN_FCS_ERRORS,
        Metric.SYMBOL_ERRORS,
        Metric.FEC_CORRECTED,
        Metric.FEC_UNCORRECTABLE,
        Metric.PFC_RX_PAUSE,
        Metric.PFC_TX_PAUSE,
        Metric.ECN_MARKED,
        Metric.CARRIER_TRANSITIONS,
    }
)
#: The counters that say something is wrong (rather than how busy a port is): links are
#: ranked by them, and the store keeps a sparse per-minute rollup of their nonzero counts.
FAULT_COUNTERS = COUNTER_METRICS - {
    Metric.IN_OCTETS,
    Metric.OUT_OCTETS,
    Metric.IN_PKTS,
    Metric.OUT_PKTS,
}


# TelemetryValue and LinkSample are made several times per telemetry message, so they are not
# frozen: a frozen dataclass sets each field through object.__setattr__, and constructing one
# took 560 ns against 124 ns (Python 3.11), a tenth of the streaming worker's time. They stay
# hashable by value; treat them as immutable all the same.
@dataclass(slots=True, unsafe_hash=True)
class TelemetryValue:
    """One decoded leaf from a switch: a counter reading, a gauge, or a state.

    `value` is a float for counters and gauges and a lower-case string for states
    (`oper_status` is "up", "down", ...). `qualifier` distinguishes sub-instances of one metric
    on one interface, such as the PFC priority ("3") or a transceiver lane; it is "" otherwise.
    """

    ts_ns: int
    device: str
    interface: str
    metric: Metric
    value: float | str
    qualifier: str = ""


@dataclass(slots=True, unsafe_hash=True)
class LinkSample:
    """A per-second rate of one counter over one sampling interval (or a gauge reading)."""

    ts_ns: int
    device: str
    interface: str
    metric: Metric
    qualifier: str
    rate: float
    interval_s: float


class LinkEventKind(StrEnum):
    """Anomalies and state changes railtrace derives from link telemetry."""

    DOWN = "down"
    UP = "up"
    FLAP = "flap"
    ERROR_BURST = "error-burst"  # frames lost: in/out errors, FCS errors
    #: What the FEC corrected (symbol errors, corrected codewords or bits) far above the link's
    #: own level: a degrading link, which loses frames only once the FEC gives up.
    PRE_FEC_ERRORS = "pre-fec-errors"
    FEC_UNCORRECTABLE = "fec-uncorrectable"
    PFC_STORM = "pfc-storm"  # the peer pauses this port (pause frames received)
    PFC_PAUSING = "pfc-pausing"  # this port pauses its peer (pause frames sent)
    RX_POWER_LOW = "rx-power-low"
    SPEED_DOWN = "speed-down"  # the port negotiated a lower speed than it had
    TRAFFIC_DROP = "traffic-drop"
    COUNTER_RESET = "counter-reset"


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """Something happened on one interface at `ts_ns`; `detail` says what, for a human.

    `series` names the part of the interface the event is about when one interface has
    several (the counter of an error burst or a reset, the direction of a traffic drop or of
    pauses, an optic lane), empty when there is one. Two detectors can fire on one port at
    the same instant (in-errors and in-fcs-errors bursts), so (device, interface, kind,
    series, ts) is what makes an event distinct: the store keeps one row per such identity.

    `span_s` is how long before `ts_ns` the anomaly may have begun: a rate is reported at the
    end of the interval it was measured over, so an error burst in a 60 s sample began up to
    60 s before its stamp. 0 for what is seen at an instant (a state change, a gauge).
    """

    ts_ns: int
    device: str
    interface: str
    kind: LinkEventKind
    value: float = 0.0
    detail: str = ""
    series: str = ""
    span_s: float = 0.0
