"""Raw SNMP messages from walked or received varbinds: pure, no I/O, no pysnmp.

The format is the one `railtrace.streams.telemetry.snmp.decode_snmp` reads:
`{"device", "ts_ns", "kind", "ifnames": {ifIndex: ifName}, "varbinds": {OID: value}}`. Polls
also carry `"lldp"`, the device's LLDP neighbours (decode_snmp reads only the keys it knows),
for the topology check. Values are already plain: int, or str for strings and OIDs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from railtrace.collectors.snmp import oids

Scalar = int | str


class TrapError(ValueError):
    """A notification the collector cannot turn into a message; counted, never fatal."""


class UnknownTrapError(TrapError):
    """A well-formed notification railtrace has no use for (not linkDown/linkUp)."""


class LldpNeighbour(NamedTuple):
    """One LLDP adjacency as the local device sees it."""

    local_port: str
    remote_device: str
    remote_port: str
    remote_port_desc: str


def _split(oid: str, column: str) -> str | None:
    """The index part of `oid` when it is an instance of `column`."""
    prefix = column + "."
    return oid[len(prefix) :] if oid.startswith(prefix) else None


def _rows(walked: Mapping[str, Scalar], column: str) -> dict[str, Scalar]:
    return {i: v for oid, v in walked.items() if (i := _split(oid, column)) is not None}


def interface_names(walked: Mapping[str, Scalar]) -> dict[str, str]:
    """ifIndex -> ifName, falling back to ifDescr where ifName is missing or empty."""
    names = {i: str(v) for i, v in _rows(walked, oids.IF_DESCR).items() if str(v)}
    names.update({i: str(v) for i, v in _rows(walked, oids.IF_NAME).items() if str(v)})
    return names


def _counter_varbinds(walked: Mapping[str, Scalar]) -> dict[str, int]:
    # decode_snmp needs integers; a string here would be an agent bug (or noSuchInstance).
    return {
        oid: v
        for column in oids.COUNTER_COLUMNS
        for oid, v in walked.items()
        if _split(oid, column) is not None and isinstance(v, int)
    }


def _index_of(oid: str) -> str:
    return oid.rpartition(".")[2]


def _name_every_index(varbinds: Iterable[str], known: Mapping[str, str]) -> dict[str, str]:
    """ifnames covering every ifIndex in varbinds: decode_snmp rejects an unmapped one, and an
    interface named by its number is better than a dropped state change."""
    out: dict[str, str] = {}
    for oid in varbinds:
        index = _index_of(oid)
        out[index] = known.get(index, index)
    return out


_NAME_SUBTYPES = {1, 5, 7}  # LLDP port id subtypes interfaceAlias, interfaceName, local


def lldp_neighbours(
    walked: Mapping[str, Scalar], ifnames: Mapping[str, str]
) -> list[LldpNeighbour]:
    """The lldpRemTable rows, local ports named by lldpLocPortId (when it is a name), else by
    ifName of the same number (most NOSes number LLDP ports by ifIndex), else lldpLocPortDesc."""
    loc_subtype = _rows(walked, oids.LLDP_LOC_PORT_ID_SUBTYPE)
    loc_id = _rows(walked, oids.LLDP_LOC_PORT_ID)
    loc_desc = _rows(walked, oids.LLDP_LOC_PORT_DESC)

    def local_name(port_num: str) -> str:
        if loc_subtype.get(port_num) in _NAME_SUBTYPES and str(loc_id.get(port_num, "")):
            return str(loc_id[port_num])
        return ifnames.get(port_num) or str(loc_desc.get(port_num, "")) or port_num

    sys_names = _rows(walked, oids.LLDP_REM_SYS_NAME)
    port_ids = _rows(walked, oids.LLDP_REM_PORT_ID)
    port_descs = _rows(walked, oids.LLDP_REM_PORT_DESC)
    out = []
    for index in sorted(set(sys_names) | set(port_ids), key=_numeric_key):
        parts = index.split(".")
        if len(parts) != 3:  # timeMark.localPortNum.remIndex
            continue
        out.append(
            LldpNeighbour(
                local_port=local_name(parts[1]),
                remote_device=str(sys_names.get(index, "")),
                remote_port=str(port_ids.get(index, "")),
                remote_port_desc=str(port_descs.get(index, "")),
            )
        )
    return out


def _numeric_key(index: str) -> tuple[int, ...]:
    return tuple(int(p) for p in index.split(".") if p.isdigit())


def build_poll(device: str, ts_ns: int, walked: Mapping[str, Scalar]) -> dict[str, Any]:
    """The poll message of one walk of `oids.POLL_COLUMNS`."""
    names = interface_names(walked)
    varbinds = _counter_varbinds(walked)
    return {
        "device": device,
        "ts_ns": ts_ns,
        "kind": "poll",
        "ifnames": {**names, **_name_every_index(varbinds, names)},
        "varbinds": varbinds,
        "lldp": [n._asdict() for n in lldp_neighbours(walked, names)],
    }


def build_trap(
    device: str, ts_ns: int, varbinds: Mapping[str, Scalar], ifnames: Mapping[str, str]
) -> dict[str, Any]:
    """The trap message of a linkDown/linkUp; raises UnknownTrapError for other notifications and
    TrapError for a link trap that names no interface or has a non-integer status."""
    trap_oid = str(varbinds.get(oids.SNMP_TRAP_OID, "")).lstrip(".")
    if not trap_oid:
        raise TrapError("notification without snmpTrapOID.0")
    if trap_oid not in oids.LINK_TRAP_STATUS:
        raise UnknownTrapError(f"notification {trap_oid} is not linkDown/linkUp")
    out: dict[str, Scalar] = {oid.lstrip("."): v for oid, v in varbinds.items()}
    status = {o: v for o, v in out.items() if _split(o, oids.IF_OPER_STATUS) is not None}
    if any(not isinstance(v, int) for v in status.values()):
        raise TrapError(f"{trap_oid}: ifOperStatus is not an integer")
    if not status:
        # IF-MIB makes ifOperStatus mandatory in link traps, but some agents send only ifIndex:
        # the trap type itself then says which way the link went.
        indexes = [v for o, v in out.items() if _split(o, oids.IF_INDEX) is not None]
        if len(indexes) != 1 or not isinstance(indexes[0], int):
            raise TrapError(f"{trap_oid} names no interface (no ifIndex/ifOperStatus varbind)")
        out[f"{oids.IF_OPER_STATUS}.{indexes[0]}"] = oids.LINK_TRAP_STATUS[trap_oid]
    mapped = [o for o in out if any(_split(o, c) is not None for c in oids.COUNTER_COLUMNS)]
    return {
        "device": device,
        "ts_ns": ts_ns,
        "kind": "trap",
        "ifnames": _name_every_index(mapped, ifnames),
        "varbinds": out,
    }


class OperStatusMemory:
    """ifOperStatus per device and ifIndex as of the previous poll: a poll that changes one is
    a state change, which delivery keeps even when it must shed samples."""

    def __init__(self) -> None:
        self._last: dict[str, dict[str, int]] = {}

    def changed(self, device: str, varbinds: Mapping[str, Scalar]) -> bool:
        """Whether these varbinds change a status seen before; remembers them either way."""
        now = {
            i: v
            for oid, v in varbinds.items()
            if (i := _split(oid, oids.IF_OPER_STATUS)) is not None and isinstance(v, int)
        }
        if not now:  # nothing to compare (a walk that lost the column): keep what we knew
            return False
        before = self._last.get(device)
        self._last[device] = now
        if before is None:
            return False
        return any(before.get(i, v) != v for i, v in now.items())
