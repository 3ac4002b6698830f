"""LLDP neighbours streamed from switches, checked against cables.csv as they change.

The messages are shaped as railtrace's gNMI collector writes them (gnmic's json format, one
update per leaf, ON_CHANGE) and as its SNMP poller writes them (the whole lldpRemTable per
poll); the stage that folds them is the worker's, without Kafka (the same stage runs against a
real broker in test_streaming_e2e.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson
import pytest

from railtrace.streams.records import CablingEvent
from railtrace.streams.telemetry.cabling import CablingWatch
from railtrace.streams.telemetry.gnmic import decode_with_lldp
from railtrace.streams.telemetry.lldp import LldpUpdate, snmp_neighbours
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.fabric import PortLinks
from railtrace.topology.lldp import PlanIndex
from railtrace.worker.device_states import BatchOutput, DeviceStates

S = 10**9
T0 = 1_780_000_000 * S
SETTLE = 30 * S
FABRIC = build_fabric(rail_optimized(64).plan)
PLAN = PlanIndex.of_fabric(FABRIC)
LEAF = "leaf-su01-r0"
PORTS = sorted(PLAN.ports[LEAF])


def _lldp_leaves(device: str, ts: int, iface: str, nbr: str, **leaves: str) -> dict[str, Any]:
    """One notification as the gNMI collector writes it: prefix at the neighbour entry."""
    return {
        "source": f"{device}:9339",
        "subscription-name": "lldp",
        "timestamp": ts,
        "prefix": f"lldp/interfaces/interface[name={iface}]/neighbors/neighbor[id={nbr}]",
        "updates": [
            {"Path": f"state/{leaf.replace('_', '-')}", "values": {f"state/{leaf}": value}}
            for leaf, value in leaves.items()
        ],
    }


def _delete(device: str, ts: int, iface: str, nbr: str) -> dict[str, Any]:
    return {
        "source": f"{device}:9339",
        "timestamp": ts,
        "prefix": "lldp/interfaces",
        "deletes": [f"interface[name={iface}]/neighbors/neighbor[id={nbr}]"],
    }


def _updates(message: dict[str, Any]) -> list[LldpUpdate]:
    values, updates = decode_with_lldp(message)
    assert values == []
    return updates


def _as_planned(ts: int) -> list[dict[str, Any]]:
    """The whole table of LEAF as cabled per plan, one neighbour per notification."""
    out = []
    for n, port in enumerate(PORTS):
        far = PLAN.far_end[Endpoint(LEAF, port)]
        out.append(
            _lldp_leaves(LEAF, ts, port, str(n), system_name=far.device, port_id=far.interface)
        )
    return out


def _feed(watch: CablingWatch, messages: list[dict[str, Any]]) -> list[CablingEvent]:
    events: list[CablingEvent] = []
    for m in messages:
        for u in _updates(m):
            events += watch.apply(u)
    return events


def _watch() -> CablingWatch:
    return CablingWatch(LEAF, PLAN, SETTLE)


def test_a_leaf_cabled_as_planned_reports_nothing_even_while_its_table_fills() -> None:
    watch = _watch()
    assert _feed(watch, _as_planned(T0)) == []
    assert watch.tick(T0 + 10 * SETTLE) == []
    assert watch.speaking


def test_a_neighbour_arriving_leaf_by_leaf_is_not_reported_half_known() -> None:
    """system-name comes in one notification, port-id in the next: no transient miswiring."""
    watch = _watch()
    first, *rest = _as_planned(T0)
    name_only = dict(first, updates=first["updates"][:1])
    port_only = dict(first, updates=first["updates"][1:], timestamp=T0 + 2 * S)
    assert _feed(watch, [name_only, *rest]) == []
    assert _feed(watch, [port_only]) == []
    assert watch.tick(T0 + 2 * SETTLE) == []


def test_two_nics_swapped_between_ports_are_reported_once_after_settling() -> None:
    watch = _watch()
    table = _as_planned(T0)
    a, b = table[0], table[1]
    far_a, far_b = PLAN.far_end[Endpoint(LEAF, PORTS[0])], PLAN.far_end[Endpoint(LEAF, PORTS[1])]
    table[0] = _lldp_leaves(
        LEAF, T0, PORTS[0], "0", system_name=far_b.device, port_id=far_b.interface
    )
    table[1] = _lldp_leaves(
        LEAF, T0, PORTS[1], "1", system_name=far_a.device, port_id=far_a.interface
    )
    assert a != table[0] and b != table[1]
    assert _feed(watch, table) == []  # not settled yet
    assert watch.tick(T0 + SETTLE - 1) == []
    events = watch.tick(T0 + SETTLE)
    assert [(e.interface, e.kind, e.planned, e.seen) for e in events] == [
        (PORTS[0], CablingKind.MISWIRED, far_a, far_b),
        (PORTS[1], CablingKind.MISWIRED, far_b, far_a),
    ]
    assert events[0].detail == (
        f"{LEAF}:{PORTS[0]} should reach {far_a.device}:{far_a.interface} "
        f"but LLDP sees {far_b.device}:{far_b.interface}"
    )
    assert watch.tick(T0 + 3 * SETTLE) == []  # reported once


def test_a_neighbour_that_goes_away_is_missing_and_resolved_when_it_returns() -> None:
    watch = _watch()
    _feed(watch, _as_planned(T0))
    assert _feed(watch, [_delete(LEAF, T0 + 5 * S, PORTS[3], "3")]) == []
    (missing,) = watch.tick(T0 + 5 * S + SETTLE)
    far = PLAN.far_end[Endpoint(LEAF, PORTS[3])]
    assert (missing.interface, missing.kind, missing.planned, missing.seen) == (
        PORTS[3],
        CablingKind.MISSING,
        far,
        None,
    )
    back = _lldp_leaves(
        LEAF, T0 + 100 * S, PORTS[3], "9", system_name=far.device, port_id=far.interface
    )
    (resolved,) = _feed(watch, [back])
    assert (resolved.interface, resolved.kind, resolved.ts_ns) == (
        PORTS[3],
        CablingKind.RESOLVED,
        T0 + 100 * S,
    )


def test_a_difference_that_clears_before_settling_is_never_reported() -> None:
    watch = _watch()
    _feed(watch, _as_planned(T0))
    _feed(watch, [_delete(LEAF, T0 + S, PORTS[0], "0")])
    far = PLAN.far_end[Endpoint(LEAF, PORTS[0])]
    again = _lldp_leaves(
        LEAF, T0 + 2 * S, PORTS[0], "0", system_name=far.device, port_id=far.interface
    )
    assert _feed(watch, [again]) == []
    assert watch.tick(T0 + 10 * SETTLE) == []


def test_a_switch_that_never_showed_a_neighbour_has_no_missing_ports() -> None:
    watch = _watch()
    empty = {"source": f"{LEAF}:9339", "timestamp": T0, "prefix": "lldp/interfaces",
             "deletes": ["interface[name=swp1]"]}  # fmt: skip
    assert _feed(watch, [empty]) == []
    assert watch.tick(T0 + 10 * SETTLE) == []
    assert not watch.speaking


def test_an_fqdn_and_a_mac_port_id_resolve_to_the_plans_names_through_the_description() -> None:
    watch = _watch()
    table = _as_planned(T0)
    far = PLAN.far_end[Endpoint(LEAF, PORTS[0])]
    table[0] = _lldp_leaves(
        LEAF,
        T0,
        PORTS[0],
        "0",
        system_name=f"{far.device}.dc1.example.net",
        port_id="7c:fe:90:12:34:56",
        port_description=far.interface,
    )
    _feed(watch, table)
    assert watch.tick(T0 + SETTLE) == []


def test_a_neighbour_on_an_unplanned_port_is_unexpected() -> None:
    watch = _watch()
    table = [
        *_as_planned(T0),
        _lldp_leaves(LEAF, T0, "swp99", "99", system_name="lab-01", port_id="eth0"),
    ]
    _feed(watch, table)
    (event,) = watch.tick(T0 + SETTLE)
    assert (event.interface, event.kind, event.planned, event.seen) == (
        "swp99",
        CablingKind.UNEXPECTED,
        None,
        Endpoint("lab-01", "eth0"),
    )


def test_the_event_format_with_tags_and_deletes_reads_the_same_neighbours() -> None:
    """gnmic's `event` format: key-less value paths, list keys in tags."""
    far = PLAN.far_end[Endpoint(LEAF, PORTS[0])]
    tags = {"source": f"{LEAF}:9339", "interface_name": PORTS[0], "neighbor_id": "0"}
    event = {
        "name": "lldp",
        "timestamp": T0,
        "tags": tags,
        "values": {
            "/lldp/interfaces/interface/neighbors/neighbor/state/system-name": far.device,
            "/lldp/interfaces/interface/neighbors/neighbor/state/port-id": far.interface,
        },
    }
    (update,) = _updates(event)
    assert [(x.interface, x.neighbour, x.leaf, x.value) for x in update.leaves] == [
        (PORTS[0], "0", "system-name", far.device),
        (PORTS[0], "0", "port-id", far.interface),
    ]
    gone = {"name": "lldp", "timestamp": T0 + S, "tags": tags,
            "deletes": ["/lldp/interfaces/interface/neighbors/neighbor"]}  # fmt: skip
    (update,) = _updates(gone)
    assert update.deletes == [(PORTS[0], "0")]


