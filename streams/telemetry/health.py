"""Link rates and states into LinkEvents: what an engineer would want paged about.

Each anomaly is a latch per interface (and per counter, lane or direction where that matters):
an event is emitted when the condition is ENTERED, not on every sample that still shows it,
and the latch re-arms only after the condition has been seen clear for `rearm_quiet_s`. So a
PFC storm lasting ten minutes is one PFC_STORM event, and a storm that stops and starts again
within the quiet period is still one. DOWN/UP are state changes and are reported each time.

Time is event time (the samples' `ts_ns`) only, so replaying a capture gives the same events
as watching it live. Inputs must come in event-time order per interface.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..records import LinkEvent, LinkEventKind, LinkSample, Metric, TelemetryValue

K = LinkEventKind

#: oper-status values that mean the link carries no traffic (openconfig-interfaces oper-status
#: enum, lower-cased); TESTING and UNKNOWN say nothing either way and are ignored.
DOWN_STATES = frozenset({"down", "lower_layer_down", "not_present", "dormant"})

#: Counters whose rate is an error burst; each is latched on its own.
ERROR_METRICS = frozenset(
    {Metric.IN_ERRORS, Metric.IN_FCS_ERRORS, Metric.SYMBOL_ERRORS, Metric.OUT_ERRORS}
)

_PAUSE_DIRECTION = {Metric.PFC_RX_PAUSE: "rx", Metric.PFC_TX_PAUSE: "tx"}
_PAUSE_MEANING = {
    "rx": "the peer is pausing this port",
    "tx": "this port is pausing its peer",
}

_Iface = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a link is anomalous. The defaults suit a 100-400G RoCE/Ethernet rail fabric.

    flap_changes / flap_window_s: oper-status changes (or carrier-transitions increments)
        within the window that make a FLAP: 3 in 60 s.
    error_rate_per_s: in/out errors, FCS or symbol errors per second for an ERROR_BURST: 1/s,
        since a healthy link at these speeds shows none at all.
    fec_uncorrectable_per_s: FEC_UNCORRECTABLE when above this: 0, any uncorrectable codeword
        is a corrupted frame.
    pfc_pause_per_s: PFC pause frames per second, summed over priorities, for a PFC_STORM:
        5000/s, a sustained rate at which a lossless class spends much of its time paused.
    rx_power_low_dbm: RX_POWER_LOW at or below -10 dBm, the edge of what short-reach optics
        receive reliably; tune it per optic type.
    traffic_drop_fraction / traffic_min_baseline_bytes_per_s: TRAFFIC_DROP when in/out octets
        fall below 5% of their EWMA baseline and that baseline was at least 1e8 bytes/s, i.e.
        a busy link went quiet.
    traffic_ewma_alpha / traffic_warmup_samples: the baseline's smoothing (0.2) and how many
        samples it needs before it is trusted (3).
    rearm_quiet_s: how long a condition must be seen clear before it can fire again: 60 s.
    """

    flap_changes: int = 3
    flap_window_s: float = 60.0
    error_rate_per_s: float = 1.0
    fec_uncorrectable_per_s: float = 0.0
    pfc_pause_per_s: float = 5000.0
    rx_power_low_dbm: float = -10.0
    traffic_drop_fraction: float = 0.05
    traffic_min_baseline_bytes_per_s: float = 1e8
    traffic_ewma_alpha: float = 0.2
    traffic_warmup_samples: int = 3
    rearm_quiet_s: float = 60.0


@dataclass(slots=True)
class _Latch:
    active: bool
    last_bad_ns: int


@dataclass(slots=True)
class _PauseGroup:
    """PFC pause rates of one direction reported at one timestamp, summed as they arrive."""

    ts_ns: int
    total: float
    qualifiers: list[str]


@dataclass(slots=True)
class _Baseline:
    ewma: float
    samples: int


