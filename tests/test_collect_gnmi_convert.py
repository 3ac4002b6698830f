"""TypedValue -> JSON and Path -> xpath as gnmic's json format writes them (no network)."""

from __future__ import annotations

import math

import orjson
import pytest

from railtrace.collectors.gnmi.convert import (
    BadValueError,
    convert_notification,
    typed_value,
)
from railtrace.collectors.gnmi.xpaths import from_xpath, to_xpath
from railtrace.collectors.gnmicjson import rfc3339
from railtrace.proto.gen import gnmi_pb2
from railtrace.streams.records import Metric
from railtrace.streams.telemetry import decode_message

TV = gnmi_pb2.TypedValue


@pytest.mark.parametrize(
    ("val", "expected"),
    [
        (TV(uint_val=2**64 - 1), 2**64 - 1),
        (TV(int_val=-5), -5),
        (TV(string_val="UP"), "UP"),
        (TV(bool_val=True), True),
        (TV(double_val=-3.5), -3.5),
        (TV(json_ietf_val=b'{"a:b": "1"}'), {"a:b": "1"}),
        (TV(bytes_val=b"\x00\x01"), "AAE="),
        (TV(decimal_val=gnmi_pb2.Decimal64(digits=-523, precision=2)), {"digits": -523,
                                                                        "precision": 2}),
        (TV(leaflist_val=gnmi_pb2.ScalarArray(element=[TV(uint_val=1), TV(string_val="x")])),
         [1, "x"]),
    ],
)  # fmt: skip
def test_typed_values(val: object, expected: object) -> None:
    assert typed_value(val) == expected


@pytest.mark.parametrize(
    "val", [TV(), TV(double_val=math.nan), TV(json_val=b"{"), TV(double_val=math.inf)]
)
def test_bad_typed_values(val: object) -> None:
    with pytest.raises(BadValueError):
        typed_value(val)


def test_xpath_round_trip_and_gnmic_spelling() -> None:
    path = from_xpath("/interfaces/interface[name=Ethernet1/1]/state/counters", origin="openconfig")
    assert to_xpath(path) == "openconfig:/interfaces/interface[name=Ethernet1/1]/state/counters"
    assert to_xpath(path, keys=False) == "interfaces/interface/state/counters"
    multi = from_xpath("a/b[z=1][k=2]/c")
    assert to_xpath(multi) == "a/b[k=2][z=1]/c"  # several keys sorted by name
    assert rfc3339(1_700_000_000_500_000_000) == "2023-11-14T22:13:20.5Z"


def test_notification_with_timestamp_prefix_target_and_legacy_value() -> None:
    note = gnmi_pb2.Notification(
        timestamp=1_700_000_000_000_000_000,
        prefix=from_xpath("interfaces/interface[name=swp1]", target="COUNTERS_DB"),
        update=[
            gnmi_pb2.Update(path=from_xpath("state/counters/in-octets"), val=TV(uint_val=42)),
            gnmi_pb2.Update(
                path=from_xpath("state/counters/out-octets"),
                value=gnmi_pb2.Value(value=b"7", type=gnmi_pb2.JSON_IETF),
            ),
        ],
        delete=[from_xpath("state/old")],
    )
    out = convert_notification(note, source="leaf1", subscription="s", received_ns=1)
    assert out is not None and out.message is not None and not out.bad_updates
    msg = out.message
    assert msg["target"] == "COUNTERS_DB" and msg["deletes"] == ["state/old"]
    assert msg["updates"][0] == {
        "Path": "state/counters/in-octets",
        "values": {"state/counters/in-octets": 42},
    }
    got = decode_message(orjson.loads(orjson.dumps(msg)))
    assert {(v.metric, v.value) for v in got} == {(Metric.IN_OCTETS, 42), (Metric.OUT_OCTETS, 7)}
    assert {v.device for v in got} == {"leaf1"} and out.state_change is False


def test_notification_without_timestamp_takes_receive_time_and_all_bad_yields_none_message() -> (
    None
):
    note = gnmi_pb2.Notification(update=[gnmi_pb2.Update(path=from_xpath("a/b"))])
    out = convert_notification(note, source="l", subscription="s", received_ns=99)
    assert out is not None and out.message is None and out.ts_ns == 99
    assert out.bad_updates == ["a/b: update without a value"]
    assert convert_notification(gnmi_pb2.Notification(), source="l", subscription="s",
                                received_ns=1) is None  # fmt: skip