def test_counters_in_the_same_notification_still_decode_beside_the_neighbours() -> None:
    far = PLAN.far_end[Endpoint(LEAF, PORTS[0])]
    message = {
        "source": f"{LEAF}:9339",
        "timestamp": T0,
        "updates": [
            {
                "Path": f"interfaces/interface[name={PORTS[0]}]/state/counters/in-octets",
                "values": {"interfaces/interface/state/counters/in-octets": "1000"},
            },
            {
                "Path": f"lldp/interfaces/interface[name={PORTS[0]}]/neighbors/neighbor[id=0]"
                "/state/system-name",
                "values": {
                    "lldp/interfaces/interface/neighbors/neighbor/state/system-name": far.device
                },
            },
        ],
    }
    values, (update,) = decode_with_lldp(message)
    assert [(v.interface, v.value) for v in values] == [(PORTS[0], 1000)]
    assert update.leaves[0].value == far.device


def test_an_snmp_poll_replaces_the_table_so_a_vanished_row_is_missing() -> None:
    watch = _watch()
    rows = [
        {"local_port": p, "remote_device": PLAN.far_end[Endpoint(LEAF, p)].device,
         "remote_port": PLAN.far_end[Endpoint(LEAF, p)].interface, "remote_port_desc": ""}
        for p in PORTS
    ]  # fmt: skip
    first = snmp_neighbours({"device": LEAF, "ts_ns": T0, "lldp": rows})
    assert first is not None
    assert watch.apply(first) == []
    second = snmp_neighbours({"device": LEAF, "ts_ns": T0 + 60 * S, "lldp": rows[1:]})
    assert second is not None
    (event,) = watch.apply(second) + watch.tick(T0 + 60 * S + SETTLE)
    assert (event.interface, event.kind) == (PORTS[0], CablingKind.MISSING)
    assert snmp_neighbours({"device": LEAF, "ts_ns": T0, "kind": "trap"}) is None


