"""Counter readings into per-second rates, surviving counter wraps and device resets.

A rate is delta / dt between two readings of one (device, interface, metric, qualifier). A
counter that goes down either wrapped or was reset:

* wrap: it passed 2**32 or 2**64 and restarted from 0. Then it moved by
  `width - previous + current`, which is small next to the counter's range. A decrease is
  taken as a wrap of the narrowest width the previous reading fits in, when that movement is
  at most `wrap_max_fraction` of the width (a quarter by default: the previous reading was
  near the top and the current one near the bottom).
* reset: any other decrease (the device rebooted, the linecard was replaced, someone ran
  `clear counters`). Nothing can be said about that interval: no rate, a COUNTER_RESET
  LinkEvent, and the current reading becomes the new baseline. A counter that keeps falling
  (a switch whose counters run backwards) is reported once per `reset_quiet_s` of its own,
  not on every reading: every reset is counted, but one event says it all.

Readings not newer than the last one for their key (out of order, or duplicates a collector
sent twice) are ignored and counted. Gauges (rx power, temperature) pass through as a
LinkSample whose `rate` is the reading and `interval_s` is 0.

`snapshot` and `restore` carry the whole state through JSON (a Faust table's changelog), so a
restarted or rebalanced worker goes on exactly where the old one stopped; a counter value that
was redelivered after the restart is then not newer than the restored one and is ignored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Self

from ..records import (
    COUNTER_METRICS,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    Metric,
    TelemetryValue,
)
from ._walk import RatesCore
from .state import VERSION, check_header, dec_int, dec_num, dec_str, enc_int, enc_num

#: Metrics that are readings, not counters: passed through as they are.
GAUGE_METRICS = frozenset({Metric.RX_POWER_DBM, Metric.TEMPERATURE_C, Metric.PORT_SPEED_GBPS})

#: Every metric with what it is to the compiled rules: (member, counter, gauge).
METRIC_KINDS = tuple((m, m in COUNTER_METRICS, m in GAUGE_METRICS) for m in Metric)


@dataclass
class RateStats:
    """Counts for the metrics endpoint: samples made, wraps crossed, resets, readings ignored."""

    samples: int = 0
    wraps: int = 0
    resets: int = 0
    out_of_order: int = 0


class CounterRates:
    """Remembers the last reading of every counter and turns the next one into a rate.

    Owned by one stream partition: readings of one key must all come to the same instance.
    The rules run compiled (`walk/src/rates.rs`, through `RatesCore`); the reset's words and
    the snapshot's layout are here.
    """

    def __init__(self, wrap_max_fraction: float = 0.25, reset_quiet_s: float = 300.0) -> None:
        self.wrap_max_fraction = wrap_max_fraction
        self.reset_quiet_s = reset_quiet_s
        self.core = RatesCore(wrap_max_fraction, reset_quiet_s, METRIC_KINDS)

    @property
    def stats(self) -> RateStats:
        return RateStats(*self.core.stats())

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON values, to be stored once per batch, not per reading.

        Layout (version 1): `stats` as named counts, and `last` as
        device -> interface -> [[metric, qualifier, ts_ns, value], ...], nested so that a key
        holding a whole switch does not repeat its name for every counter; a row of a counter
        that reported a reset ends with that reset's ts_ns. Values keep their type (an int
        counter stays an int); `wrap_max_fraction` is configuration, not state.
        """
        last: dict[str, dict[str, list[list[Any]]]] = {}
        for device, interface, metric, qualifier, ts_ns, value, reset_at in self.core.rows():
            rows = last.setdefault(device, {}).setdefault(interface, [])
            row = [str(metric), qualifier, enc_int(ts_ns), enc_num(value)]
            rows.append(row if reset_at is None else [*row, enc_int(reset_at)])
        return {"v": VERSION, "type": "CounterRates", "stats": asdict(self.stats), "last": last}

    @classmethod
    def restore(
        cls, snap: dict[str, Any], wrap_max_fraction: float = 0.25, reset_quiet_s: float = 300.0
    ) -> Self:
        """A CounterRates that behaves exactly as the one `snap` was taken of.

        `snap` may come straight from `orjson.loads`; nothing in it is kept by reference.
        Raises ValueError for another version, another kind of snapshot, or a damaged one.
        """
        check_header(snap, "CounterRates")
        rates = cls(wrap_max_fraction, reset_quiet_s)
        try:
            stats = RateStats(**{k: dec_int(n) for k, n in snap["stats"].items()})
            rows = []
            for device, interfaces in snap["last"].items():
                for interface, entries in interfaces.items():
                    for metric, qualifier, ts_ns, value, *reset in entries:
                        if len(reset) > 1:
                            raise ValueError(f"a counter row of {4 + len(reset)} fields")
                        rows.append(
                            (
                                dec_str(device),
                                dec_str(interface),
                                Metric(metric),
                                dec_str(qualifier),
                                dec_int(ts_ns),
                                dec_num(value),
                                dec_int(reset[0]) if reset else None,
                            )
                        )
            rates.core.load(rows)
            rates.core.set_stats(stats.samples, stats.wraps, stats.resets, stats.out_of_order)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise ValueError(f"damaged CounterRates snapshot: {exc!r}") from exc
        return rates

    def update(self, v: TelemetryValue) -> tuple[LinkSample | None, LinkEvent | None]:
        """The rate (or gauge sample) and the reset event, if any, that reading `v` gives."""
        sample, fell_from = self.core.update(v, LinkSample)
        if fell_from is None or isinstance(v.value, str):
            return sample, None
        return sample, reset_event(
            v.ts_ns, v.device, v.interface, v.metric, v.qualifier, v.value, fell_from
        )


def reset_event(
    ts_ns: int,
    device: str,
    interface: str,
    metric: Metric,
    qualifier: str,
    value: float,
    last: float,
) -> LinkEvent:
    """The COUNTER_RESET of a counter that fell from `last` to `value`."""
    where = f"{metric}[{qualifier}]" if qualifier else str(metric)
    detail = f"{where} fell from {last} to {value}: counter reset, new baseline"
    return LinkEvent(
        ts_ns, device, interface, LinkEventKind.COUNTER_RESET, float(value), detail, where
    )
