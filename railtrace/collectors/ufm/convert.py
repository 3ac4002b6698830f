"""UFM Telemetry samples turned into gnmic `json` messages carrying OpenConfig paths.

This is UFM data, not gNMI: InfiniBand port counters read from UFM Telemetry's Prometheus
endpoint, translated here, at the edge, into the one raw format the pipeline already reads
(gnmic `json`, the shape `railtrace.collectors.gnmi.convert` writes), under the OpenConfig
paths whose meaning matches (COUNTERS below; sources in deploy/collectors/README.md). So the
streaming worker decodes an InfiniBand switch like any gNMI one, and nothing downstream learns
UFM's names. A counter without an OpenConfig meaning is counted as not mapped, not forced
onto a path that means something else (PortXmitWaitExtended is IB credit wait, not PAUSE).

One message per switch per poll, keyed by the device name, stamped with UFM's own sample
time. Pure: the caller passes the previous oper-status of each port and gets the new ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..gnmicjson import header
from .names import SwitchNames, normalise_guid
from .prometheus import Sample

SUBSCRIPTION = "ufm"
PREFIX = "interfaces"

#: UFM counter -> (path under `interface[name=X]/`, multiplied by data_unit_bytes).
COUNTERS: dict[str, tuple[str, bool]] = {
    "PortXmitDataExtended": ("state/counters/out-octets", True),
    "PortRcvDataExtended": ("state/counters/in-octets", True),
    "PortXmitPktsExtended": ("state/counters/out-pkts", False),
    "PortRcvPktsExtended": ("state/counters/in-pkts", False),
    "PortRcvErrorsExtended": ("state/counters/in-errors", False),
    "PortXmitDiscardsExtended": ("state/counters/out-discards", False),
    "LinkDownedCounterExtended": ("state/counters/carrier-transitions", False),
    "SymbolErrorCounterExtended": ("ethernet/state/counters/in-symbol-error", False),
    "PortFECCorrectableBlockCounter": ("ethernet/state/counters/fec-corrected-blocks", False),
    "PortFECUncorrectableBlockCounter": ("ethernet/state/counters/fec-uncorrectable-blocks", False),
}
OPER_STATUS = "state/oper-status"

#: OpenConfig octet counters are counter64. PortXmitData/PortRcvData count 4-octet units in
#: 64 bits, so their octets can pass 2**64 (after 2**62 units: years at 400 Gb/s); they are
#: sent modulo 2**64, a counter64 wrap the rate stage already crosses.
COUNTER64 = 2**64

#: Port state fields, in order of preference, and the value meaning "up" for each: as the
#: IB PortInfo enum (PortState 4 = Active, PortPhysicalState 5 = LinkUp) or as a word.
STATE_FIELDS: dict[str, tuple[int, str]] = {
    "logical_state": (4, "active"),
    "phy_state": (5, "linkup"),
}


@dataclass(frozen=True, slots=True)
class SwitchMessage:
    """One switch's poll as a raw gNMI message, and what delivery needs to know of it."""

    device: str
    message: dict[str, Any]
    ts_ns: int
    state_change: bool


@dataclass
class Converted:
    """What one poll became. `unmapped_guids` are GUIDs the mapping file does not name;
    `not_mapped` counts samples of mapped switches with no OpenConfig meaning (or no port);
    `bad_values` samples whose value is no usable number or state; `status` the oper-status
    of every port that reported a state."""

    messages: list[SwitchMessage] = field(default_factory=list)
    unmapped_guids: set[str] = field(default_factory=set)
    unmapped_samples: int = 0
    not_mapped: int = 0
    bad_values: int = 0
    status: dict[tuple[str, str], str] = field(default_factory=dict)


def _counter(value: int | float | str) -> int | None:
    """A counter reading as an exact int; None for text, negatives, fractions, NaN."""
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


def _oper_status(name: str, value: int | float | str) -> str | None:
    code, word = STATE_FIELDS[name]
    if isinstance(value, str):
        return "UP" if value.lower() == word else "DOWN"
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return "UP" if value == code else "DOWN"


@dataclass
class _Switch:
    ts_ns: int = 0
    updates: dict[tuple[str, str], Any] = field(default_factory=dict)  # (iface, path) -> value
    states: dict[str, tuple[int, str]] = field(default_factory=dict)  # iface -> (rank, status)


def convert_poll(
    samples: Iterable[Sample],
    names: SwitchNames,
    *,
    data_unit_bytes: int,
    received_ns: int,
    last_status: Mapping[tuple[str, str], str],
) -> Converted:
    """The messages of one poll (module docstring). A switch's timestamp is the latest of its
    samples' (UFM stamps a sample in ms), `received_ns` when none carries one. A port's
    oper-status comes from `logical_state`, else `phy_state`; a switch's message is a state
    change when a port's status differs from `last_status` (a port seen first is not)."""
    out = Converted()
    switches: dict[str, _Switch] = {}
    for sample in samples:
        guid_text = sample.labels.get("node_guid") or sample.labels.get("source", "")
        try:
            guid = normalise_guid(guid_text)
        except ValueError:
            out.unmapped_samples += 1
            continue
        device = names.device(guid)
        if device is None:
            out.unmapped_guids.add(guid)
            out.unmapped_samples += 1
            continue
        port = sample.labels.get("port_num", "")
        mapped = COUNTERS.get(sample.name)
        if not port.isdecimal() or (mapped is None and sample.name not in STATE_FIELDS):
            out.not_mapped += 1
            continue
        interface = names.interface(guid, int(port))
        switch = switches.setdefault(device, _Switch())
        if mapped is not None:
            value = _counter(sample.value)
            if value is None:
                out.bad_values += 1
                continue
            path, scaled = mapped
            switch.updates[(interface, path)] = (
                value * data_unit_bytes % COUNTER64 if scaled else value
            )
        else:
            status = _oper_status(sample.name, sample.value)
            if status is None:
                out.bad_values += 1
                continue
            rank = list(STATE_FIELDS).index(sample.name)
            if rank <= switch.states.get(interface, (rank, ""))[0]:
                switch.states[interface] = (rank, status)
        if sample.ts_ms is not None:
            switch.ts_ns = max(switch.ts_ns, sample.ts_ms * 1_000_000)
    for device, switch in sorted(switches.items()):
        if not switch.updates and not switch.states:
            continue  # every sample of it was bad
        out.messages.append(_message(device, switch, received_ns, last_status, out.status))
    return out


def _message(
    device: str,
    switch: _Switch,
    received_ns: int,
    last_status: Mapping[tuple[str, str], str],
    status_out: dict[tuple[str, str], str],
) -> SwitchMessage:
    changed = False
    for interface, (_, status) in switch.states.items():
        before = last_status.get((device, interface))
        changed = changed or (before is not None and before != status)
        status_out[(device, interface)] = status
        switch.updates[(interface, OPER_STATUS)] = status
    ts_ns = switch.ts_ns or received_ns
    message = {
        **header(device, SUBSCRIPTION, ts_ns),
        "prefix": PREFIX,
        "updates": [
            {"Path": f"interface[name={interface}]/{path}", "values": {f"interface/{path}": v}}
            for (interface, path), v in sorted(switch.updates.items())
        ],
    }
    return SwitchMessage(device, message, ts_ns, changed)
