"""The SNMP collector's message building (pure): what the pipeline's decode_snmp reads."""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError
from snmp_support import neighbours_as_read

from railtrace.collectors.snmp import SnmpCollectorConfig, SnmpTarget
from railtrace.collectors.snmp.config import TrapUser
from railtrace.collectors.snmp.messages import (
    LldpNeighbour,
    OperStatusMemory,
    TrapError,
    UnknownTrapError,
    build_poll,
    build_trap,
)
from railtrace.streams.records import Metric
from railtrace.streams.telemetry.snmp import decode_snmp

TS = 1_700_000_000_000_000_000

# A walk as an Arista-like leaf answers it: swp names, one port without ifName, LLDP.
WALK: dict[str, int | str] = {
    "1.3.6.1.2.1.31.1.1.1.1.1": "Ethernet1",
    "1.3.6.1.2.1.31.1.1.1.1.2": "Ethernet2",
    "1.3.6.1.2.1.2.2.1.2.1": "Ethernet1 description",
    "1.3.6.1.2.1.2.2.1.2.3": "Management1",  # ifDescr only: the fallback
    "1.3.6.1.2.1.31.1.1.1.6.1": 123456789012,
    "1.3.6.1.2.1.31.1.1.1.10.1": 42,
    "1.3.6.1.2.1.2.2.1.8.1": 1,
    "1.3.6.1.2.1.2.2.1.8.2": 2,
    "1.3.6.1.2.1.2.2.1.8.3": 1,
    "1.3.6.1.2.1.2.2.1.14.9": 7,  # an ifIndex no name column knows
    "1.3.6.1.2.1.10.7.2.1.3.1": 3,  # dot3StatsFCSErrors
    "1.3.6.1.2.1.10.7.10.1.3.1": 11,  # dot3InPauseFrames
    "1.3.6.1.2.1.10.7.10.1.4.1": 12,  # dot3OutPauseFrames
    # lldpLocPortTable: port 1 by interfaceName, port 2 by MAC (so named from ifName).
    "1.0.8802.1.1.2.1.3.7.1.2.1": 5,
    "1.0.8802.1.1.2.1.3.7.1.3.1": "Ethernet1",
    "1.0.8802.1.1.2.1.3.7.1.2.2": 3,
    "1.0.8802.1.1.2.1.3.7.1.3.2": "00:1c:73:aa:bb:02",
    # lldpRemTable rows timeMark.localPort.index.
    "1.0.8802.1.1.2.1.4.1.1.9.0.1.1": "spine1",
    "1.0.8802.1.1.2.1.4.1.1.7.0.1.1": "Ethernet7",
    "1.0.8802.1.1.2.1.4.1.1.8.0.1.1": "to leaf1",
    "1.0.8802.1.1.2.1.4.1.1.9.0.2.4": "spine2",
    "1.0.8802.1.1.2.1.4.1.1.7.0.2.4": "Ethernet8",
}


def test_poll_message_decodes_into_every_mapped_column() -> None:
    message = orjson.loads(orjson.dumps(build_poll("leaf1", TS, WALK)))
    assert message["kind"] == "poll"
    assert message["ifnames"] == {
        "1": "Ethernet1",
        "2": "Ethernet2",
        "3": "Management1",
        "9": "9",
    }
    values = {(v.interface, v.metric, v.qualifier): v.value for v in decode_snmp(message)}
    assert values == {
        ("Ethernet1", Metric.IN_OCTETS, ""): 123456789012,
        ("Ethernet1", Metric.OUT_OCTETS, ""): 42,
        ("Ethernet1", Metric.OPER_STATUS, ""): "up",
        ("Ethernet2", Metric.OPER_STATUS, ""): "down",
        ("Management1", Metric.OPER_STATUS, ""): "up",
        ("9", Metric.IN_ERRORS, ""): 7,
        ("Ethernet1", Metric.IN_FCS_ERRORS, ""): 3,
        ("Ethernet1", Metric.PFC_RX_PAUSE, "link"): 11,
        ("Ethernet1", Metric.PFC_TX_PAUSE, "link"): 12,
    }
    assert all(v.device == "leaf1" and v.ts_ns == TS for v in decode_snmp(message))


def test_poll_message_carries_lldp_neighbours() -> None:
    message = orjson.loads(orjson.dumps(build_poll("leaf1", TS, WALK)))
    assert neighbours_as_read(message) == [
        LldpNeighbour("Ethernet1", "spine1", "Ethernet7", "to leaf1"),
        LldpNeighbour("Ethernet2", "spine2", "Ethernet8", ""),
    ]


