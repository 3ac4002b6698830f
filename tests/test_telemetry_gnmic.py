"""gnmic json/event output -> TelemetryValues: framing, formats, values, malformed input."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeAlias

import orjson
import pytest

from railtrace.streams.records import DeadLetter, Metric, TelemetryValue
from railtrace.streams.telemetry.gnmic import (
    DecodeError,
    DecodeStats,
    GnmicDecoder,
    decode_message,
    iter_messages,
)

FIXTURES = Path(__file__).parent / "fixtures" / "gnmi"
T = 1_700_000_000_000_000_000
S = 1_000_000_000
M = Metric

Row: TypeAlias = tuple[int, str, str, Metric, float | str, str]


def rows(values: list[TelemetryValue]) -> list[Row]:
    return [(v.ts_ns, v.device, v.interface, v.metric, v.value, v.qualifier) for v in values]


def decode_text(text: str) -> tuple[list[Row], DecodeStats]:
    decoder = GnmicDecoder()
    return rows(decoder.feed_text(text, "test")), decoder.stats


def json_msg(prefix: str, path: str, value: Any, source: str = "leaf1:6030") -> dict[str, Any]:
    """One gnmic json-format notification with one update, as pkg/formatters/json.go writes it."""
    key = "/".join(element.split("[")[0] for element in path.split("/"))
    message: dict[str, Any] = {"source": source, "subscription-name": "sub", "timestamp": T}
    if prefix:
        message["prefix"] = prefix
    message["updates"] = [{"Path": path, "values": {key: value}}]
    return message


FIXTURE_CASES: dict[str, list[Row]] = {
    "arista_eos_cli_json_multitarget.txt": [
        (T, "leaf1", "Ethernet1/1", M.IN_OCTETS, 1_000_000_000, ""),
        (T, "leaf1", "Ethernet1/1", M.IN_FCS_ERRORS, 7, ""),
        (T, "leaf1", "Ethernet1/1", M.OPER_STATUS, "up", ""),
        (T + 1, "leaf2", "Ethernet3/1", M.IN_OCTETS, 2_000_000_000, ""),
        (T + 1, "leaf2", "Ethernet3/1", M.IN_FCS_ERRORS, 7, ""),
        (T + 1, "leaf2", "Ethernet3/1", M.OPER_STATUS, "up", ""),
        (T + 10 * S, "leaf1", "Ethernet1/1", M.IN_OCTETS, 1_250_000_000, ""),
        (T + 10 * S, "leaf1", "Ethernet1/1", M.OUT_OCTETS, 3_000_000_000, ""),
        (T + 10 * S, "leaf1", "Ethernet1/1", M.IN_ERRORS, 0, ""),
    ],
    "cumulus_event.jsonl": [
        (T, "spine1", "swp1", M.PFC_RX_PAUSE, 1000, "3"),
        (T, "spine1", "swp1", M.PFC_TX_PAUSE, 20, "3"),
        (T, "spine1", "swp1", M.ECN_MARKED, 555, "3"),
        (T, "spine1", "swp1", M.FEC_UNCORRECTABLE, 4, ""),
        (T, "spine1", "swp1", M.FEC_CORRECTED, 123456, "bits"),
        (T, "spine1", "swp1", M.SYMBOL_ERRORS, 9, "phy"),
        (T, "spine1", "swp1", M.SYMBOL_ERRORS, 2, ""),
        (T, "spine1", "swp1", M.OPER_STATUS, "up", ""),
        (T, "spine1", "swp1", M.CARRIER_TRANSITIONS, 3, ""),
        (T, "spine1", "swp1", M.FEC_UNCORRECTABLE, 1, "fc:0"),
        (T, "spine1", "swp1", M.FEC_CORRECTED, 77, "rs:0"),
        (T, "spine1", "swp1", M.RX_POWER_DBM, -3.5, "2"),
        (T, "spine1", "swp1", M.TEMPERATURE_C, 41.5, ""),
    ],
    "sonic_counters_json.jsonl": [
        (T, "sonic-leaf1", "Ethernet0", M.IN_OCTETS, 433513349, ""),
        (T, "sonic-leaf1", "Ethernet0", M.OUT_OCTETS, 0, ""),
        (T, "sonic-leaf1", "Ethernet0", M.FEC_CORRECTED, 433513349, ""),
        (T, "sonic-leaf1", "Ethernet0", M.FEC_UNCORRECTABLE, 2, ""),
        (T, "sonic-leaf1", "Ethernet0", M.PFC_RX_PAUSE, 100, "3"),
        (T, "sonic-leaf1", "Ethernet0", M.PFC_TX_PAUSE, 5, "3"),
        (T, "sonic-leaf1", "Ethernet0", M.IN_FCS_ERRORS, 0, ""),
        (T + S, "sonic-leaf1", "Ethernet4", M.PFC_RX_PAUSE, 12, "7"),
        (T + 2 * S, "sonic-leaf1", "Ethernet0", M.IN_ERRORS, 0, ""),
        (T + 2 * S, "sonic-leaf1", "Ethernet8", M.IN_ERRORS, 31, ""),
    ],
    "openconfig_kafka_split_events.jsonl": [
        (T, "2001:db8::11", "Ethernet1", M.RX_POWER_DBM, -12.04, "0"),
        (T, "2001:db8::11", "Ethernet1", M.FEC_UNCORRECTABLE, 17, ""),
        (T, "2001:db8::11", "Ethernet1", M.TEMPERATURE_C, 38.0, ""),
        (T + S, "2001:db8::11", "Ethernet1", M.OPER_STATUS, "lower_layer_down", ""),
        (T + S, "2001:db8::11", "Ethernet1", M.CARRIER_TRANSITIONS, 12, ""),
        (T + S, "2001:db8::11", "Ethernet1", M.FEC_CORRECTED, 18446744073709551000, ""),
        (T + S, "2001:db8::11", "Ethernet1", M.PFC_RX_PAUSE, 40, "link"),
    ],
    "openconfig_file_json_multiline.json": [
        (T, "leaf3", "Ethernet5", M.OPER_STATUS, "down", ""),
        (T, "leaf3", "Ethernet5", M.OUT_ERRORS, 3, ""),
        (T, "leaf3", "Ethernet5", M.OUT_DISCARDS, 1, ""),
        (T, "leaf3", "Ethernet6", M.OPER_STATUS, "up", ""),
        (T, "leaf3", "Ethernet6", M.OUT_ERRORS, 0, ""),
        (T, "leaf3", "Ethernet6", M.OUT_DISCARDS, 0, ""),
        (T + 2 * S, "leaf3", "Ethernet5", M.ECN_MARKED, 4096, "3"),
    ],
}


@pytest.mark.parametrize("name", sorted(FIXTURE_CASES))
def test_fixture_files_decode_to_exact_values(name: str) -> None:
    got, stats = decode_text((FIXTURES / name).read_text())
    assert got == FIXTURE_CASES[name]
    assert stats.dead_letter_count == 0
    assert stats.values == len(got)


def test_truncated_json_is_dead_lettered_and_following_messages_kept() -> None:
    got, stats = decode_text((FIXTURES / "damaged_mixed.txt").read_text())
    assert [(ts, value) for ts, _, _, _, value, _ in got] == [
        (T, 100),
        (T + 3 * S, 400),
        (T + 4 * S, 500),
        (T + 7 * S, 700),
    ]
    assert stats.messages == 6
    assert [(d.reason, d.line_no) for d in stats.dead_letters] == [
        ("truncated JSON value", 2),
        ("truncated JSON value", 3),
        ("not JSON", 25),
        ("malformed message: missing timestamp", 0),
        ("malformed message: event tags or values is not an object", 0),
    ]
    assert stats.dead_letters[0].raw.startswith(b'{"source":"leaf1:6030"')
    assert stats.dead_letter_count == 5


def test_truncated_message_at_end_of_input_is_dead_lettered() -> None:
    items = list(iter_messages('{"a": 1}\n{\n  "b": [\n', "capture.json"))
    assert items[0] == {"a": 1}
    assert items[1] == DeadLetter(
        "capture.json", "truncated JSON value at end of input", b'{\n  "b": [', 2
    )


def test_format_is_detected_per_message_not_per_file() -> None:
    event = {
        "name": "sub",
        "timestamp": T + S,
        "tags": {"interface_name": "Ethernet1", "source": "leaf1:6030"},
        "values": {"/interfaces/interface/state/counters/in-octets": "20"},
    }
    text = "\n".join(
        orjson.dumps(m).decode()
        for m in (
            json_msg("interfaces/interface[name=Ethernet1]", "state/counters/in-octets", "10"),
            [event],
            event,
        )
    )
    got, _ = decode_text(text)
    assert [value for *_, value, _ in got] == [10, 20, 20]


def test_target_prefix_is_skipped_and_used_as_source_when_message_has_none() -> None:
    message = json_msg("interfaces/interface[name=Ethernet9]", "state/counters/in-octets", "5")
    del message["source"]
    event = {
        "timestamp": T,
        "tags": {"interface_name": "Ethernet9"},
        "values": {"/interfaces/interface/state/counters/out-octets": "6"},
    }
    text = "\n".join(
        [f"[10.0.0.7:57400] {line}" for line in orjson.dumps(message).decode().split("\n")]
        + [f"[[2001:db8::7]:57400] {orjson.dumps([event]).decode()}"]
        + ['[leaf9:6030] {"source": "leaf1:6030", ' + orjson.dumps(message).decode()[1:]]
    )
    got, stats = decode_text(text)
    assert [(device, value) for _, device, _, _, value, _ in got] == [
        ("10.0.0.7", 5),
        ("2001:db8::7", 6),
        ("leaf1", 5),
    ]
    assert stats.dead_letter_count == 0


@pytest.mark.parametrize(
    ("source", "device"),
    [
        ("leaf1:57400", "leaf1"),
        ("leaf1", "leaf1"),
        ("10.0.0.1:6030", "10.0.0.1"),
        ("[2001:db8::1]:57400", "2001:db8::1"),
        ("2001:db8::1", "2001:db8::1"),
    ],
)
def test_device_is_the_source_without_its_port(source: str, device: str) -> None:
    message = json_msg("interfaces/interface[name=e1]", "state/counters/in-octets", 1, source)
    assert decode_message(message)[0].device == device


@pytest.mark.parametrize(
    ("prefix", "path"),
    [
        ("interfaces/interface[name=Ethernet1/1]", "state/counters/in-octets"),
        ("/interfaces/interface[name=Ethernet1/1]/", "/state/counters/in-octets"),
        ("openconfig:/interfaces/interface[name=Ethernet1/1]", "state/counters/in-octets"),
        (
            "openconfig-interfaces:interfaces",
            "interface[name=Ethernet1/1]/state/counters/in-octets",
        ),
        (
            "",
            "/openconfig-interfaces:interfaces/interface[name='Ethernet1/1']/state/counters/in-octets",
        ),
        (
            "interfaces",
            "interface[name=Ethernet1/1]/openconfig-interfaces:state/counters/in-octets",
        ),
    ],
)
def test_prefix_and_update_path_are_joined_in_every_spelling(prefix: str, path: str) -> None:
    got = rows(decode_message(json_msg(prefix, path, "42")))
    assert got == [(T, "leaf1", "Ethernet1/1", M.IN_OCTETS, 42, "")]


@pytest.mark.parametrize(
    ("leaf", "value", "expected"),
    [
        ("state/counters/in-octets", "65382630", 65382630),
        ("state/counters/in-octets", 65382630, 65382630),
        ("state/counters/in-octets", "18446744073709551615", 2**64 - 1),
        ("state/counters/in-octets", {"uintVal": "12"}, 12),
        ("state/counters/in-octets", {"uint_val": 13}, 13),
        ("state/counters/in-octets", "1.5e3", 1500.0),
        ("state/oper-status", "UP", "up"),
        ("state/oper-status", "LOWER_LAYER_DOWN", "lower_layer_down"),
        ("state/oper-status", "openconfig-interfaces:DOWN", "down"),
        ("state/oper-status", {"stringVal": "DORMANT"}, "dormant"),
    ],
)
def test_leaf_values_are_converted(leaf: str, value: Any, expected: float | str) -> None:
    message = json_msg("interfaces/interface[name=e1]", leaf, value)
    assert decode_message(message)[0].value == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"digits": -523, "precision": 2}, -5.23),
        ({"decimalVal": {"digits": "-523", "precision": 2}}, None),
        ({"precision": 2}, 0.0),
        ("-7.25", -7.25),
        (-7, -7.0),
    ],
)
def test_gauges_accept_decimal64_and_plain_numbers(value: Any, expected: float | None) -> None:
    message = json_msg(
        "components/component[name=Ethernet1]/transceiver/physical-channels/channel[index=1]",
        "state/input-power/instant",
        value,
    )
    stats = DecodeStats()
    got = decode_message(message, stats)
    assert [v.value for v in got] == ([] if expected is None else [expected])
    assert stats.bad_values == (1 if expected is None else 0)


@pytest.mark.parametrize("value", ["-1", -1, "abc", True, None, [1], "nan", {"uintVal": "x"}])
def test_unusable_counter_values_are_counted_not_emitted(value: Any) -> None:
    stats = DecodeStats()
    message = json_msg("interfaces/interface[name=e1]", "state/counters/in-errors", value)
    assert decode_message(message, stats) == []
    assert stats.bad_values == 1


def test_subtree_values_are_flattened_into_their_leaves() -> None:
    counters = {"in-octets": "1", "openconfig-if-ethernet:ignored": "2", "in-errors": "3"}
    json_form = json_msg("interfaces/interface[name=e1]", "state/counters", counters)
    event_form = {
        "timestamp": T,
        "tags": {"source": "leaf1"},
        "values": {
            "/interfaces/interface.0/name": "e1",
            "/interfaces/interface.0/state/counters/in-octets": "1",
            "/interfaces/interface.1/name": "e2",
            "/interfaces/interface.1/state/counters/in-errors": "3",
        },
    }
    assert rows(decode_message(json_form)) == [
        (T, "leaf1", "e1", M.IN_OCTETS, 1, ""),
        (T, "leaf1", "e1", M.IN_ERRORS, 3, ""),
    ]
    assert rows(decode_message(event_form)) == [
        (T, "leaf1", "e1", M.IN_OCTETS, 1, ""),
        (T, "leaf1", "e2", M.IN_ERRORS, 3, ""),
    ]


def test_unknown_paths_are_counted_not_errors() -> None:
    stats = DecodeStats()
    message = json_msg("system/state", "hostname", "leaf1")
    assert decode_message(message, stats) == []
    assert stats.unknown_paths == 1


def test_known_leaf_without_an_interface_name_is_unattributed() -> None:
    stats = DecodeStats()
    event = {
        "timestamp": T,
        "tags": {"source": "leaf1"},
        "values": {"/interfaces/interface/state/counters/in-octets": "1"},
    }
    assert decode_message(event, stats) == []
    assert stats.unattributed == 1


@pytest.mark.parametrize(
    "message",
    [
        {"sync-response": True},
        {"extensions": [{"registeredExt": {"id": 1}}]},
        {"source": "leaf1", "timestamp": T, "prefix": "interfaces", "deletes": ["interface"]},
        [],
    ],
)
def test_messages_without_data_yield_nothing(message: Any) -> None:
    assert decode_message(message) == []


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"source": "leaf1", "updates": []}, "missing timestamp"),
        ({"source": "leaf1", "timestamp": "soon"}, "timestamp is not a positive integer"),
        ({"source": "leaf1", "timestamp": 0}, "timestamp is not a positive integer"),
        ({"source": "leaf1", "timestamp": True}, "timestamp is not a positive integer"),
        ({"timestamp": T, "updates": []}, "missing source"),
        ({"source": "leaf1", "timestamp": T, "updates": {}}, "updates is not a list"),
        ({"source": "leaf1", "timestamp": T, "updates": [{"Path": "x"}]}, "without a values"),
        ({"source": "leaf1", "timestamp": T, "updates": ["x"]}, "without a values"),
        ({}, "missing timestamp"),
        ([{"timestamp": T, "tags": {"source": "a"}}, 3], "event is not an object"),
        ({"timestamp": T, "tags": ["source"], "values": {}}, "tags or values is not an object"),
        ({"timestamp": T, "tags": {}, "values": {"/a": 1}}, "missing source"),
        (42, "message is a JSON int"),
        ("text", "message is a JSON str"),
    ],
)
def test_malformed_messages_raise_decode_error(message: Any, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_message(message)
    assert reason in caught.value.reason


def test_malformed_message_keeps_nothing_of_itself() -> None:
    good = {"timestamp": T, "tags": {"source": "a", "interface_name": "e1"}, "values": {}}
    good["values"] = {"/interfaces/interface/state/counters/in-octets": "1"}
    stats = DecodeStats()
    with pytest.raises(DecodeError):
        decode_message([good, {"timestamp": T}], stats)
    assert stats == DecodeStats()


def test_every_dead_letter_is_kept_until_taken_and_all_are_counted() -> None:
    """A replay stores what it takes after each file: a cap here lost all past the first
    thousand while the summary counted a thousand."""
    decoder = GnmicDecoder()
    decoder.feed_text("garbage\n" * 2500, "junk.log")
    assert decoder.stats.dead_letter_count == 2500
    taken = decoder.stats.take_dead_letters()
    assert [d.line_no for d in taken] == list(range(1, 2501))
    assert decoder.stats.dead_letters == []
    decoder.feed_text("more garbage\n", "junk2.log")
    assert [d.source for d in decoder.stats.take_dead_letters()] == ["junk2.log"]
    assert decoder.stats.dead_letter_count == 2501


def test_stats_accumulate_across_feeds() -> None:
    decoder = GnmicDecoder()
    text = (FIXTURES / "cumulus_event.jsonl").read_text()
    decoder.feed_text(text, "a")
    decoder.feed_text(text, "b")
    assert (decoder.stats.messages, decoder.stats.values) == (12, 26)


@pytest.mark.parametrize("source", [b"leaf\xff1:57400", b"leaf\x001", b"leaf\x1b[31m1"])
def test_a_source_that_is_no_device_name_is_a_dead_letter_not_a_phantom_switch(
    source: bytes,
) -> None:
    good = (
        b'{"source":"leaf1:57400","timestamp":1700000000000000000,"updates":[{"Path":'
        b'"interfaces/interface[name=swp1]/state/counters/in-octets","values":'
        b'{"interfaces/interface/state/counters/in-octets":"7"}}]}'
    )
    bad = good.replace(
        b"leaf1:57400", source.replace(b"\x00", b"\\u0000").replace(b"\x1b", b"\\u001b")
    )
    decoder = GnmicDecoder()
    values = decoder.feed_text((good + b"\n" + bad + b"\n").decode(errors="replace"), "f.json")
    assert {v.device for v in values} == {"leaf1"}
    (dead,) = decoder.stats.take_dead_letters()
    assert "is not a device name" in dead.reason


@pytest.mark.parametrize(
    "timestamp", [str(4_291_747_200 * 10**9), "9" * 25, str(2**64), "1" + "0" * 200]
)
def test_a_timestamp_outside_the_times_railtrace_holds_is_a_dead_letter(timestamp: str) -> None:
    message = (
        '{"source":"leaf1","timestamp":' + timestamp + ',"updates":[{"Path":'
        '"interfaces/interface[name=swp1]/state/counters/in-octets","values":'
        '{"interfaces/interface/state/counters/in-octets":"7"}}]}'
    )
    decoder = GnmicDecoder()
    assert decoder.feed_text(message + "\n", "f.json") == []
    (dead,) = decoder.stats.take_dead_letters()
    assert "timestamp" in dead.reason


def _counters(value: str) -> str:
    return (
        '{"source":"leaf1","timestamp":1700000000000000000,"updates":[{"Path":'
        '"interfaces/interface[name=swp1]/state/counters","values":'
        '{"interfaces/interface/state/counters":' + value + "}}]}"
    )


@pytest.mark.parametrize("levels", [100, 300, 1000])  # orjson itself refuses over 1024
def test_a_message_nested_beyond_any_model_is_counted_not_a_crash(levels: int) -> None:
    """Fuzzed: past ~255 levels orjson cannot dump the dead letter, past ~990 flattening
    recursed out of the interpreter's stack."""
    nested = '{"a":' * levels + "1" + "}" * levels
    good = _counters('{"in-octets":"7",' + '"deep":' + nested + "}")
    decoder = GnmicDecoder()
    values = decoder.feed_text(
        good + "\n" + good.replace('"timestamp":1', '"timestamp":[' * 10) + "\n", "f.json"
    )
    assert [(v.metric, v.value) for v in values] == [(Metric.IN_OCTETS, 7)]
    assert (
        decoder.stats.dead_letter_count + decoder.stats.bad_values + decoder.stats.unknown_paths
        >= 1
    )


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ('"' + "9" * 5000 + '"', False),  # int() refuses over 4,300 digits: was a ValueError
        ('"18446744073709551615"', True),  # the largest 64-bit counter
        ('"18446744073709551616"', False),
        ('{"uintVal":{"uintVal":{"uintVal":"5"}}}', False),
        ('{"decimalVal":{"digits":"x","precision":1}}', False),
    ],
)
def test_a_counter_no_switch_could_send_is_a_bad_value_not_a_crash(value: str, kept: bool) -> None:
    decoder = GnmicDecoder()
    values = decoder.feed_text(_counters('{"in-octets":' + value + "}") + "\n", "f.json")
    assert bool(values) == kept
    assert decoder.stats.bad_values == (0 if kept else 1)