def _element_path(*elements: str) -> object:
    return gnmi_pb2.Path(element=list(elements))


def test_deprecated_element_paths_convert_exactly_as_the_same_elem_paths() -> None:
    """openconfig's reference fake target sends only `Path.element`, keys written into the
    strings; every update of it was counted malformed ("update without a path")."""
    stamp = 1_700_000_000_000_000_000

    def note(path: object, prefix: object, gone: object) -> object:
        return gnmi_pb2.Notification(
            timestamp=stamp,
            prefix=prefix,
            update=[gnmi_pb2.Update(path=path, val=TV(uint_val=42))],
            delete=[gone],
        )

    old = note(
        _element_path("state", "counters", "in-octets"),
        _element_path("interfaces", "interface[name=Ethernet1/1]"),
        _element_path("lldp", "interfaces", "interface[name=Ethernet1/1]"),
    )
    new = note(
        from_xpath("state/counters/in-octets"),
        from_xpath("interfaces/interface[name=Ethernet1/1]"),
        from_xpath("lldp/interfaces/interface[name=Ethernet1/1]"),
    )
    got, want = (
        convert_notification(n, source="leaf1", subscription="s", received_ns=1) for n in (old, new)
    )
    assert got is not None and want is not None
    assert got == want and not got.bad_updates and got.good_updates == 1
    assert got.state_change  # the LLDP delete, read from its element path
    assert got.message is not None
    assert got.message["prefix"] == "interfaces/interface[name=Ethernet1/1]"
    values = decode_message(orjson.loads(orjson.dumps(got.message)))
    assert [(v.interface, v.metric, v.value) for v in values] == [
        ("Ethernet1/1", Metric.IN_OCTETS, 42)
    ]


def test_an_element_path_with_every_key_written_in_is_read_with_its_keys() -> None:
    full = _element_path(
        "interfaces", "interface[name=Ethernet2]", "state", "counters", "in-fcs-errors"
    )
    note = gnmi_pb2.Notification(
        timestamp=1_700_000_000_000_000_000, update=[gnmi_pb2.Update(path=full, val=TV(int_val=3))]
    )
    out = convert_notification(note, source="leaf1", subscription="s", received_ns=1)
    assert out is not None and out.message is not None
    assert out.message["updates"] == [
        {
            "Path": "interfaces/interface[name=Ethernet2]/state/counters/in-fcs-errors",
            "values": {"interfaces/interface/state/counters/in-fcs-errors": 3},
        }
    ]


@pytest.mark.parametrize(
    ("stamp", "unit"),
    [
        (1_700_000_000_123_456_789, "ns"),
        (1_700_000_000_123_456, "us"),
        (1_700_000_000_123, "ms"),
        (1_700_000_000, "s"),
    ],
)
def test_a_timestamp_in_us_ms_or_s_is_read_in_its_unit(stamp: int, unit: str) -> None:
    note = gnmi_pb2.Notification(
        timestamp=stamp,
        update=[gnmi_pb2.Update(path=from_xpath("a/b"), val=TV(uint_val=1))],
    )
    out = convert_notification(note, source="l", subscription="s", received_ns=5)
    assert out is not None and out.message is not None and out.stamp == unit
    factor = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}[unit]
    assert out.ts_ns == out.message["timestamp"] == stamp * factor
    assert out.ts_ns // 10**9 == 1_700_000_000  # November 2023, not January 1970


@pytest.mark.parametrize("stamp", [3 * 86_400 * 10**9, 12_345, -1_700_000_000_000_000_000])
def test_a_timestamp_that_is_no_time_in_any_unit_refuses_the_notification(stamp: int) -> None:
    note = gnmi_pb2.Notification(
        timestamp=stamp,
        update=[
            gnmi_pb2.Update(path=from_xpath("a/b"), val=TV(uint_val=1)),
            gnmi_pb2.Update(path=from_xpath("a/c"), val=TV(uint_val=2)),
        ],
    )
    out = convert_notification(note, source="l", subscription="s", received_ns=5)
    assert out is not None and out.message is None and out.stamp == "rejected"
    assert len(out.bad_updates) == 2
    assert "no time from 2000 to 2106" in out.bad_updates[0]
