"""CounterRates and LinkHealth snapshots: a worker restored from its changelog goes on exactly.

The stream below has every kind of state the two machines keep: a 64-bit counter wrapping, a
device reset, oper-status flaps with carrier transitions, a PFC storm summed over priorities, a
traffic drop after the baseline warmed up, error bursts, low rx power and uncorrectable FEC.
Cutting it anywhere, carrying the state through orjson and going on must change nothing.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import astuple
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import orjson
import pytest

from railtrace.streams.records import (
    COUNTER_METRICS,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    Metric,
    TelemetryValue,
)
from railtrace.streams.telemetry import CounterRates, LinkHealth, Thresholds

T = 1_700_000_000_000_000_000
S = 1_000_000_000
MS = 1_000_000
M = Metric
K = LinkEventKind
ROUNDS = 30

Output: TypeAlias = LinkSample | LinkEvent
THRESHOLDS = Thresholds()
GAUGES = frozenset({M.RX_POWER_DBM, M.TEMPERATURE_C})


def _stream() -> list[TelemetryValue]:
    """Thirty 10 s rounds of five interfaces, each interface's values at its own timestamp."""
    out: list[TelemetryValue] = []
    wrap_octets = 2**64 - 3 * 10**11  # +1e11 a round: wraps in the third round
    reset_octets = 10**15
    errors = 0
    pause = {"3": 0, "4": 0}
    carrier = 0
    fec_corrected = 0.0
    fec_uncorrectable = 0
    for r in range(ROUNDS):
        v = _emitter(out, T + r * 10 * S)
        # leaf1 Ethernet1: a 64-bit counter that wraps; traffic drops in rounds 18-20.
        wrap_octets = (wrap_octets + (10**5 if 18 <= r <= 20 else 10**11)) % 2**64
        fec_corrected += 2.5  # a Decimal64 counter stays a float
        v(1, "leaf1", "Ethernet1", M.IN_OCTETS, wrap_octets)
        v(1, "leaf1", "Ethernet1", M.OUT_OCTETS, 5 * 10**10 * (r + 1))
        v(1, "leaf1", "Ethernet1", M.FEC_CORRECTED, fec_corrected)
        v(1, "leaf1", "Ethernet1", M.OPER_STATUS, "up")
        if r == 5:  # a second collector sends the same reading again
            v(1, "leaf1", "Ethernet1", M.IN_OCTETS, wrap_octets)

        # leaf1 Ethernet2: the device reboots in round 12; error bursts in rounds 6-7, 20-21.
        reset_octets = 12_345 if r == 12 else reset_octets + 2 * 10**10
        errors += 500 if r in (6, 7, 20, 21) else 0
        v(2, "leaf1", "Ethernet2", M.IN_OCTETS, reset_octets)
        v(2, "leaf1", "Ethernet2", M.IN_ERRORS, errors)
        v(2, "leaf1", "Ethernet2", M.OPER_STATUS, "up")

        # leaf1 Ethernet3: flaps in rounds 9-14, seen both as oper-status and carrier changes.
        state = "down" if r in (9, 11, 13) else "testing" if r == 16 else "up"
        carrier += 1 if 9 <= r <= 14 else 0
        v(3, "leaf1", "Ethernet3", M.OPER_STATUS, state)
        v(3, "leaf1", "Ethernet3", M.CARRIER_TRANSITIONS, carrier)

        # leaf1 Ethernet4: priorities 3 and 4 each below the threshold, together a storm.
        for q in pause:
            pause[q] += 30_000 if 14 <= r <= 17 else 100
        v(4, "leaf1", "Ethernet4", M.PFC_RX_PAUSE, pause["3"], "3")
        v(4, "leaf1", "Ethernet4", M.PFC_RX_PAUSE, pause["4"], "4")
        v(4, "leaf1", "Ethernet4", M.PFC_TX_PAUSE, 7 * r, "3")
        v(4, "leaf1", "Ethernet4", M.OPER_STATUS, "up")

        # leaf2 Ethernet1: lane 1 goes dark in rounds 10-12; uncorrectable FEC in round 16.
        fec_uncorrectable += 40 if r == 16 else 0
        v(5, "leaf2", "Ethernet1", M.RX_POWER_DBM, -2.0, "0")
        v(5, "leaf2", "Ethernet1", M.RX_POWER_DBM, -12.5 if 10 <= r <= 12 else -2.5, "1")
        v(5, "leaf2", "Ethernet1", M.TEMPERATURE_C, 40.0 + r / 4)
        v(5, "leaf2", "Ethernet1", M.FEC_UNCORRECTABLE, fec_uncorrectable)
        v(5, "leaf2", "Ethernet1", M.IN_OCTETS, 10**12 * (r + 1))
        v(5, "leaf2", "Ethernet1", M.OPER_STATUS, "up")
    return out