def test_a_timestamp_of_thousands_of_digits_is_a_dead_letter() -> None:
    message = _counters('{"in-octets":"7"}').replace("1700000000000000000", '"' + "1" * 5000 + '"')
    decoder = GnmicDecoder()
    assert decoder.feed_text(message + "\n", "f.json") == []
    assert "timestamp" in decoder.stats.take_dead_letters()[0].reason


def test_an_event_tag_nested_a_thousand_levels_names_nothing_and_crashes_nothing() -> None:
    """Reduced by the fuzzer (tests/fixtures/fuzz): naming the qualifier str()ed the tag."""
    text = Path(__file__).parent / "fixtures" / "fuzz" / "event-tag-nested-1000-levels.jsonl"
    decoder = GnmicDecoder()
    decoder.feed_text(text.read_text(), "f.jsonl")
    assert decoder.stats.messages == 1


def test_a_list_entry_keyed_by_a_subtree_is_a_bad_value_and_its_neighbours_are_kept() -> None:
    """Fuzzed (readers seed 7, replay index 13119): an interface entry whose `name` was a list
    nested a thousand levels recursed out of the stack while being written into its path."""
    nested = "[" * 1000 + '"swp9"' + "]" * 1000
    message = (
        '{"source":"leaf1","timestamp":1700000000000000000,"updates":[{"Path":"interfaces",'
        '"values":{"interfaces":{"interface":['
        '{"name":' + nested + ',"state":{"counters":{"in-octets":"7"}}},'
        '{"name":"swp1","state":{"counters":{"in-octets":"9"}}}]}}}]}'
    )
    decoder = GnmicDecoder()
    values = decoder.feed_text(message + "\n", "f.json")
    assert [(v.interface, v.value) for v in values] == [("swp1", 9)]
    assert decoder.stats.bad_values == 1


