"""SNMP polls and traps (as railtrace's collectors put them on Kafka) to TelemetryValues.

A message is `{"device", "ts_ns", "kind": "poll"|"trap", "ifnames": {ifIndex: ifName},
"varbinds": {numeric OID: value}}`; OIDs are numeric because Debian ships no MIB files. Only
IF-MIB and EtherLike-MIB columns railtrace uses are mapped; others are ignored.
"""

from __future__ import annotations

from typing import Any

from railtrace.streams.records import Metric, TelemetryValue
from railtrace.streams.telemetry.gnmic import DecodeError

#: Column OID (without the ifIndex) -> metric. Sources: IF-MIB (RFC 2863), EtherLike-MIB
#: (RFC 3635).
COLUMNS: dict[str, tuple[Metric, str]] = {
    "1.3.6.1.2.1.31.1.1.1.6": (Metric.IN_OCTETS, ""),  # ifHCInOctets
    "1.3.6.1.2.1.31.1.1.1.10": (Metric.OUT_OCTETS, ""),  # ifHCOutOctets
    "1.3.6.1.2.1.2.2.1.13": (Metric.IN_DISCARDS, ""),  # ifInDiscards
    "1.3.6.1.2.1.2.2.1.14": (Metric.IN_ERRORS, ""),  # ifInErrors
    "1.3.6.1.2.1.2.2.1.19": (Metric.OUT_DISCARDS, ""),  # ifOutDiscards
    "1.3.6.1.2.1.2.2.1.20": (Metric.OUT_ERRORS, ""),  # ifOutErrors
    "1.3.6.1.2.1.2.2.1.8": (Metric.OPER_STATUS, ""),  # ifOperStatus
    "1.3.6.1.2.1.10.7.2.1.3": (Metric.IN_FCS_ERRORS, ""),  # dot3StatsFCSErrors
    "1.3.6.1.2.1.10.7.10.1.3": (Metric.PFC_RX_PAUSE, "link"),  # dot3InPauseFrames
    "1.3.6.1.2.1.10.7.10.1.4": (Metric.PFC_TX_PAUSE, "link"),  # dot3OutPauseFrames
}
#: ifOperStatus values (IF-MIB).
OPER_STATUS = {
    1: "up",
    2: "down",
    3: "testing",
    4: "unknown",
    5: "dormant",
    6: "not_present",
    7: "lower_layer_down",
}


def _column(oid: str) -> tuple[str, str] | None:
    base, _, index = oid.lstrip(".").rpartition(".")
    return (base, index) if base in COLUMNS else None


def decode_snmp(message: Any) -> list[TelemetryValue]:
    """The values of one SNMP message; raises DecodeError when it is not one.

    >>> decode_snmp({"device": "leaf1", "ts_ns": 5, "kind": "trap", "ifnames": {"3": "swp3"},
    ...              "varbinds": {"1.3.6.1.2.1.2.2.1.8.3": 2}})[0].value
    'down'
    """
    if not isinstance(message, dict):
        raise DecodeError("an SNMP message must be a JSON object")
    device, ts, varbinds = message.get("device"), message.get("ts_ns"), message.get("varbinds")
    ifnames = message.get("ifnames") or {}
    if not isinstance(device, str) or not device:
        raise DecodeError("an SNMP message needs a device name")
    if not isinstance(ts, int) or isinstance(ts, bool) or ts <= 0:
        raise DecodeError("an SNMP message needs ts_ns, nanoseconds since the epoch")
    if not isinstance(varbinds, dict) or not isinstance(ifnames, dict):
        raise DecodeError("varbinds and ifnames must be JSON objects")
    out: list[TelemetryValue] = []
    for oid, raw in varbinds.items():
        hit = _column(str(oid))
        if hit is None:
            continue
        base, index = hit
        interface = ifnames.get(index)
        if not isinstance(interface, str):
            raise DecodeError(f"varbind {oid} names ifIndex {index}, which ifnames does not map")
        metric, qualifier = COLUMNS[base]
        try:
            number = int(raw)
        except (TypeError, ValueError) as exc:
            raise DecodeError(f"varbind {oid} has a non-integer value {raw!r}") from exc
        value: float | str = (
            OPER_STATUS.get(number, "unknown") if metric is Metric.OPER_STATUS else number
        )
        out.append(TelemetryValue(ts, device, interface, metric, value, qualifier))
    return out
