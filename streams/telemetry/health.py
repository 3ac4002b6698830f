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

The rules run compiled (`walk/src/health.rs`, through `HealthCore`), every value of every
switch passing through them; what they decide comes back here as numbers, and `event_of` puts
them into the words an engineer reads.

- TRAFFIC_DROP: in- or out-octets below `traffic_drop_fraction` of an EWMA baseline that is
  trusted after `traffic_warmup_samples` and frozen while the drop lasts, so a link that stays
  dark does not teach the baseline that dark is normal.
- ERROR_BURST: frames lost to errors (in, FCS, out) judged as a share of the link's frames
  (from its traffic baseline in that direction), against its own share: errors counted per
  second rise with the traffic, and a busy link's few lost frames a second were a burst to the
  count and nothing to the ratio. Only samples that were no burst teach the link's share.
- PRE_FEC_ERRORS: what the FEC corrects (symbol errors, codewords) far above the series' own
  level: every PAM4 link shows some, at a rate of its own; a rise also shows a corrupting link
  whose job stopped sending, since the line still carries idles to correct.
- FEC_UNCORRECTABLE, RX_POWER_LOW: over or under a threshold, per lane or counter.
- SPEED_DOWN: a port negotiated below the highest speed it had (clear at once when back).
- PFC_STORM (pauses received: the peer pauses this port) and PFC_PAUSING (sent: this port
  pauses its peer), on one direction's sum over the priorities of one timestamp, checked as
  each priority arrives; a timestamp's group is judged clear once the next one arrives.
- DOWN/UP on oper-status changes; FLAP when oper changes or carrier-transition increments in
  `flap_window_s` reach `flap_changes` (the larger count of the two, which see the same flaps).
"""

from __future__ import annotations

from typing import Any, Self

from ..records import LinkEvent, LinkEventKind, LinkSample, Metric, TelemetryValue
from . import health_state
from ._walk import HealthCore
from .rates import METRIC_KINDS
from .thresholds import Thresholds

K = LinkEventKind

_PAUSE_MEANING = {
    "rx": "the peer is pausing this port",
    "tx": "this port is pausing its peer",
}

#: An event as the compiled rules give it: (kind, ts_ns, device, interface, metric, qualifier,
#: value, interval_s, level, ratio, qualifiers, state); `level` is what it was judged
#: against (a baseline, the best speed, the link's own error share when trusted), `ratio` the
#: share of frames lost, `qualifiers` the PFC priorities summed, `state` the oper-status.
RawEvent = tuple[
    str,
    int,
    str,
    str,
    Metric,
    str,
    float,
    float,
    float | None,
    float | None,
    list[str],
    str | None,
]


class LinkHealth:
    """Per-interface state machines over TelemetryValues (oper-status) and LinkSamples.

    `update` takes one input and returns the LinkEvents it causes, usually none. Owned by one
    stream partition: all inputs of one interface must come to the same instance. What it
    remembers is laid out as `health_state` says, which is also its snapshot.
    """

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self.core = HealthCore(self.thresholds, METRIC_KINDS)

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON values, to be stored once per batch, not per input
        (layout: `health_state.snapshot`); thresholds are configuration and are not in it."""
        return health_state.snapshot(self.core.rows())

    @classmethod
    def restore(cls, snap: dict[str, Any], thresholds: Thresholds | None = None) -> Self:
        """A LinkHealth that behaves exactly as the one `snap` was taken of, under `thresholds`.

        `snap` may come straight from `orjson.loads`; nothing in it is kept by reference.
        Raises ValueError for another version, another kind of snapshot, or a damaged one.
        """
        health = cls(thresholds)
        try:
            for part, row in health_state.rows(snap):
                health.core.load(part, row)
        except (TypeError, OverflowError) as exc:
            raise ValueError(f"damaged LinkHealth snapshot: {exc!r}") from exc
        return health

    def update(self, item: TelemetryValue | LinkSample) -> list[LinkEvent]:
        """The LinkEvents `item` causes. TelemetryValues other than oper-status are ignored:
        counters and gauges come in as the LinkSamples of `CounterRates`."""
        if isinstance(item, LinkSample):
            raws = self.core.sample(item)
        elif item.metric is Metric.OPER_STATUS and isinstance(item.value, str):
            raws = self.core.oper(item.ts_ns, item.device, item.interface, item.value)
        else:
            return []
        return [self.event_of(raw) for raw in raws]

    def event_of(self, raw: RawEvent) -> LinkEvent:
        """The LinkEvent, in words, of an event the rules raised."""
        kind, ts, device, interface, metric, qualifier, value, span, level, ratio, quals, state = (
            raw
        )
        where = f"{metric}[{qualifier}]" if qualifier else str(metric)
        match K(kind):
            case K.DOWN:
                return LinkEvent(ts, device, interface, K.DOWN, 0.0, f"oper-status {state}")
            case K.UP:
                return LinkEvent(ts, device, interface, K.UP, 0.0, "oper-status up")
            case K.FLAP:
                window = self.thresholds.flap_window_s
                detail = f"{int(value)} link state changes within {window:g} s"
                return LinkEvent(ts, device, interface, K.FLAP, value, detail)
            case K.SPEED_DOWN:
                detail = f"negotiated {value:g} Gb/s, down from {level:g} Gb/s"
                return LinkEvent(ts, device, interface, K.SPEED_DOWN, value, detail)
            case K.TRAFFIC_DROP:
                assert level is not None
                detail = (
                    f"{metric} fell to {value:.3g} B/s, {value / level:.1%} of its "
                    f"{level:.3g} B/s baseline"
                )
                sub = str(metric)
            case K.ERROR_BURST:
                detail = f"{where} at {value:.3g}/s"
                if ratio is not None:
                    detail += f", {ratio:.2g} of its frames"
                if level is not None:
                    detail += f" (its own level {level:.2g})"
                sub = where
            case K.PRE_FEC_ERRORS:
                detail = f"{where} at {value:.3g}/s, its own level {level:.3g}/s"
                sub = where
            case K.FEC_UNCORRECTABLE:
                detail = f"uncorrectable FEC codewords at {value:.3g}/s"
                sub = qualifier
            case K.RX_POWER_LOW:
                lane = f" on channel {qualifier}" if qualifier else ""
                detail = f"rx power {value:.2f} dBm{lane}"
                sub = qualifier
            case K.PFC_STORM | K.PFC_PAUSING:
                sub = "rx" if kind == K.PFC_STORM else "tx"
                which = ",".join(sorted(q for q in quals if q)) or "all"
                detail = (
                    f"{sub} PFC pause {value:.0f}/s (priorities {which}): {_PAUSE_MEANING[sub]}"
                )
            case _:
                raise ValueError(f"the rules raised an event of kind {kind!r}")
        return LinkEvent(ts, device, interface, K(kind), value, detail, sub, span)