def test_non_integer_counters_are_left_out_not_sent_to_break_the_decoder() -> None:
    message = build_poll("leaf1", TS, {**WALK, "1.3.6.1.2.1.2.2.1.13.1": "noSuchInstance"})
    assert "1.3.6.1.2.1.2.2.1.13.1" not in message["varbinds"]
    decode_snmp(message)


LINK_DOWN: dict[str, int | str] = {
    "1.3.6.1.2.1.1.3.0": 1234,
    "1.3.6.1.6.3.1.1.4.1.0": "1.3.6.1.6.3.1.1.5.3",
    "1.3.6.1.2.1.2.2.1.1.2": 2,
    "1.3.6.1.2.1.2.2.1.7.2": 1,
    "1.3.6.1.2.1.2.2.1.8.2": 2,
}


def test_link_down_trap_named_from_the_last_poll() -> None:
    message = build_trap("leaf1", TS, LINK_DOWN, {"2": "Ethernet2"})
    assert message["kind"] == "trap"
    [value] = decode_snmp(orjson.loads(orjson.dumps(message)))
    assert (value.interface, value.metric, value.value) == (
        "Ethernet2",
        Metric.OPER_STATUS,
        "down",
    )


def test_link_trap_from_an_unpolled_device_names_the_interface_by_index() -> None:
    [value] = decode_snmp(build_trap("10.0.0.9", TS, LINK_DOWN, {}))
    assert (value.device, value.interface, value.value) == ("10.0.0.9", "2", "down")


def test_link_up_without_oper_status_takes_it_from_the_trap_type() -> None:
    varbinds: dict[str, int | str] = {
        "1.3.6.1.6.3.1.1.4.1.0": "1.3.6.1.6.3.1.1.5.4",
        "1.3.6.1.2.1.2.2.1.1.5": 5,
    }
    [value] = decode_snmp(build_trap("leaf1", TS, varbinds, {"5": "Ethernet5"}))
    assert (value.interface, value.value) == ("Ethernet5", "up")


@pytest.mark.parametrize(
    ("varbinds", "error"),
    [
        ({"1.3.6.1.6.3.1.1.4.1.0": "1.3.6.1.4.1.30065.0.1"}, UnknownTrapError),
        ({"1.3.6.1.2.1.1.3.0": 5}, TrapError),
        ({"1.3.6.1.6.3.1.1.4.1.0": "1.3.6.1.6.3.1.1.5.3"}, TrapError),
        (
            {"1.3.6.1.6.3.1.1.4.1.0": "1.3.6.1.6.3.1.1.5.3", "1.3.6.1.2.1.2.2.1.8.2": "down"},
            TrapError,
        ),
    ],
    ids=["unknown-trap", "no-trap-oid", "no-interface", "text-status"],
)
def test_unusable_traps_raise(varbinds: dict[str, int | str], error: type[Exception]) -> None:
    with pytest.raises(error):
        build_trap("leaf1", TS, varbinds, {})


def test_oper_status_change_between_polls_is_a_state_change() -> None:
    memory = OperStatusMemory()
    up = {"1.3.6.1.2.1.2.2.1.8.1": 1, "1.3.6.1.2.1.31.1.1.1.6.1": 5}
    down = {"1.3.6.1.2.1.2.2.1.8.1": 2, "1.3.6.1.2.1.31.1.1.1.6.1": 6}
    assert memory.changed("leaf1", up) is False  # nothing to compare with yet
    assert memory.changed("leaf1", {**up, "1.3.6.1.2.1.31.1.1.1.6.1": 9}) is False
    assert memory.changed("leaf2", down) is False  # per device
    assert memory.changed("leaf1", down) is True
    assert memory.changed("leaf1", {}) is False  # a walk without the column forgets nothing
    assert memory.changed("leaf1", up) is True


def test_config_rejects_incomplete_credentials() -> None:
    with pytest.raises(ValidationError, match="community"):
        SnmpTarget(name="leaf1", host="10.0.0.1")
    with pytest.raises(ValidationError, match="v3 credentials"):
        SnmpTarget(name="leaf1", host="10.0.0.1", version="3")
    with pytest.raises(ValidationError, match="8 characters"):
        SnmpTarget.model_validate(
            {"name": "l", "host": "h", "version": "3", "v3": {"user": "u", "auth_key": "short"}}
        )
    with pytest.raises(ValidationError, match="unique"):
        SnmpCollectorConfig.model_validate(
            {"targets": [{"name": "a", "host": "h", "community": "c"}] * 2}
        )
    with pytest.raises(ValidationError):
        TrapUser.model_validate({"user": "u", "auth_key": "12345678", "engine_id": "not-hex"})


def test_config_keeps_secrets_out_of_reprs() -> None:
    target = SnmpTarget.model_validate(
        {"name": "leaf1", "host": "10.0.0.1", "community": "s3cret-community"}
    )
    assert "s3cret" not in repr(target)