class Emit(Protocol):
    def __call__(
        self,
        offset_ms: int,
        device: str,
        interface: str,
        metric: Metric,
        value: float | str,
        qualifier: str = "",
    ) -> None: ...


def _emitter(out: list[TelemetryValue], round_ns: int) -> Emit:
    def emit(
        offset_ms: int,
        device: str,
        interface: str,
        metric: Metric,
        value: float | str,
        qualifier: str = "",
    ) -> None:
        ts_ns = round_ns + offset_ms * MS
        out.append(TelemetryValue(ts_ns, device, interface, metric, value, qualifier))

    return emit


STREAM = _stream()


def step(rates: CounterRates, health: LinkHealth, value: TelemetryValue) -> list[Output]:
    """What `Pipeline.on_telemetry` does with one value, without the correlator."""
    if value.metric not in COUNTER_METRICS and value.metric not in GAUGES:
        return list(health.update(value))
    out: list[Output] = []
    sample, reset = rates.update(value)
    if reset is not None:
        out.append(reset)
    if sample is not None:
        out.append(sample)
        out.extend(health.update(sample))
    return out


def run(rates: CounterRates, health: LinkHealth, values: Sequence[TelemetryValue]) -> list[Output]:
    return [o for value in values for o in step(rates, health, value)]


def through_json(rates: CounterRates, health: LinkHealth) -> tuple[CounterRates, LinkHealth]:
    """What a restarted worker gets back: the snapshots as bytes in a changelog and back."""
    blob = orjson.dumps({"rates": rates.snapshot(), "health": health.snapshot()})
    snap = orjson.loads(blob)
    return CounterRates.restore(snap["rates"]), LinkHealth.restore(snap["health"], THRESHOLDS)


def reference() -> tuple[list[list[Output]], CounterRates, LinkHealth]:
    """The uninterrupted run: outputs per input value, and the final state."""
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    return [step(rates, health, value) for value in STREAM], rates, health


REFERENCE, REF_RATES, REF_HEALTH = reference()
ALL_OUTPUTS = [o for outs in REFERENCE for o in outs]


def flat(per_value: Sequence[list[Output]]) -> list[Output]:
    return [o for outs in per_value for o in outs]


def json_leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        assert all(type(k) is str for k in value)
        for item in value.values():
            yield from json_leaves(item)
    elif type(value) is list:
        for item in value:
            yield from json_leaves(item)
    else:
        yield value


def test_the_stream_has_every_kind_of_state_the_cut_tests_rely_on() -> None:
    kinds = [o.kind for o in ALL_OUTPUTS if isinstance(o, LinkEvent)]
    assert sorted(set(kinds)) == sorted(
        {
            K.COUNTER_RESET,
            K.DOWN,
            K.UP,
            K.FLAP,
            K.PFC_STORM,
            K.TRAFFIC_DROP,
            K.ERROR_BURST,
            K.RX_POWER_LOW,
            K.FEC_UNCORRECTABLE,
        }
    )
    assert kinds.count(K.ERROR_BURST) == 2  # the latch re-armed in between
    assert kinds.count(K.PFC_STORM) == 1  # four storm rounds, one event
    assert REF_RATES.stats.wraps == 1 and REF_RATES.stats.resets == 1
    assert REF_RATES.stats.out_of_order == 1