class LinkHealth:
    """Per-interface state machines over TelemetryValues (oper-status) and LinkSamples.

    `update` takes one input and returns the LinkEvents it causes, usually none. Owned by one
    stream partition: all inputs of one interface must come to the same instance.
    """

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self._latches: dict[tuple[str, str, LinkEventKind, str], _Latch] = {}
        self._oper: dict[_Iface, bool] = {}
        self._changes: dict[_Iface, deque[int]] = {}
        self._carrier: dict[_Iface, deque[tuple[int, int]]] = {}
        self._pause: dict[tuple[str, str, str], _PauseGroup] = {}
        self._baselines: dict[tuple[str, str, Metric], _Baseline] = {}

    def update(self, item: TelemetryValue | LinkSample) -> list[LinkEvent]:
        """The LinkEvents `item` causes. TelemetryValues other than oper-status are ignored:
        counters and gauges come in as the LinkSamples of `CounterRates`."""
        if isinstance(item, LinkSample):
            return self._on_sample(item)
        if item.metric is Metric.OPER_STATUS and isinstance(item.value, str):
            return self._on_oper(item.ts_ns, item.device, item.interface, item.value)
        return []

    def _latch(self, key: tuple[str, str, LinkEventKind, str], ts_ns: int, bad: bool) -> bool:
        """Record whether the condition holds at `ts_ns`; True when it is being entered."""
        latch = self._latches.get(key)
        if bad:
            if latch is None:
                self._latches[key] = _Latch(True, ts_ns)
                return True
            entering = not latch.active
            latch.active, latch.last_bad_ns = True, ts_ns
            return entering
        quiet_ns = self.thresholds.rearm_quiet_s * 1e9
        if latch is not None and latch.active and ts_ns - latch.last_bad_ns >= quiet_ns:
            latch.active = False
        return False

    def _on_oper(self, ts_ns: int, device: str, interface: str, state: str) -> list[LinkEvent]:
        if state == "up":
            down = False
        elif state in DOWN_STATES:
            down = True
        else:
            return []
        iface = (device, interface)
        was_down = self._oper.get(iface)
        self._oper[iface] = down
        if was_down == down:
            return []
        events = []
        if down:
            events.append(LinkEvent(ts_ns, device, interface, K.DOWN, 0.0, f"oper-status {state}"))
        elif was_down:
            events.append(LinkEvent(ts_ns, device, interface, K.UP, 0.0, "oper-status up"))
        if was_down is not None:
            self._changes.setdefault(iface, deque()).append(ts_ns)
        return events + self._flap(ts_ns, iface)

    def _flap(self, ts_ns: int, iface: _Iface) -> list[LinkEvent]:
        """FLAP when oper changes, or carrier-transitions increments, in the window reach the
        threshold. The two sources see the same flaps, so the larger count is used, not the sum.
        """
        since = ts_ns - self.thresholds.flap_window_s * 1e9
        changes = self._changes.get(iface, deque())
        while changes and changes[0] <= since:
            changes.popleft()
        carrier = self._carrier.get(iface, deque())
        while carrier and carrier[0][0] <= since:
            carrier.popleft()
        count = max(len(changes), sum(n for _, n in carrier))
        if not self._latch((*iface, K.FLAP, ""), ts_ns, count >= self.thresholds.flap_changes):
            return []
        detail = f"{count} link state changes within {self.thresholds.flap_window_s:g} s"
        return [LinkEvent(ts_ns, iface[0], iface[1], K.FLAP, float(count), detail)]

    def _on_sample(self, s: LinkSample) -> list[LinkEvent]:
        t = self.thresholds
        metric = s.metric
        if metric in ERROR_METRICS:
            where = f"{metric}[{s.qualifier}]" if s.qualifier else str(metric)
            bad = s.rate >= t.error_rate_per_s
            return self._enter(s, K.ERROR_BURST, where, bad, f"{where} at {s.rate:.3g}/s")
        if metric is Metric.FEC_UNCORRECTABLE:
            bad = s.rate > t.fec_uncorrectable_per_s
            detail = f"uncorrectable FEC codewords at {s.rate:.3g}/s"
            return self._enter(s, K.FEC_UNCORRECTABLE, s.qualifier, bad, detail)
        if metric is Metric.RX_POWER_DBM:
            bad = s.rate <= t.rx_power_low_dbm
            lane = f" on channel {s.qualifier}" if s.qualifier else ""
            return self._enter(
                s, K.RX_POWER_LOW, s.qualifier, bad, f"rx power {s.rate:.2f} dBm{lane}"
            )
        if metric in _PAUSE_DIRECTION:
            return self._on_pause(s, _PAUSE_DIRECTION[metric])
        if metric is Metric.IN_OCTETS or metric is Metric.OUT_OCTETS:
            return self._on_octets(s)
        if metric is Metric.CARRIER_TRANSITIONS:
            iface = (s.device, s.interface)
            increments = round(s.rate * s.interval_s)
            if increments > 0:
                self._carrier.setdefault(iface, deque()).append((s.ts_ns, increments))
            return self._flap(s.ts_ns, iface)
        return []

    def _enter(
        self, s: LinkSample, kind: LinkEventKind, sub: str, bad: bool, detail: str
    ) -> list[LinkEvent]:
        if not self._latch((s.device, s.interface, kind, sub), s.ts_ns, bad):
            return []
        return [LinkEvent(s.ts_ns, s.device, s.interface, kind, s.rate, detail)]

    def _on_pause(self, s: LinkSample, direction: str) -> list[LinkEvent]:
        """PFC_STORM on the sum over priorities of one direction at one timestamp.

        The sum is checked as each priority arrives, so a storm fires on the sample that
        crosses the threshold; a timestamp's group is judged clear only once it is complete,
        i.e. when the next timestamp of that direction arrives.
        """
        threshold = self.thresholds.pfc_pause_per_s
        key = (s.device, s.interface, K.PFC_STORM, direction)
        group_key = (s.device, s.interface, direction)
        group = self._pause.get(group_key)
        if group is not None and s.ts_ns < group.ts_ns:
            return []
        if group is None or s.ts_ns > group.ts_ns:
            if group is not None and group.total < threshold:
                self._latch(key, group.ts_ns, False)
            group = self._pause[group_key] = _PauseGroup(s.ts_ns, 0.0, [])
        group.total += s.rate
        group.qualifiers.append(s.qualifier)
        if group.total < threshold or not self._latch(key, s.ts_ns, True):
            return []
        which = ",".join(sorted(q for q in group.qualifiers if q)) or "all"
        detail = (
            f"{direction} PFC pause {group.total:.0f}/s (priorities {which}): "
            f"{_PAUSE_MEANING[direction]}"
        )
        return [LinkEvent(s.ts_ns, s.device, s.interface, K.PFC_STORM, group.total, detail)]

    def _on_octets(self, s: LinkSample) -> list[LinkEvent]:
        """TRAFFIC_DROP against an EWMA baseline that is frozen while the drop lasts, so a
        link that stays dark does not teach the baseline that dark is normal."""
        if s.qualifier:
            return []
        t = self.thresholds
        key = (s.device, s.interface, s.metric)
        baseline = self._baselines.get(key)
        if baseline is None:
            self._baselines[key] = _Baseline(s.rate, 1)
            return []
        trusted = (
            baseline.samples >= t.traffic_warmup_samples
            and baseline.ewma >= t.traffic_min_baseline_bytes_per_s
        )
        dropped = trusted and s.rate < t.traffic_drop_fraction * baseline.ewma
        entering = self._latch((s.device, s.interface, K.TRAFFIC_DROP, s.metric), s.ts_ns, dropped)
        events = []
        if entering:
            detail = (
                f"{s.metric} fell to {s.rate:.3g} B/s, {s.rate / baseline.ewma:.1%} of its "
                f"{baseline.ewma:.3g} B/s baseline"
            )
            events.append(LinkEvent(s.ts_ns, s.device, s.interface, K.TRAFFIC_DROP, s.rate, detail))
        if not dropped:
            baseline.ewma += t.traffic_ewma_alpha * (s.rate - baseline.ewma)
            baseline.samples += 1
        return events
