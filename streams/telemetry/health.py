"""Link rates and states into LinkEvents: what an engineer would want paged about.

Each anomaly is a latch per interface (and per counter, lane or direction where that matters):
an event is emitted when the condition is ENTERED, not on every sample that still shows it,
and the latch re-arms only after the condition has been seen clear for `rearm_quiet_s`. So a
PFC storm lasting ten minutes is one PFC_STORM event, and a storm that stops and starts again
within the quiet period is still one. DOWN/UP are state changes and are reported each time.

Time is event time (the samples' `ts_ns`) only, so replaying a capture gives the same events
as watching it live. Inputs must come in event-time order per interface; an input not newer
than the last one of its series (oper-status of an interface, or a sample's device, interface,
metric and qualifier) is ignored. That is what makes a stream worker's at-least-once delivery
harmless: after a restart from a `snapshot`, the redelivered inputs are all old, and a
redelivered flap, PFC priority or traffic sample neither repeats an event nor moves a baseline.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Self

from ..records import LinkEvent, LinkEventKind, LinkSample, Metric, TelemetryValue
from .health_state import Baseline, HealthState, Iface, Latch, LatchKey, PauseGroup
from .thresholds import Thresholds

K = LinkEventKind

#: oper-status values that mean the link carries no traffic (openconfig-interfaces oper-status
#: enum, lower-cased); TESTING and UNKNOWN say nothing either way and are ignored.
DOWN_STATES = frozenset({"down", "lower_layer_down", "not_present", "dormant"})

#: Counters of frames lost to errors, whose rate is an error burst; each is latched on its
#: own. Pre-FEC errors are not among them: see `_on_pre_fec`.
ERROR_METRICS = frozenset({Metric.IN_ERRORS, Metric.IN_FCS_ERRORS, Metric.OUT_ERRORS})

#: Counts of what the FEC corrected (symbol errors, corrected codewords or bits): a healthy
#: PAM4 link shows them all the time, so only a rise over the link's own level is a burst.
PRE_FEC_METRICS = frozenset({Metric.SYMBOL_ERRORS, Metric.FEC_CORRECTED})

_PAUSE_DIRECTION = {Metric.PFC_RX_PAUSE: "rx", Metric.PFC_TX_PAUSE: "tx"}
_PAUSE_MEANING = {
    "rx": "the peer is pausing this port",
    "tx": "this port is pausing its peer",
}

#: Metrics whose samples change state here; samples of any other metric are ignored.
WATCHED_METRICS = frozenset(
    {
        *ERROR_METRICS,
        *PRE_FEC_METRICS,
        *_PAUSE_DIRECTION,
        Metric.FEC_UNCORRECTABLE,
        Metric.RX_POWER_DBM,
        Metric.PORT_SPEED_GBPS,
        Metric.IN_OCTETS,
        Metric.OUT_OCTETS,
        Metric.CARRIER_TRANSITIONS,
    }
)


class LinkHealth:
    """Per-interface state machines over TelemetryValues (oper-status) and LinkSamples.

    `update` takes one input and returns the LinkEvents it causes, usually none. Owned by one
    stream partition: all inputs of one interface must come to the same instance. What it
    remembers is a `HealthState` (`health_state`), which is also its snapshot.
    """

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self._state = HealthState()

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON values, to be stored once per batch, not per input
        (layout: `HealthState.snapshot`); thresholds are configuration and are not in it."""
        return self._state.snapshot()

    @classmethod
    def restore(cls, snap: dict[str, Any], thresholds: Thresholds | None = None) -> Self:
        """A LinkHealth that behaves exactly as the one `snap` was taken of, under `thresholds`.

        `snap` may come straight from `orjson.loads`; nothing in it is kept by reference.
        Raises ValueError for another version, another kind of snapshot, or a damaged one.
        """
        state = HealthState.restore(snap)
        health = cls(thresholds)
        health._state = state
        return health

    def update(self, item: TelemetryValue | LinkSample) -> list[LinkEvent]:
        """The LinkEvents `item` causes. TelemetryValues other than oper-status are ignored:
        counters and gauges come in as the LinkSamples of `CounterRates`."""
        if isinstance(item, LinkSample):
            return self._on_sample(item)
        if item.metric is Metric.OPER_STATUS and isinstance(item.value, str):
            return self._on_oper(item.ts_ns, item.device, item.interface, item.value)
        return []

    def _latch(self, key: LatchKey, ts_ns: int, bad: bool) -> bool:
        """Record whether the condition holds at `ts_ns`; True when it is being entered."""
        latch = self._state.latches.get(key)
        if bad:
            if latch is None:
                self._state.latches[key] = Latch(True, ts_ns)
                return True
            entering = not latch.active
            latch.active, latch.last_bad_ns = True, ts_ns
            return entering
        quiet_ns = self.thresholds.rearm_quiet_s * 1e9
        if latch is not None and latch.active and ts_ns - latch.last_bad_ns >= quiet_ns:
            latch.active = False
        return False

    def _on_oper(self, ts_ns: int, device: str, interface: str, state: str) -> list[LinkEvent]:
        iface = (device, interface)
        last = self._state.oper.get(iface)
        if last is not None and ts_ns <= last[0]:
            return []  # redelivered or out of order: replaying it would repeat DOWN/UP/FLAP
        was_down = None if last is None else last[1]
        if state == "up":
            down = False
        elif state in DOWN_STATES:
            down = True
        else:
            self._state.oper[iface] = (ts_ns, was_down)
            return []
        self._state.oper[iface] = (ts_ns, down)
        if was_down == down:
            return []
        events = []
        if down:
            events.append(LinkEvent(ts_ns, device, interface, K.DOWN, 0.0, f"oper-status {state}"))
        elif was_down:
            events.append(LinkEvent(ts_ns, device, interface, K.UP, 0.0, "oper-status up"))
        if was_down is not None:
            self._state.changes.setdefault(iface, deque()).append(ts_ns)
        return events + self._flap(ts_ns, iface)

    def _flap(self, ts_ns: int, iface: Iface) -> list[LinkEvent]:
        """FLAP when oper changes, or carrier-transitions increments, in the window reach the
        threshold. The two sources see the same flaps, so the larger count is used, not the sum.
        """
        since = ts_ns - self.thresholds.flap_window_s * 1e9
        changes = self._state.changes.get(iface, deque())
        while changes and changes[0] <= since:
            changes.popleft()
        carrier = self._state.carrier.get(iface, deque())
        while carrier and carrier[0][0] <= since:
            carrier.popleft()
        count = max(len(changes), sum(n for _, n in carrier))
        if not self._latch((*iface, K.FLAP, ""), ts_ns, count >= self.thresholds.flap_changes):
            return []
        detail = f"{count} link state changes within {self.thresholds.flap_window_s:g} s"
        return [LinkEvent(ts_ns, iface[0], iface[1], K.FLAP, float(count), detail)]

    def _on_sample(self, s: LinkSample) -> list[LinkEvent]:
        metric = s.metric
        if metric not in WATCHED_METRICS:
            return []
        series = (s.device, s.interface, metric, s.qualifier)
        last = self._state.seen.get(series)
        if last is not None and s.ts_ns <= last:
            return []  # redelivered: it would count a PFC priority or move a baseline twice
        self._state.seen[series] = s.ts_ns
        t = self.thresholds
        if metric in ERROR_METRICS:
            return self._on_errors(s)
        if metric in PRE_FEC_METRICS:
            return self._on_pre_fec(s)
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
        if metric is Metric.PORT_SPEED_GBPS:
            return self._on_speed(s)
        if metric in _PAUSE_DIRECTION:
            return self._on_pause(s, _PAUSE_DIRECTION[metric])
        if metric is Metric.IN_OCTETS or metric is Metric.OUT_OCTETS:
            return self._on_octets(s)
        if metric is Metric.CARRIER_TRANSITIONS:
            iface = (s.device, s.interface)
            increments = round(s.rate * s.interval_s)
            if increments > 0:
                self._state.carrier.setdefault(iface, deque()).append((s.ts_ns, increments))
            return self._flap(s.ts_ns, iface)
        return []

    def _enter(
        self, s: LinkSample, kind: LinkEventKind, sub: str, bad: bool, detail: str
    ) -> list[LinkEvent]:
        if not self._latch((s.device, s.interface, kind, sub), s.ts_ns, bad):
            return []
        return [LinkEvent(s.ts_ns, s.device, s.interface, kind, s.rate, detail, sub, s.interval_s)]

    def _on_pause(self, s: LinkSample, direction: str) -> list[LinkEvent]:
        """PFC_STORM (pauses received) or PFC_PAUSING (pauses sent) on the sum over
        priorities of one direction at one timestamp. Kept apart because attribution reads
        them differently: a port being paused points at its peer, one pausing at itself.

        The sum is checked as each priority arrives, so a storm fires on the sample that
        crosses the threshold; a timestamp's group is judged clear only once it is complete,
        i.e. when the next timestamp of that direction arrives.
        """
        threshold = self.thresholds.pfc_pause_per_s
        kind = K.PFC_STORM if direction == "rx" else K.PFC_PAUSING
        key = (s.device, s.interface, kind, direction)
        group_key = (s.device, s.interface, direction)
        group = self._state.pause.get(group_key)
        if group is not None and s.ts_ns < group.ts_ns:
            return []
        if group is None or s.ts_ns > group.ts_ns:
            if group is not None and group.total < threshold:
                self._latch(key, group.ts_ns, False)
            group = self._state.pause[group_key] = PauseGroup(s.ts_ns, 0.0, [])
        group.total += s.rate
        group.qualifiers.append(s.qualifier)
        if group.total < threshold or not self._latch(key, s.ts_ns, True):
            return []
        which = ",".join(sorted(q for q in group.qualifiers if q)) or "all"
        detail = (
            f"{direction} PFC pause {group.total:.0f}/s (priorities {which}): "
            f"{_PAUSE_MEANING[direction]}"
        )
        return [
            LinkEvent(
                s.ts_ns, s.device, s.interface, kind, group.total, detail, direction, s.interval_s
            )
        ]

    def _on_speed(self, s: LinkSample) -> list[LinkEvent]:
        """SPEED_DOWN when a port negotiates below the highest speed it had: a cable or optic
        that no longer holds full speed keeps the link up and slows what crosses it."""
        key = (s.device, s.interface, s.metric)
        best = self._state.baselines.get(key)
        if best is None or s.rate > best.ewma:
            self._state.baselines[key] = Baseline(s.rate, 1)
            best = self._state.baselines[key]
        latch = (s.device, s.interface, K.SPEED_DOWN, "")
        if s.rate >= best.ewma:
            # Speeds come on change: back at full speed is clear at once, with no quiet time.
            self._state.latches.pop(latch, None)
            return []
        if not self._latch(latch, s.ts_ns, True):
            return []
        detail = f"negotiated {s.rate:g} Gb/s, down from {best.ewma:g} Gb/s"
        return [LinkEvent(s.ts_ns, s.device, s.interface, K.SPEED_DOWN, s.rate, detail)]

    def _baseline_of(self, s: LinkSample) -> Baseline | None:
        """The level `s`'s series has shown so far; None for its first sample, which
        starts it."""
        key = (s.device, s.interface, s.metric)
        baseline = self._state.baselines.get(key)
        if baseline is None:
            self._state.baselines[key] = Baseline(s.rate, 1)
        return baseline

    def _on_errors(self, s: LinkSample) -> list[LinkEvent]:
        """ERROR_BURST on the share of frames lost, against the link's own share: errors
        counted per second rise with the traffic, and a busy link's few lost frames a second
        were a burst to the count and nothing to the ratio. The frames are counted from the
        link's traffic baseline in the errors' direction (frozen while its traffic is dropped,
        so a stalled job's link keeps the frames it normally carries)."""
        t = self.thresholds
        where = f"{s.metric}[{s.qualifier}]" if s.qualifier else str(s.metric)
        way = Metric.OUT_OCTETS if s.metric is Metric.OUT_ERRORS else Metric.IN_OCTETS
        traffic = self._state.baselines.get((s.device, s.interface, way))
        frames = 0.0
        if traffic is not None and traffic.samples >= t.traffic_warmup_samples:
            frames = traffic.ewma / t.frame_bytes
        key = (s.device, s.interface, s.metric)
        level = self._state.baselines.get(key)
        if s.rate < t.error_rate_per_s:
            bad, detail = False, ""
        elif frames <= 0:
            bad, detail = True, f"{where} at {s.rate:.3g}/s"
        else:
            ratio = s.rate / frames
            trusted = level is not None and level.samples >= t.error_baseline_samples
            own = level.ewma if level is not None and trusted else 0.0
            bad = ratio >= max(t.error_ratio_min, t.error_ratio_rise * own)
            detail = f"{where} at {s.rate:.3g}/s, {ratio:.2g} of its frames"
            if trusted:
                detail += f" (its own level {own:.2g})"
        events = self._enter(s, K.ERROR_BURST, where, bad, detail)
        if not bad and frames > 0:
            # The link's own error ratio is taught only by samples that were no burst.
            if level is None:
                self._state.baselines[key] = Baseline(s.rate / frames, 1)
            else:
                level.learn(s.rate / frames, t.error_baseline_alpha)
        return events

    def _on_pre_fec(self, s: LinkSample) -> list[LinkEvent]:
        """PRE_FEC_ERRORS when what the FEC corrects (symbol errors, codewords) rises far above
        the link's own level. Every PAM4 link shows them at some rate, which differs from link
        to link and optic to optic: judged as a count, every healthy 400G link was erroring.
        A rise is also what shows a corrupting link whose job has stopped sending: with no
        frames there are no frame errors, but the line still carries idles to correct."""
        t = self.thresholds
        key = (s.device, s.interface, s.metric, s.qualifier)
        baseline = self._state.pre_fec.get(key)
        if baseline is None:
            self._state.pre_fec[key] = Baseline(s.rate, 1)
            return []
        where = f"{s.metric}[{s.qualifier}]" if s.qualifier else str(s.metric)
        level = baseline.ewma
        bad = baseline.samples >= t.symbol_baseline_samples and s.rate >= max(
            t.symbol_error_floor_per_s, t.symbol_error_rise * level
        )
        detail = f"{where} at {s.rate:.3g}/s, its own level {level:.3g}/s"
        events = self._enter(s, K.PRE_FEC_ERRORS, where, bad, detail)
        if s.rate < max(t.symbol_error_floor_per_s, t.symbol_error_rise / 10 * level):
            baseline.learn(s.rate, t.symbol_baseline_alpha)
        return events

    def _on_octets(self, s: LinkSample) -> list[LinkEvent]:
        """TRAFFIC_DROP against an EWMA baseline that is frozen while the drop lasts, so a
        link that stays dark does not teach the baseline that dark is normal."""
        if s.qualifier:
            return []
        t = self.thresholds
        baseline = self._baseline_of(s)
        if baseline is None:
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
            events.append(
                LinkEvent(
                    s.ts_ns,
                    s.device,
                    s.interface,
                    K.TRAFFIC_DROP,
                    s.rate,
                    detail,
                    str(s.metric),
                    s.interval_s,
                )
            )
        if not dropped:
            baseline.learn(s.rate, t.traffic_ewma_alpha)
        return events