def test_restoring_at_every_cut_gives_the_outputs_of_the_uninterrupted_run() -> None:
    final = REF_RATES.snapshot(), REF_HEALTH.snapshot()
    live_rates, live_health = CounterRates(), LinkHealth(THRESHOLDS)
    for cut in range(len(STREAM) + 1):
        rates, health = through_json(live_rates, live_health)
        assert run(rates, health, STREAM[cut:]) == flat(REFERENCE[cut:]), f"cut at {cut}"
        assert (rates.snapshot(), health.snapshot()) == final
        if cut < len(STREAM):
            step(live_rates, live_health, STREAM[cut])


def test_restarting_after_every_value_gives_the_outputs_of_the_uninterrupted_run() -> None:
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    outputs = []
    for value in STREAM:
        rates, health = through_json(rates, health)
        outputs.extend(step(rates, health, value))
    assert outputs == ALL_OUTPUTS


def test_a_snapshot_restores_to_one_that_snapshots_back_to_it() -> None:
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    for value in STREAM:
        step(rates, health, value)
        snaps = (rates.snapshot(), health.snapshot())
        again = through_json(rates, health)
        assert (again[0].snapshot(), again[1].snapshot()) == snaps


@pytest.mark.parametrize("window", [1, 7, 45])
def test_redelivered_values_after_restore_raise_no_event_and_leave_the_state_as_it_was(
    window: int,
) -> None:
    """At-least-once delivery: after a restart, the last `window` values come again although
    the restored state has already seen them. Restarted so after every value, the run must
    still give exactly the outputs of the uninterrupted one."""
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    outputs: list[Output] = []
    for cut, value in enumerate(STREAM):
        rates, health = through_json(rates, health)
        before = rates.snapshot()["last"], health.snapshot()
        replayed = run(rates, health, STREAM[max(0, cut - window) : cut])
        # CounterRates passes gauges through without ordering them (test_telemetry_rates), so
        # they come out again, identical; LinkHealth ignores them the second time.
        assert all(isinstance(o, LinkSample) and o.metric in GAUGES for o in replayed)
        assert set(replayed) <= set(outputs)
        assert (rates.snapshot()["last"], health.snapshot()) == before
        outputs.extend(step(rates, health, value))
    assert outputs == ALL_OUTPUTS


def test_redelivering_everything_so_far_changes_nothing_that_follows() -> None:
    live_rates, live_health = CounterRates(), LinkHealth(THRESHOLDS)
    for cut in range(0, len(STREAM) + 1, 19):
        rates, health = through_json(live_rates, live_health)
        replayed = run(rates, health, STREAM[:cut])
        assert not [o for o in replayed if isinstance(o, LinkEvent) or o.metric not in GAUGES]
        assert run(rates, health, STREAM[cut:]) == flat(REFERENCE[cut:]), f"cut at {cut}"
        run(live_rates, live_health, STREAM[cut : cut + 19])


def test_a_redelivered_flap_does_not_repeat_down_up_or_flap() -> None:
    values = [v for v in STREAM if v.interface == "Ethernet3" and v.device == "leaf1"]
    flapping = [v for v in values if T + 9 * 10 * S < v.ts_ns < T + 15 * 10 * S]
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    first = run(rates, health, values[: values.index(flapping[-1]) + 1])
    assert [o.kind for o in first if isinstance(o, LinkEvent)].count(K.FLAP) == 1
    rates, health = through_json(rates, health)
    assert run(rates, health, flapping) == []


def test_a_redelivered_pfc_priority_is_not_summed_twice() -> None:
    def pause(ts_s: int, qualifier: str, rate: float) -> LinkSample:
        return LinkSample(T + ts_s * S, "leaf1", "Ethernet4", M.PFC_RX_PAUSE, qualifier, rate, 10)

    health = LinkHealth(THRESHOLDS)
    assert health.update(pause(0, "3", 3000.0)) == []
    health = LinkHealth.restore(orjson.loads(orjson.dumps(health.snapshot())), THRESHOLDS)
    assert health.update(pause(0, "3", 3000.0)) == []  # 6000/s if it were counted again
    assert [e.kind for e in health.update(pause(0, "4", 3000.0))] == [K.PFC_STORM]


