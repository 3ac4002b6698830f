"""Simulated switch telemetry written the way gnmic writes it to a file.

Each switch speaks its platform's paths (NVIDIA Cumulus/NVUE OpenConfig-style paths, SONiC
COUNTERS_DB SAI counters, Arista OpenConfig) and each collector file uses one of gnmic's two
JSON formats: `json` (one notification object per line, updates under a prefix) or `event`
(one array of flat events per line). See shared/reference for the sources of both.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from railtrace.simulate.series import Item, PortNeighbour, PortSpeed, PortState

GNMI_PORT = {"cumulus": 9339, "sonic": 8080, "arista": 6030}


def _time(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1e9, tz=UTC).isoformat()


def _json_msg(
    device: str,
    platform: str,
    sub: str,
    ts: int,
    prefix: str,
    updates: list[tuple[str, Any]],
    target: str | None = None,
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "source": f"{device}:{GNMI_PORT[platform]}",
        "subscription-name": sub,
        "timestamp": ts,
        "time": _time(ts),
    }
    if target:
        msg["target"] = target
    if prefix:
        msg["prefix"] = prefix
    msg["updates"] = [{"Path": p, "values": {p: v}} for p, v in updates]
    return msg


def _event(
    device: str,
    platform: str,
    sub: str,
    ts: int,
    iface: str,
    values: dict[str, Any],
    extra_tags: dict[str, str] | None = None,
    iface_tag: str = "interface_name",
) -> dict[str, Any]:
    tags = {
        iface_tag: iface,
        "source": f"{device}:{GNMI_PORT[platform]}",
        "subscription-name": sub,
        **(extra_tags or {}),
    }
    return {"name": sub, "timestamp": ts, "tags": tags, "values": values}


_LLDP = "lldp/interfaces/interface/neighbors/neighbor/state"


def _speed(gbps: float) -> str:
    return f"openconfig-if-ethernet:SPEED_{gbps:g}GB"


def json_messages(item: Item, platform: str) -> list[dict[str, Any]]:
    """gnmic `json` format notifications for one sample, state change, speed or neighbour."""
    dev, iface, ts = item.port.device, item.port.interface, item.ts_ns
    if isinstance(item, PortSpeed):
        prefix = f"interfaces/interface[name={iface}]/ethernet/state"
        updates = [("negotiated-port-speed", _speed(item.gbps))]
        return [_json_msg(dev, platform, "speed", ts, prefix, updates)]
    if isinstance(item, PortNeighbour):
        prefix = f"lldp/interfaces/interface[name={iface}]/neighbors/neighbor[id=1]/state"
        updates = [("system-name", item.remote.device), ("port-id", item.remote.interface)]
        return [_json_msg(dev, platform, "lldp", ts, prefix, updates)]
    if isinstance(item, PortState):
        return [
            _json_msg(
                dev,
                platform,
                "oper-state",
                ts,
                f"interfaces/interface[name={iface}]/state",
                [("oper-status", "UP" if item.up else "DOWN")],
            )
        ]
    c = {k: str(v) for k, v in item.counters.items()}
    if platform == "sonic":
        hash_ = {
            "SAI_PORT_STAT_IF_IN_OCTETS": c["in_octets"],
            "SAI_PORT_STAT_IF_OUT_OCTETS": c["out_octets"],
            "SAI_PORT_STAT_IF_IN_ERRORS": c["in_errors"],
            "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES": c["fec_uncorrectable"],
            "SAI_PORT_STAT_PFC_3_RX_PKTS": c["pfc_rx"],
            "SAI_PORT_STAT_PFC_3_TX_PKTS": c["pfc_tx"],
        }
        return [
            _json_msg(
                dev,
                platform,
                "sonic-counters",
                ts,
                "",
                [(f"COUNTERS/{iface}", hash_)],
                target="COUNTERS_DB",
            )
        ]
    counters = {
        "in-octets": c["in_octets"],
        "out-octets": c["out_octets"],
        "in-errors": c["in_errors"],
        "in-discards": "0",
        "out-discards": "0",
    }
    msgs = [
        _json_msg(
            dev,
            platform,
            "port-counters",
            ts,
            f"interfaces/interface[name={iface}]",
            [
                ("state/counters", counters),
                ("ethernet/state/counters/in-fcs-errors", c["in_fcs_errors"]),
                ("phy/fec/state/rs-fec-uncorrectable-blocks", c["fec_uncorrectable"]),
            ],
        )
    ]
    msgs.append(
        _json_msg(
            dev,
            platform,
            "pfc",
            ts,
            f"qos/interfaces/interface[interface-id={iface}]/switch-priority[priority=3]/state/counters",
            [("in-pause-pkts", c["pfc_rx"]), ("out-pause-pkts", c["pfc_tx"])],
        )
    )
    if item.rx_power_dbm is not None:
        msgs.append(
            _json_msg(
                dev,
                platform,
                "optics",
                ts,
                f"components/component[name={iface}]/transceiver/state",
                [("input-power/instant", f"{item.rx_power_dbm:.2f}")],
            )
        )
    return msgs


def event_messages(item: Item, platform: str) -> list[list[dict[str, Any]]]:
    """gnmic `event` format: one array of events per notification."""
    dev, iface, ts = item.port.device, item.port.interface, item.ts_ns
    if isinstance(item, PortSpeed):
        speed = {"/interfaces/interface/ethernet/state/negotiated-port-speed": _speed(item.gbps)}
        return [[_event(dev, platform, "speed", ts, iface, speed)]]
    if isinstance(item, PortNeighbour):
        values = {
            f"/{_LLDP}/system-name": item.remote.device,
            f"/{_LLDP}/port-id": item.remote.interface,
        }
        return [[_event(dev, platform, "lldp", ts, iface, values, {"neighbor_id": "1"})]]
    if isinstance(item, PortState):
        return [
            [
                _event(
                    dev,
                    platform,
                    "oper-state",
                    ts,
                    iface,
                    {"/interfaces/interface/state/oper-status": "UP" if item.up else "DOWN"},
                )
            ]
        ]
    c = {k: str(v) for k, v in item.counters.items()}
    out = [
        [
            _event(
                dev,
                platform,
                "port-counters",
                ts,
                iface,
                {
                    "/interfaces/interface/state/counters/in-octets": c["in_octets"],
                    "/interfaces/interface/state/counters/out-octets": c["out_octets"],
                    "/interfaces/interface/state/counters/in-errors": c["in_errors"],
                    "/interfaces/interface/state/counters/in-fcs-errors": c["in_fcs_errors"],
                },
            )
        ]
    ]
    if platform == "cumulus":
        qos = "/qos/interfaces/interface/switch-priority/state/counters"
        pfc = {f"{qos}/in-pause-pkts": c["pfc_rx"], f"{qos}/out-pause-pkts": c["pfc_tx"]}
        prio = {"switch-priority_priority": "3"}
        out.append([_event(dev, platform, "pfc", ts, iface, pfc, prio, "interface_interface-id")])
        fec = {
            "/interfaces/interface/phy/fec/state/rs-fec-uncorrectable-blocks": c[
                "fec_uncorrectable"
            ]
        }
        out.append([_event(dev, platform, "fec", ts, iface, fec)])
    if item.rx_power_dbm is not None and platform != "sonic":
        power = {
            "/components/component/transceiver/state/input-power/instant": (
                f"{item.rx_power_dbm:.2f}"
            )
        }
        out.append([_event(dev, platform, "optics", ts, iface, power, None, "component_name")])
    return out


def render(items: Iterator[Item], platform: str, fmt: str) -> Iterator[bytes]:
    """Lines of a gnmic output file in format `fmt` ("json" or "event")."""
    for item in items:
        msgs: list[Any] = (
            json_messages(item, platform) if fmt == "json" else event_messages(item, platform)
        )
        for msg in msgs:
            yield orjson.dumps(msg) + b"\n"
