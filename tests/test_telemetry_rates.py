"""Counter readings -> LinkSample rates: wraps, resets, disorder, gauges."""

from __future__ import annotations

import orjson
import pytest

from railtrace.streams.records import LinkEvent, LinkEventKind, LinkSample, Metric, TelemetryValue
from railtrace.streams.telemetry.rates import CounterRates, RateStats

T = 1_700_000_000_000_000_000
S = 1_000_000_000
M = Metric


def reading(
    ts_s: float, value: float | str, metric: Metric = M.IN_OCTETS, qualifier: str = ""
) -> TelemetryValue:
    return TelemetryValue(T + int(ts_s * S), "leaf1", "Ethernet1", metric, value, qualifier)


def feed(rates: CounterRates, *values: TelemetryValue) -> list[tuple[object, object]]:
    return [rates.update(v) for v in values]


def sample(ts_s: float, rate: float, interval_s: float, metric: Metric = M.IN_OCTETS) -> LinkSample:
    return LinkSample(T + int(ts_s * S), "leaf1", "Ethernet1", metric, "", rate, interval_s)


@pytest.mark.parametrize(
    ("first", "second", "dt_s", "rate"),
    [
        (1_000, 6_000, 10, 500.0),
        (0, 0, 1, 0.0),
        (7, 7.5, 0.5, 1.0),
        (2**32 - 100, 50, 1, 150.0),  # 32-bit wrap: 100 to the top, 50 after it
        (2**32 - 1, 0, 2, 0.5),  # wrapped exactly onto 0: one count in 2 s
        (2**64 - 5000, 3000, 4, 2000.0),  # 64-bit wrap, exact with int counters
        (2**64 - 1, 2**62 - 1, 1, float(2**62)),  # 64-bit wrap by a full quarter of the range
    ],
)
def test_rate_is_delta_over_dt_across_wraps(
    first: int, second: int, dt_s: float, rate: float
) -> None:
    rates = CounterRates()
    assert feed(rates, reading(0, first), reading(dt_s, second)) == [
        (None, None),
        (sample(dt_s, rate, dt_s), None),
    ]


def test_64bit_counter_wrap_gives_the_true_rate() -> None:
    rates = CounterRates()
    rates.update(reading(0, 18_446_744_073_709_551_000))
    got, event = rates.update(reading(10, 1_384))
    assert event is None
    assert got is not None and got.rate == 200.0
    assert rates.stats == RateStats(samples=1, wraps=1)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (1_000_000, 10),  # an ordinary decrease: the device reset or was cleared
        (2**32 - 10, 2**31),  # near 2**32, but far from 0 after it: not a wrap
        (2**40, 5),  # above 2**32, far below 2**64: a 64-bit wrap would be implausible
    ],
)
def test_device_reset_emits_counter_reset_and_no_rate(first: int, second: int) -> None:
    rates = CounterRates()
    rates.update(reading(0, first))
    got, event = rates.update(reading(10, second))
    assert got is None
    assert event == LinkEvent(
        T + 10 * S,
        "leaf1",
        "Ethernet1",
        LinkEventKind.COUNTER_RESET,
        float(second),
        f"in_octets fell from {first} to {second}: counter reset, new baseline",
        "in_octets",
    )
    after, _ = rates.update(reading(20, second + 1000))
    assert after == sample(20, 100.0, 10)
    assert rates.stats.resets == 1


def test_reset_detail_names_the_qualifier() -> None:
    rates = CounterRates()
    rates.update(reading(0, 50, M.PFC_RX_PAUSE, "3"))
    _, event = rates.update(reading(1, 1, M.PFC_RX_PAUSE, "3"))
    assert event is not None and event.detail.startswith("pfc_rx_pause[3] fell from 50 to 1")


def test_out_of_order_and_duplicate_readings_are_ignored_and_counted() -> None:
    rates = CounterRates()
    got = feed(
        rates,
        reading(10, 1000),
        reading(5, 500),  # older than the last: ignored
        reading(10, 1000),  # same timestamp: a duplicate
        reading(20, 3000),
    )
    assert got == [(None, None), (None, None), (None, None), (sample(20, 200.0, 10), None)]
    assert rates.stats == RateStats(samples=1, out_of_order=2)


def test_each_device_interface_metric_qualifier_has_its_own_baseline() -> None:
    rates = CounterRates()
    feed(rates, reading(0, 10, M.PFC_RX_PAUSE, "3"), reading(0, 1000, M.PFC_RX_PAUSE, "4"))
    three, _ = rates.update(reading(1, 20, M.PFC_RX_PAUSE, "3"))
    four, _ = rates.update(reading(1, 1500, M.PFC_RX_PAUSE, "4"))
    assert (three and three.rate, four and four.rate) == (10.0, 500.0)
    assert (three and three.qualifier, four and four.qualifier) == ("3", "4")


@pytest.mark.parametrize(("metric", "value"), [(M.RX_POWER_DBM, -3.25), (M.TEMPERATURE_C, 41)])
def test_gauges_pass_through_with_rate_equal_to_value(metric: Metric, value: float) -> None:
    rates = CounterRates()
    assert rates.update(reading(0, value, metric)) == (sample(0, float(value), 0.0, metric), None)
    assert rates.update(reading(0, value, metric))[0] is not None  # no ordering for gauges


def test_states_give_no_sample() -> None:
    assert CounterRates().update(reading(0, "up", M.OPER_STATUS)) == (None, None)


def test_wrap_tolerance_is_configurable() -> None:
    strict = CounterRates(wrap_max_fraction=1e-9)
    strict.update(reading(0, 2**32 - 100))
    got, event = strict.update(reading(1, 50))
    assert got is None and event is not None and event.kind is LinkEventKind.COUNTER_RESET


def test_a_counter_running_backwards_is_one_reset_event_per_quiet_period() -> None:
    rates = CounterRates(reset_quiet_s=300.0)
    events = []
    for t in range(0, 1000, 10):  # falls on every reading
        _, event = rates.update(reading(t, 10**12 - t * 1000))
        events.append(event)
    reported = [e.ts_ns for e in events if e is not None]
    assert reported == [T + 10 * S, T + 310 * S, T + 610 * S, T + 910 * S]
    assert rates.stats.resets == 99


def test_the_quiet_period_of_resets_survives_a_snapshot() -> None:
    rates = CounterRates()
    rates.update(reading(0, 1000))
    assert rates.update(reading(10, 10))[1] is not None
    restored = CounterRates.restore(orjson.loads(orjson.dumps(rates.snapshot())))
    assert restored.update(reading(20, 5)) == (None, None)
    assert restored.stats.resets == 2
