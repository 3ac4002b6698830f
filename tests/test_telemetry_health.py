"""LinkSamples and oper-status -> LinkEvents: entering anomalies, once, re-armed after quiet."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

import pytest

from railtrace.streams.records import LinkEvent, LinkEventKind, LinkSample, Metric, TelemetryValue
from railtrace.streams.telemetry import CounterRates, GnmicDecoder, LinkHealth, Thresholds

T = 1_700_000_000_000_000_000
S = 1_000_000_000
K = LinkEventKind
M = Metric

Input: TypeAlias = TelemetryValue | LinkSample


def oper(ts_s: float, state: str, interface: str = "Ethernet1") -> TelemetryValue:
    return TelemetryValue(T + int(ts_s * S), "leaf1", interface, M.OPER_STATUS, state)


def rate(
    ts_s: float, metric: Metric, value: float, qualifier: str = "", interval_s: float = 10.0
) -> LinkSample:
    return LinkSample(T + int(ts_s * S), "leaf1", "Ethernet1", metric, qualifier, value, interval_s)


#: Kinds judged from a counter's rate: each may have begun anywhere in its sample's 10 s.
RATE_KINDS = {
    K.ERROR_BURST,
    K.PRE_FEC_ERRORS,
    K.FEC_UNCORRECTABLE,
    K.PFC_STORM,
    K.PFC_PAUSING,
    K.TRAFFIC_DROP,
}


def event(
    ts_s: float, kind: LinkEventKind, value: float, detail: str, series: str = ""
) -> LinkEvent:
    span_s = 10.0 if kind in RATE_KINDS else 0.0
    return LinkEvent(T + int(ts_s * S), "leaf1", "Ethernet1", kind, value, detail, series, span_s)


def run(inputs: Iterable[Input], thresholds: Thresholds | None = None) -> list[LinkEvent]:
    health = LinkHealth(thresholds)
    return [e for item in inputs for e in health.update(item)]


CASES: dict[str, tuple[list[Input], list[LinkEvent]]] = {
    "first_down_is_reported_and_first_up_is_silent": (
        [oper(0, "up"), oper(1, "up"), oper(30, "lower_layer_down", "Ethernet2")],
        [LinkEvent(T + 30 * S, "leaf1", "Ethernet2", K.DOWN, 0.0, "oper-status lower_layer_down")],
    ),
    "down_then_up_is_reported_once_each": (
        [oper(0, "up"), oper(1, "down"), oper(2, "down"), oper(3, "not_present"), oper(90, "up")],
        [event(1, K.DOWN, 0.0, "oper-status down"), event(90, K.UP, 0.0, "oper-status up")],
    ),
    "testing_and_unknown_say_nothing": (
        [oper(0, "up"), oper(1, "testing"), oper(2, "unknown"), oper(3, "up")],
        [],
    ),
    "flap_fires_once_per_storm": (
        [oper(0, "up")] + [oper(t, "down" if t % 2 else "up") for t in range(1, 9)],
        [
            event(1, K.DOWN, 0.0, "oper-status down"),
            event(2, K.UP, 0.0, "oper-status up"),
            event(3, K.DOWN, 0.0, "oper-status down"),
            event(3, K.FLAP, 3.0, "3 link state changes within 60 s"),
            event(4, K.UP, 0.0, "oper-status up"),
            event(5, K.DOWN, 0.0, "oper-status down"),
            event(6, K.UP, 0.0, "oper-status up"),
            event(7, K.DOWN, 0.0, "oper-status down"),
            event(8, K.UP, 0.0, "oper-status up"),
        ],
    ),
    "flap_from_carrier_transitions_rearms_after_quiet": (
        [
            rate(10, M.CARRIER_TRANSITIONS, 0.4),  # 4 transitions in the last 10 s
            rate(20, M.CARRIER_TRANSITIONS, 0.3),
            rate(100, M.CARRIER_TRANSITIONS, 0.0),  # window empty, quiet since 20 s: re-armed
            rate(110, M.CARRIER_TRANSITIONS, 0.5),
        ],
        [
            event(10, K.FLAP, 4.0, "4 link state changes within 60 s"),
            event(110, K.FLAP, 5.0, "5 link state changes within 60 s"),
        ],
    ),
    "error_burst_names_the_counter_and_fires_on_entering_only": (
        [
            rate(10, M.IN_FCS_ERRORS, 0.5),
            rate(20, M.IN_FCS_ERRORS, 12.5),
            rate(30, M.IN_FCS_ERRORS, 40.0),
            rate(40, M.IN_FCS_ERRORS, 0.0),  # clear for 10 s only: still latched
            rate(50, M.IN_FCS_ERRORS, 9.0),
            rate(60, M.IN_FCS_ERRORS, 0.0),
            rate(120, M.IN_FCS_ERRORS, 0.0),  # clear for 60 s since the last burst: re-armed
            rate(130, M.IN_FCS_ERRORS, 2.0),
        ],
        [
            event(20, K.ERROR_BURST, 12.5, "in_fcs_errors at 12.5/s", "in_fcs_errors"),
            event(130, K.ERROR_BURST, 2.0, "in_fcs_errors at 2/s", "in_fcs_errors"),
        ],
    ),
    # A healthy PAM4 link corrects tens of thousands of symbol errors a second, each link at
    # its own level: none of it is a burst.
    "steady_pre_fec_symbol_errors_of_a_healthy_link_are_no_burst": (
        [rate(10 * k, M.SYMBOL_ERRORS, 5e4 * (1 + 0.3 * (k % 3)), "phy") for k in range(20)],
        [],
    ),
    "a_hundredfold_rise_over_the_links_own_symbol_error_level_is_pre_fec_errors": (
        [
            *[rate(10 * k, M.SYMBOL_ERRORS, 5e4, "phy") for k in range(7)],
            rate(70, M.SYMBOL_ERRORS, 4e6, "phy"),  # 80x: degrading (not learned), no burst yet
            rate(80, M.SYMBOL_ERRORS, 6e6, "phy"),
            rate(90, M.SYMBOL_ERRORS, 7e6, "phy"),  # still latched: no second event
        ],
        [
            event(
                80,
                K.PRE_FEC_ERRORS,
                6e6,
                "symbol_errors[phy] at 6e+06/s, its own level 5e+04/s",
                "symbol_errors[phy]",
            )
        ],
    ),
    # A job that stopped sends no frames to lose, but its corrupting link still corrects
    # codewords of idles: the rise over the link's own level is what shows it.
    "a_rise_in_corrected_fec_codewords_is_pre_fec_errors_like_symbol_errors": (
        [
            *[rate(10 * k, M.FEC_CORRECTED, 1.1e4) for k in range(7)],
            rate(70, M.FEC_CORRECTED, 4.3e5),  # 40x: not yet
            rate(80, M.FEC_CORRECTED, 2.27e6),
        ],
        [
            event(
                80,
                K.PRE_FEC_ERRORS,
                2.27e6,
                "fec_corrected at 2.27e+06/s, its own level 1.1e+04/s",
                "fec_corrected",
            )
        ],
    ),
    # One port reports its corrected bits in the millions beside a lane's corrected symbols
    # in the hundreds: on one shared level the lane would never fire, or the bits always.
    "each_pre_fec_series_of_a_port_is_judged_on_its_own_level": (
        [
            item
            for k in range(8)
            for item in (
                rate(10 * k, M.FEC_CORRECTED, 3e6, "bits"),
                rate(10 * k, M.FEC_CORRECTED, 2e3 if k < 7 else 3e5, "rs:2"),
            )
        ],
        [
            event(
                70,
                K.PRE_FEC_ERRORS,
                3e5,
                "fec_corrected[rs:2] at 3e+05/s, its own level 2e+03/s",
                "fec_corrected[rs:2]",
            )
        ],
    ),
    # 8.4e10 B/s is 2e7 frames a second: 3 errors a second is 1.5e-7 of them, and rising
    # with the traffic it stays that share.
    "errors_that_only_rose_with_the_traffic_are_no_burst": (
        [
            *[
                r
                for k in range(8)
                for r in (rate(10 * k, M.IN_OCTETS, 8.4e9), rate(10 * k, M.IN_FCS_ERRORS, 0.3))
            ],
            *[
                r
                for k in range(8, 12)
                for r in (rate(10 * k, M.IN_OCTETS, 8.4e10), rate(10 * k, M.IN_FCS_ERRORS, 3.0))
            ],
        ],
        [],
    ),
    # 1 error a second in 2e7 frames is 5e-8 of them: under the floor, the link's own level.
    "errors_far_above_a_busy_links_own_ratio_are_a_burst": (
        [
            *[rate(10 * k, M.IN_OCTETS, 8.4e10) for k in range(3)],
            *[
                r
                for k in range(3, 10)
                for r in (rate(10 * k, M.IN_OCTETS, 8.4e10), rate(10 * k, M.IN_FCS_ERRORS, 1.0))
            ],
            rate(100, M.IN_OCTETS, 8.4e10),
            rate(100, M.IN_FCS_ERRORS, 400.0),
        ],
        [
            event(
                100,
                K.ERROR_BURST,
                400.0,
                "in_fcs_errors at 400/s, 2e-05 of its frames (its own level 5e-08)",
                "in_fcs_errors",
            )
        ],
    ),
    "a_busy_links_first_errors_over_the_floor_ratio_are_a_burst_before_it_has_a_level": (
        [
            *[rate(10 * k, M.IN_OCTETS, 8.4e10) for k in range(3)],
            rate(30, M.IN_OCTETS, 8.4e10),
            rate(30, M.IN_FCS_ERRORS, 50.0),
        ],
        [
            event(
                30,
                K.ERROR_BURST,
                50.0,
                "in_fcs_errors at 50/s, 2.5e-06 of its frames",
                "in_fcs_errors",
            )
        ],
    ),
    "symbol_errors_on_a_clean_link_fire_only_past_the_floor": (
        [
            *[rate(10 * k, M.SYMBOL_ERRORS, 0.0) for k in range(7)],
            rate(70, M.SYMBOL_ERRORS, 500.0),  # below the floor: learned, the level is 50/s
            rate(80, M.SYMBOL_ERRORS, 2000.0),  # past the floor, not 100x the level
            rate(90, M.SYMBOL_ERRORS, 6000.0),
        ],
        [
            event(
                90,
                K.PRE_FEC_ERRORS,
                6000.0,
                "symbol_errors at 6e+03/s, its own level 50/s",
                "symbol_errors",
            )
        ],
    ),
    "no_symbol_error_burst_before_the_links_level_is_known": (
        [rate(10 * k, M.SYMBOL_ERRORS, 1e7) for k in range(3)],
        [],
    ),
    "any_uncorrectable_fec_codeword_is_an_event": (
        [rate(10, M.FEC_UNCORRECTABLE, 0.0), rate(20, M.FEC_UNCORRECTABLE, 0.1, "fc:2")],
        [event(20, K.FEC_UNCORRECTABLE, 0.1, "uncorrectable FEC codewords at 0.1/s", "fc:2")],
    ),
    "pfc_pauses_sum_priorities_within_one_timestamp_per_direction": (
        [
            rate(10, M.PFC_RX_PAUSE, 3000.0, "3"),
            rate(10, M.PFC_RX_PAUSE, 2500.0, "4"),
            rate(10, M.PFC_TX_PAUSE, 4000.0, "3"),
            rate(20, M.PFC_RX_PAUSE, 6000.0, "3"),  # storm continues: no new event
            rate(20, M.PFC_TX_PAUSE, 900.0, "3"),
            rate(20, M.PFC_TX_PAUSE, 4200.0, "link"),
        ],
        [
            event(
                10,
                K.PFC_STORM,
                5500.0,
                "rx PFC pause 5500/s (priorities 3,4): the peer is pausing this port",
                "rx",
            ),
            event(
                20,
                K.PFC_PAUSING,
                5100.0,
                "tx PFC pause 5100/s (priorities 3,link): this port is pausing its peer",
                "tx",
            ),
        ],
    ),
    "pfc_storm_rearms_after_quiet_groups": (
        [
            rate(0, M.PFC_RX_PAUSE, 9000.0, "3"),
            rate(30, M.PFC_RX_PAUSE, 10.0, "3"),
            rate(70, M.PFC_RX_PAUSE, 10.0, "3"),
            rate(80, M.PFC_RX_PAUSE, 7000.0, "3"),  # the 70 s group was clear 70 s after the storm
        ],
        [
            event(
                0,
                K.PFC_STORM,
                9000.0,
                "rx PFC pause 9000/s (priorities 3): the peer is pausing this port",
                "rx",
            ),
            event(
                80,
                K.PFC_STORM,
                7000.0,
                "rx PFC pause 7000/s (priorities 3): the peer is pausing this port",
                "rx",
            ),
        ],
    ),
    "a_port_negotiating_below_its_best_speed_is_a_speed_down_until_it_is_back": (
        [
            rate(0, M.PORT_SPEED_GBPS, 800.0, interval_s=0.0),
            rate(10, M.PORT_SPEED_GBPS, 400.0, interval_s=0.0),
            rate(20, M.PORT_SPEED_GBPS, 400.0, interval_s=0.0),  # still slow: no repeat
            rate(30, M.PORT_SPEED_GBPS, 800.0, interval_s=0.0),
            rate(200, M.PORT_SPEED_GBPS, 200.0, interval_s=0.0),
        ],
        [
            event(10, K.SPEED_DOWN, 400.0, "negotiated 400 Gb/s, down from 800 Gb/s"),
            event(200, K.SPEED_DOWN, 200.0, "negotiated 200 Gb/s, down from 800 Gb/s"),
        ],
    ),
    "rx_power_low_per_channel": (
        [
            rate(0, M.RX_POWER_DBM, -2.0, "0", 0.0),
            rate(0, M.RX_POWER_DBM, -10.0, "1", 0.0),
            rate(10, M.RX_POWER_DBM, -14.5, "1", 0.0),
        ],
        [event(0, K.RX_POWER_LOW, -10.0, "rx power -10.00 dBm on channel 1", "1")],
    ),
    "traffic_drop_against_a_busy_baseline": (
        [rate(t, M.IN_OCTETS, 2e9) for t in range(0, 50, 10)]
        + [rate(50, M.IN_OCTETS, 1e7), rate(60, M.IN_OCTETS, 0.0), rate(70, M.IN_OCTETS, 2e9)],
        [
            event(
                50,
                K.TRAFFIC_DROP,
                1e7,
                "in_octets fell to 1e+07 B/s, 0.5% of its 2e+09 B/s baseline",
                "in_octets",
            )
        ],
    ),
    "two_detectors_firing_on_one_port_at_one_instant_are_told_apart_by_their_series": (
        [rate(0, M.IN_ERRORS, 50.0), rate(0, M.IN_FCS_ERRORS, 50.0)]
        + [rate(t, m, 2e9) for t in range(0, 50, 10) for m in (M.IN_OCTETS, M.OUT_OCTETS)]
        + [rate(50, M.IN_OCTETS, 0.0), rate(50, M.OUT_OCTETS, 0.0)],
        [
            event(0, K.ERROR_BURST, 50.0, "in_errors at 50/s", "in_errors"),
            event(0, K.ERROR_BURST, 50.0, "in_fcs_errors at 50/s", "in_fcs_errors"),
            event(
                50,
                K.TRAFFIC_DROP,
                0.0,
                "in_octets fell to 0 B/s, 0.0% of its 2e+09 B/s baseline",
                "in_octets",
            ),
            event(
                50,
                K.TRAFFIC_DROP,
                0.0,
                "out_octets fell to 0 B/s, 0.0% of its 2e+09 B/s baseline",
                "out_octets",
            ),
        ],
    ),
    "no_traffic_drop_on_a_quiet_link_or_before_warmup": (
        [rate(t, M.OUT_OCTETS, 5e7) for t in range(0, 50, 10)]
        + [rate(50, M.OUT_OCTETS, 0.0)]
        + [rate(100, M.IN_OCTETS, 2e9), rate(110, M.IN_OCTETS, 0.0)],
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_link_health(name: str) -> None:
    inputs, expected = CASES[name]
    assert run(inputs) == expected


def test_same_inputs_give_the_same_events() -> None:
    inputs = [item for items, _ in CASES.values() for item in items]
    assert run(inputs) == run(inputs)


def test_thresholds_are_configurable() -> None:
    strict = Thresholds(error_rate_per_s=0.1, pfc_pause_per_s=100.0, flap_changes=2)
    got = run(
        [
            rate(10, M.OUT_ERRORS, 0.2),
            rate(10, M.PFC_TX_PAUSE, 150.0, "3"),
            oper(0, "up"),
            oper(1, "down"),
            oper(2, "up"),
        ],
        strict,
    )
    assert [e.kind for e in got] == [K.ERROR_BURST, K.PFC_PAUSING, K.DOWN, K.UP, K.FLAP]


def test_counter_values_as_telemetry_values_are_ignored() -> None:
    assert run([TelemetryValue(T, "leaf1", "Ethernet1", M.IN_ERRORS, 1e9)]) == []


def test_decoder_rates_and_health_chain_finds_a_pfc_storm_in_gnmic_events() -> None:
    def line(ts_s: int, pause3: int, pause4: int) -> str:
        tags = '"interface_interface-id":"swp7","source":"spine1:9339"'
        path = "/qos/interfaces/interface/switch-priority/state/counters/in-pause-pkts"
        return (
            f'[{{"name":"pfc","timestamp":{T + ts_s * S},"tags":{{{tags},'
            f'"switch-priority_priority":"3"}},"values":{{"{path}":"{pause3}"}}}},'
            f'{{"name":"pfc","timestamp":{T + ts_s * S},"tags":{{{tags},'
            f'"switch-priority_priority":"4"}},"values":{{"{path}":"{pause4}"}}}}]'
        )

    text = "\n".join([line(0, 0, 0), line(10, 1_000, 0), line(20, 31_000, 40_000)])
    rates, health = CounterRates(), LinkHealth()
    events: list[LinkEvent] = []
    for value in GnmicDecoder().feed_text(text, "pfc.jsonl"):
        sample, _ = rates.update(value)
        events += health.update(sample) if sample else []
    assert events == [
        LinkEvent(
            T + 20 * S,
            "spine1",
            "swp7",
            K.PFC_STORM,
            7000.0,
            "rx PFC pause 7000/s (priorities 3,4): the peer is pausing this port",
            "rx",
            span_s=10.0,  # the 10 s between the two readings the rate came from
        )
    ]