def test_a_restored_watch_settles_what_was_pending_when_it_was_saved() -> None:
    watch = _watch()
    _feed(watch, _as_planned(T0))
    _feed(watch, [_delete(LEAF, T0 + S, PORTS[2], "2")])
    snap = orjson.loads(orjson.dumps(watch.snapshot()))
    restored = CablingWatch.restore(snap, LEAF, PLAN, SETTLE)
    assert restored.snapshot() == watch.snapshot()
    (event,) = restored.tick(T0 + S + SETTLE)
    assert (event.interface, event.kind) == (PORTS[2], CablingKind.MISSING)
    assert CablingWatch.restore(restored.snapshot(), LEAF, PLAN, SETTLE).tick(T0 + 9 * SETTLE) == []


# -- the worker's telemetry stage -----------------------------------------------------------


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _counters(ts: int) -> dict[str, Any]:
    return {
        "source": f"{LEAF}:9339",
        "timestamp": ts,
        "prefix": f"interfaces/interface[name={PORTS[0]}]",
        "updates": [
            {
                "Path": "state/counters/in-octets",
                "values": {"state/counters/in-octets": str(ts // S)},
            }
        ],
    }


def _records(messages: list[dict[str, Any]], start: int = 0) -> list[Record]:
    return [
        Record("raw.gnmi", 0, start + i, LEAF.encode(), orjson.dumps(m))
        for i, m in enumerate(messages)
    ]


def _fold(states: DeviceStates, records: list[Record]) -> list[CablingEvent]:
    out = BatchOutput()
    for r in records:
        states.fold("gnmi", r, out)
    return [e for events in out.cabling.values() for e in events]


@pytest.fixture
def states() -> DeviceStates:
    return DeviceStates(PortLinks(FABRIC), 4, PLAN, lldp_settle_s=SETTLE / S)


def test_the_stage_reports_a_swap_once_the_switchs_own_clock_has_moved_on(
    states: DeviceStates,
) -> None:
    table = _as_planned(T0)
    far = PLAN.far_end[Endpoint(LEAF, PORTS[1])]
    table[0] = _lldp_leaves(LEAF, T0, PORTS[0], "0", system_name=far.device, port_id=far.interface)
    messages = [*table, *(_counters(T0 + k * 10 * S) for k in range(1, 5))]
    events = _fold(states, _records(messages))
    assert [(e.device, e.interface, e.kind, e.ts_ns) for e in events] == [
        (LEAF, PORTS[0], CablingKind.MISWIRED, T0 + 30 * S)
    ]


def test_the_stage_checkpoint_carries_the_cabling_watch_across_a_restart(
    states: DeviceStates,
) -> None:
    messages = [*_as_planned(T0), _delete(LEAF, T0 + S, PORTS[4], "4")]
    assert _fold(states, _records(messages)) == []
    ((key, partition, value),) = states.checkpoint()
    assert orjson.loads(value)["cabling"]["device"] == LEAF
    restarted = DeviceStates(PortLinks(FABRIC), 4, PLAN, lldp_settle_s=SETTLE / S)
    restarted.saved[key] = (partition, value)
    later = _records([_counters(T0 + 40 * S)], start=len(messages))
    events = _fold(restarted, later)
    assert [(e.interface, e.kind) for e in events] == [(PORTS[4], CablingKind.MISSING)]
    # a redelivered message from before the checkpoint changes nothing
    assert _fold(restarted, _records(messages)) == []


def test_a_device_without_lldp_keeps_a_checkpoint_without_cabling(states: DeviceStates) -> None:
    _fold(states, _records([_counters(T0), _counters(T0 + S)]))
    ((_, _, value),) = states.checkpoint()
    assert "cabling" not in orjson.loads(value)
