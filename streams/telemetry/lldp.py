"""What a raw telemetry message says about a switch's LLDP neighbours.

gNMI carries openconfig-lldp leaf by leaf, ON_CHANGE, so a neighbour arrives as a few updates
under `/lldp/interfaces/interface[name]/neighbors/neighbor[id]/state/...` (maybe in separate
notifications) and leaves as a delete of its `neighbor[id]` entry (or of the whole interface).
An SNMP poll instead carries the device's whole lldpRemTable at once, so it replaces what was
known. Both become an `LldpUpdate`; `railtrace.topology.lldp` keeps the table they build and
checks it against the cabling plan.

The gNMI leaves are picked up by `leaves.Leaves` on its way through a notification, so a
message is walked once whether it carries counters, neighbours or both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .xpath import parse_xpath

#: Neighbour leaves railtrace reads; the rest (ttl, age, capabilities) say nothing of cabling.
NEIGHBOUR_LEAVES = frozenset({"system-name", "port-id", "port-description", "chassis-id"})
_NEIGHBOUR_STATE = "lldp/interfaces/interface/neighbors/neighbor/state"
_INTERFACES = "lldp/interfaces"


@dataclass(frozen=True, slots=True)
class LldpLeaf:
    """One leaf of one neighbour: on `interface`, neighbour `neighbour` has `leaf` = `value`."""

    interface: str
    neighbour: str
    leaf: str
    value: str


@dataclass(slots=True)
class LldpUpdate:
    """One message's worth of LLDP news from `device`.

    `deletes` name what went away: (interface, neighbour id), either None for "all" (a delete
    of an interface entry drops all its neighbours). `replace` says the update is the device's
    whole table (an SNMP poll), so anything not in it is gone.
    """

    device: str
    ts_ns: int
    leaves: list[LldpLeaf] = field(default_factory=list)
    deletes: list[tuple[str | None, str | None]] = field(default_factory=list)
    replace: bool = False


def neighbour_leaf(path: str, value: Any, tags: dict[str, Any]) -> LldpLeaf | None:
    """The LldpLeaf at `path` (a full path, keys in it or in the event's `tags`), or None when
    it is not a neighbour leaf railtrace reads.

    >>> neighbour_leaf("/lldp/interfaces/interface[name=swp1]/neighbors/neighbor[id=7]"
    ...                "/state/system-name", "hgx-01", {})
    LldpLeaf(interface='swp1', neighbour='7', leaf='system-name', value='hgx-01')
    """
    parsed = parse_xpath(path)
    if parsed.parent != "state" or parsed.leaf not in NEIGHBOUR_LEAVES:
        return None
    if not parsed.key.startswith(_NEIGHBOUR_STATE):
        return None
    keys = {**tags, **dict(parsed.tags)}
    interface, neighbour = keys.get("interface_name"), keys.get("neighbor_id")
    if not isinstance(interface, str) or not interface or neighbour is None:
        return None
    if not isinstance(value, str | int):
        return None
    return LldpLeaf(interface, str(neighbour), parsed.leaf, str(value))


def deleted_neighbours(path: str, tags: dict[str, Any]) -> tuple[str | None, str | None] | None:
    """What a gNMI delete of `path` removes, as (interface, neighbour id), None for "all";
    None when the path is not under `/lldp/interfaces`.

    >>> deleted_neighbours("/lldp/interfaces/interface[name=swp1]/neighbors/neighbor[id=7]", {})
    ('swp1', '7')
    >>> deleted_neighbours("/lldp/interfaces/interface[name=swp1]", {})
    ('swp1', None)
    """
    parsed = parse_xpath(path)
    if not parsed.key.startswith(_INTERFACES):
        return None
    keys = {**tags, **dict(parsed.tags)}
    if "state" in parsed.key.split("/"):  # a single leaf went away, not the neighbour
        return None
    interface = keys.get("interface_name")
    neighbour = keys.get("neighbor_id")
    return (
        interface if isinstance(interface, str) else None,
        None if neighbour is None else str(neighbour),
    )


def snmp_neighbours(message: dict[str, Any]) -> LldpUpdate | None:
    """The lldpRemTable a poll message carries (as the SNMP collector writes it: `"lldp"`, a
    list of {local_port, remote_device, remote_port, remote_port_desc}), as a replacing
    update; None for a message without one (traps, or pollers older than LLDP support).

    >>> u = snmp_neighbours({"device": "leaf1", "ts_ns": 5, "lldp": [{"local_port": "swp1",
    ...     "remote_device": "hgx-01", "remote_port": "mlx5_0", "remote_port_desc": ""}]})
    >>> [(x.interface, x.leaf, x.value) for x in u.leaves], u.replace
    ([('swp1', 'system-name', 'hgx-01'), ('swp1', 'port-id', 'mlx5_0')], True)
    """
    rows = message.get("lldp")
    device, ts = message.get("device"), message.get("ts_ns")
    if not isinstance(rows, list) or not isinstance(device, str) or not isinstance(ts, int):
        return None
    update = LldpUpdate(device, ts, replace=True)
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("local_port"), str):
            continue
        local = row["local_port"]
        neighbour = f"{row.get('remote_device', '')}|{row.get('remote_port', '')}"
        for leaf, column in (
            ("system-name", "remote_device"),
            ("port-id", "remote_port"),
            ("port-description", "remote_port_desc"),
        ):
            value = row.get(column)
            if isinstance(value, str) and value:
                update.leaves.append(LldpLeaf(local, neighbour, leaf, value))
    return update