# -- stamps in another unit than ns, and paths gnmic could not print -------------------------------

_IN_OCTETS = (
    '"updates":[{"Path":"interfaces/interface[name=swp1]/state/counters/in-octets",'
    '"values":{"interfaces/interface/state/counters/in-octets":"7"}}]}'
)


@pytest.mark.parametrize(
    ("stamp", "unit"),
    [
        (1_700_000_000_123_456, "us"),
        (1_700_000_000_123, "ms"),
        (1_700_000_000, "s"),
    ],
)
def test_a_stamp_in_us_ms_or_s_is_read_in_its_unit_and_counted_not_filed_in_1970(
    stamp: int, unit: str
) -> None:
    """Read as ns, each of these is a moment of January 1970."""
    json_format = '{"source":"leaf1","timestamp":' + str(stamp) + "," + _IN_OCTETS
    event_format = orjson.dumps(
        {
            "timestamp": stamp,
            "tags": {"source": "leaf1", "interface_name": "swp1"},
            "values": {"/interfaces/interface/state/counters/in-octets": 7},
        }
    ).decode()
    decoder = GnmicDecoder()
    values = decoder.feed_text(json_format + "\n" + event_format + "\n", "f.json")
    factor = {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[unit]
    assert [(v.ts_ns, v.value) for v in values] == [(stamp * factor, 7)] * 2
    assert values[0].ts_ns // 10**9 == 1_700_000_000  # November 2023
    assert decoder.stats.retimed == {unit: 2}
    assert decoder.stats.dead_letter_count == 0


def test_a_stamp_of_a_clock_never_set_is_a_dead_letter_not_1970() -> None:
    """Three days after the epoch in ns: between the units' ranges, so no unit makes it a time
    railtrace can trust; it used to be stored as 1970-01-04."""
    decoder = GnmicDecoder()
    text = '{"source":"leaf1","timestamp":' + str(3 * 86_400 * S) + "," + _IN_OCTETS
    assert decoder.feed_text(text + "\n", "f.json") == []
    (dead,) = decoder.stats.take_dead_letters()
    assert "no time from 2000 to 2106" in dead.reason
    assert not decoder.stats.retimed


def test_a_leaf_gnmic_printed_without_a_path_is_counted_pathless_not_unknown() -> None:
    """gnmic prints a Path that has only the deprecated `element` field as "/" (and its values
    key as ""): openconfig's reference fake target sends nothing else. Nothing can name the
    leaf again, but it is counted as what it is rather than as a leaf railtrace has no use for.
    """
    message = {
        "source": "leaf1",
        "timestamp": T,
        "updates": [{"Path": "/", "values": {"": 1000}}],
    }
    stats = DecodeStats()
    assert decode_message(message, stats) == []
    assert (stats.pathless, stats.unknown_paths) == (1, 0)