def test_snapshot_is_plain_json_that_orjson_gives_back_exactly() -> None:
    for snap in (REF_RATES.snapshot(), REF_HEALTH.snapshot()):
        assert snap["v"] == 1
        assert all(
            leaf is None or type(leaf) in (str, int, float, bool) for leaf in json_leaves(snap)
        )
        assert orjson.loads(orjson.dumps(snap)) == snap
    counters = {row[0]: row[3] for row in REF_RATES.snapshot()["last"]["leaf1"]["Ethernet1"]}
    assert type(counters["out_octets"]) is int and type(counters["fec_corrected"]) is float


def test_a_counter_near_2_to_the_64_keeps_every_unit() -> None:
    rates = CounterRates()
    run(rates, LinkHealth(), STREAM[:1])
    snap = orjson.loads(orjson.dumps(rates.snapshot()))
    assert snap["last"]["leaf1"]["Ethernet1"][0][3] == 2**64 - 2 * 10**11


def test_counters_beyond_64_bits_survive_the_round_trip() -> None:
    """orjson refuses ints of 2**64 and more; one garbage reading must not make every later
    changelog write of its key fail."""
    huge = 2**70 + 1
    rates = CounterRates()
    rates.update(TelemetryValue(T, "leaf1", "Ethernet1", M.IN_OCTETS, huge))
    rates = CounterRates.restore(orjson.loads(orjson.dumps(rates.snapshot())))
    _, reset = rates.update(TelemetryValue(T + S, "leaf1", "Ethernet1", M.IN_OCTETS, 5))
    assert reset is not None and reset.detail.startswith(f"in_octets fell from {huge} to 5")


def test_non_finite_state_survives_the_round_trip() -> None:
    """orjson writes NaN and infinities as null; they must come back as themselves."""

    def sample(ts_s: int, metric: Metric, rate: float, qualifier: str = "") -> LinkSample:
        return LinkSample(T + ts_s * S, "leaf1", "Ethernet1", metric, qualifier, rate, 10)

    health = LinkHealth()
    health.update(sample(0, M.IN_OCTETS, math.inf))
    health.update(sample(0, M.PFC_RX_PAUSE, math.inf, "3"))
    snap = health.snapshot()
    restored = LinkHealth.restore(orjson.loads(orjson.dumps(snap)))
    parts = restored.snapshot()["ifaces"]["leaf1"]["Ethernet1"]
    assert (parts["baselines"][0][1], parts["pause"][0][2]) == ("inf", "inf")
    assert restored.snapshot() == snap
    later = [sample(10, M.IN_OCTETS, 5.0), sample(10, M.PFC_RX_PAUSE, 1.0, "3")]
    assert [restored.update(s) for s in later] == [health.update(s) for s in later]
    assert restored.snapshot() == health.snapshot()  # both baselines are now NaN, written "nan"


def test_a_fresh_snapshot_restores_to_an_object_that_behaves_as_new() -> None:
    rates = CounterRates.restore(orjson.loads(orjson.dumps(CounterRates().snapshot())))
    health = LinkHealth.restore(orjson.loads(orjson.dumps(LinkHealth().snapshot())), THRESHOLDS)
    assert rates.snapshot() == CounterRates().snapshot()
    assert health.snapshot() == LinkHealth().snapshot()
    assert run(rates, health, STREAM) == ALL_OUTPUTS


def test_restore_keeps_nothing_of_the_snapshot_by_reference() -> None:
    """A Faust table hands back its cached value; running on must not change it."""
    half = len(STREAM) // 2
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    run(rates, health, STREAM[:half])
    snaps = orjson.loads(orjson.dumps([rates.snapshot(), health.snapshot()]))
    kept = copy.deepcopy(snaps)
    rates, health = CounterRates.restore(snaps[0]), LinkHealth.restore(snaps[1], THRESHOLDS)
    run(rates, health, STREAM[half:])
    assert snaps == kept


def test_thresholds_and_wrap_tolerance_come_from_the_caller_not_the_snapshot() -> None:
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    run(rates, health, STREAM[:100])
    strict = Thresholds(error_rate_per_s=1e9, pfc_pause_per_s=1.0)
    restored = LinkHealth.restore(orjson.loads(orjson.dumps(health.snapshot())), strict)
    assert restored.thresholds is strict
    assert CounterRates.restore(rates.snapshot(), wrap_max_fraction=0.5).wrap_max_fraction == 0.5


@pytest.mark.parametrize("restore", [CounterRates.restore, LinkHealth.restore])
@pytest.mark.parametrize("version", [0, 2, "1", 1.0, None, True])
def test_an_unknown_snapshot_version_is_rejected(restore: Any, version: Any) -> None:
    snap = CounterRates().snapshot() if restore == CounterRates.restore else LinkHealth().snapshot()
    snap["v"] = version
    with pytest.raises(ValueError, match="version"):
        restore(snap)
    del snap["v"]
    with pytest.raises(ValueError, match="version"):
        restore(snap)


def test_a_snapshot_of_the_other_machine_is_rejected() -> None:
    with pytest.raises(ValueError, match="not CounterRates"):
        CounterRates.restore(LinkHealth().snapshot())
    with pytest.raises(ValueError, match="not LinkHealth"):
        LinkHealth.restore(CounterRates().snapshot())


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s["last"]["leaf1"]["Ethernet1"][0].pop(),
        lambda s: s["last"]["leaf1"]["Ethernet1"][0].__setitem__(0, "no_such_metric"),
        lambda s: s["last"]["leaf1"]["Ethernet1"][0].__setitem__(2, 1.5),
        lambda s: s["stats"].__setitem__("bogus", 1),
        lambda s: s.pop("last"),
    ],
)
def test_a_damaged_counter_rates_snapshot_is_rejected_with_value_error(damage: Any) -> None:
    snap = REF_RATES.snapshot()
    damage(snap)
    with pytest.raises(ValueError, match="damaged CounterRates snapshot"):
        CounterRates.restore(snap)


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s["ifaces"]["leaf1"]["Ethernet3"].__setitem__("oper", [1, "down"]),
        lambda s: s["ifaces"]["leaf1"]["Ethernet3"].__setitem__("mystery", []),
        lambda s: s["ifaces"]["leaf1"]["Ethernet4"]["latches"][0].__setitem__(0, "nope"),
        lambda s: s["ifaces"]["leaf1"]["Ethernet4"]["pause"][0].__setitem__(1, None),
        lambda s: s["ifaces"]["leaf1"].__setitem__("Ethernet9", []),
    ],
)
def test_a_damaged_link_health_snapshot_is_rejected_with_value_error(damage: Any) -> None:
    snap = REF_HEALTH.snapshot()
    damage(snap)
    with pytest.raises(ValueError, match="damaged LinkHealth snapshot"):
        LinkHealth.restore(snap)


PYTHON_RULES = orjson.loads(
    (Path(__file__).parent / "fixtures" / "state" / "python-rules.json").read_bytes()
)


def _plain(outputs: list[Output]) -> list[list[Any]]:
    """Outputs as `fixtures/state/record_rules.py` records them."""
    return orjson.loads(orjson.dumps([[type(o).__name__, *astuple(o)] for o in outputs]))


def test_the_compiled_rules_give_what_the_python_rules_gave() -> None:
    """The rules were written in Python first; fixtures/state/python-rules.json is what they
    gave on this stream (main at 0950fa5): every output, and the snapshots, equal."""
    rates, health = CounterRates(), LinkHealth(THRESHOLDS)
    assert _plain(run(rates, health, STREAM)) == PYTHON_RULES["outputs"]
    assert {"rates": rates.snapshot(), "health": health.snapshot()} == PYTHON_RULES["end"]


def test_a_checkpoint_of_the_python_rules_restores_and_goes_on_as_they_did() -> None:
    """A worker upgraded mid-stream restores the checkpoint the Python rules wrote and goes on
    with the outputs they went on with."""
    cut = PYTHON_RULES["cut"]
    before = len(_plain(run(CounterRates(), LinkHealth(THRESHOLDS), STREAM[:cut])))
    middle = PYTHON_RULES["middle"]
    rates = CounterRates.restore(middle["rates"])
    health = LinkHealth.restore(middle["health"], THRESHOLDS)
    assert _plain(run(rates, health, STREAM[cut:])) == PYTHON_RULES["outputs"][before:]
    assert {"rates": rates.snapshot(), "health": health.snapshot()} == PYTHON_RULES["end"]
