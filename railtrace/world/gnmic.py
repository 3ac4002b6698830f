"""The switches' telemetry as gnmic writes it to a file, one file per switch.

Each switch samples all its ports every `sample_s` from its own phase, stamps with its own
clock (seconds off), and speaks its vendor's paths with the leaves that vendor has:

- Cumulus (NVUE): OpenConfig interface counters, `ethernet/state/counters/in-fcs-errors`, PFC
  per switch-priority under `qos/interfaces`, `phy/fec/state/rs-fec-uncorrectable-blocks` and
  `phy/state/symbol-errors`;
- SONiC: COUNTERS_DB through sonic-gnmi (`COUNTERS/<port>`, SAI stat names), oper-status from
  its OpenConfig interfaces;
- EOS: OpenConfig only: interface counters, FEC blocks under `ethernet/state/counters`, 802.3
  pause frames (OpenConfig has no PFC), no symbol errors;
- NX-OS: OpenConfig interface counters and pause frames; no FEC or symbol leaves.

gnmic's `json` format is one notification per line (a prefix and its updates); `event` is one
array of flat events per line, the interface in a tag.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from railtrace.world.incident import NS, Incident
from railtrace.world.shape import Port
from railtrace.world.traffic import Telemetry

GNMI_PORT = {"cumulus": 9339, "sonic": 8080, "eos": 6030, "nxos": 50051}
_IF = "interfaces/interface"


def _full_speed(planes: int) -> int:
    return 800 // planes


class _Switch:
    """One switch's sampling: its ports, phase, clock offset and what it has said so far."""

    def __init__(self, name: str, ports: list[Port], inc: Incident, rng: random.Random) -> None:
        self.name = name
        self.ports = ports
        self.vendor = inc.dims.vendor
        self.phase = rng.uniform(0, inc.dims.sample_s) * NS
        self.skew = int(rng.uniform(-inc.dims.clock_skew_s, inc.dims.clock_skew_s) * NS)
        self.fmt = "json" if self.vendor == "sonic" else inc.dims.gnmic_format
        self.resets = sorted(t for device, t in inc.resets if device == name)
        self.silent_from = inc.silenced.get(name)


def _json(
    sw: _Switch, sub: str, ts: int, prefix: str, updates: list[tuple[str, Any]], target: str = ""
) -> bytes:
    msg: dict[str, Any] = {
        "source": f"{sw.name}:{GNMI_PORT[sw.vendor]}",
        "subscription-name": sub,
        "timestamp": ts,
        "time": datetime.fromtimestamp(ts / NS, tz=UTC).isoformat(),
    }
    if target:
        msg["target"] = target
    if prefix:
        msg["prefix"] = prefix
    msg["updates"] = [{"Path": p, "values": {p: v}} for p, v in updates]
    return orjson.dumps(msg) + b"\n"


def _event(sw: _Switch, sub: str, ts: int, tags: dict[str, str], values: dict[str, Any]) -> bytes:
    event = {
        "name": sub,
        "timestamp": ts,
        "tags": {**tags, "source": f"{sw.name}:{GNMI_PORT[sw.vendor]}", "subscription-name": sub},
        "values": values,
    }
    return orjson.dumps([event]) + b"\n"


def _counter_lines(sw: _Switch, ts: int, port: Port, c: dict[str, int]) -> list[bytes]:
    name = port.name
    if sw.vendor == "sonic":
        stats = {
            "SAI_PORT_STAT_IF_IN_OCTETS": c["in_octets"],
            "SAI_PORT_STAT_IF_OUT_OCTETS": c["out_octets"],
            "SAI_PORT_STAT_IF_IN_ERRORS": c["in_errors"],
            "SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS": c["in_fcs_errors"],
            "SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES": c["fec_corrected"],
            "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES": c["fec_uncorrectable"],
            "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS": c["symbol_errors"],
            "SAI_PORT_STAT_PFC_3_RX_PKTS": c["pfc_rx"],
            "SAI_PORT_STAT_PFC_3_TX_PKTS": c["pfc_tx"],
        }
        hash_ = {k: str(v) for k, v in stats.items()}
        return [_json(sw, "counters", ts, "", [(f"COUNTERS/{name}", hash_)], "COUNTERS_DB")]
    base = {
        "in-octets": c["in_octets"],
        "out-octets": c["out_octets"],
        "in-errors": c["in_errors"],
    }
    extra: dict[str, int] = {}
    if sw.vendor == "cumulus":
        extra = {
            "ethernet/state/counters/in-fcs-errors": c["in_fcs_errors"],
            "phy/fec/state/rs-fec-uncorrectable-blocks": c["fec_uncorrectable"],
            "phy/state/symbol-errors": c["symbol_errors"],
        }
    else:
        base["in-fcs-errors"] = c["in_fcs_errors"]
        extra = {
            "ethernet/state/counters/in-mac-pause-frames": c["pfc_rx"],
            "ethernet/state/counters/out-mac-pause-frames": c["pfc_tx"],
        }
        if sw.vendor == "eos":
            extra["ethernet/state/counters/fec-uncorrectable-blocks"] = c["fec_uncorrectable"]
            extra["ethernet/state/counters/fec-corrected-blocks"] = c["fec_corrected"]
    pfc = (
        {"in-pause-pkts": c["pfc_rx"], "out-pause-pkts": c["pfc_tx"]}
        if sw.vendor == "cumulus"
        else {}
    )
    qos = (
        f"qos/interfaces/interface[interface-id={name}]/switch-priority[priority=3]/state/counters"
    )
    if sw.fmt == "json":
        updates: list[tuple[str, Any]] = [("state/counters", {k: str(v) for k, v in base.items()})]
        updates += [(path, str(v)) for path, v in extra.items()]
        lines = [_json(sw, "port-counters", ts, f"{_IF}[name={name}]", updates)]
        if pfc:
            lines.append(_json(sw, "pfc", ts, qos, [(k, str(v)) for k, v in pfc.items()]))
        return lines
    values = {f"/{_IF}/state/counters/{k}": str(v) for k, v in base.items()}
    values |= {f"/{_IF}/{path}": str(v) for path, v in extra.items()}
    lines = [_event(sw, "port-counters", ts, {"interface_name": name}, values)]
    if pfc:
        tags = {"interface_interface-id": name, "switch-priority_priority": "3"}
        prefix = "/qos/interfaces/interface/switch-priority/state/counters"
        lines.append(_event(sw, "pfc", ts, tags, {f"{prefix}/{k}": str(v) for k, v in pfc.items()}))
    return lines


def _state_line(sw: _Switch, ts: int, port: Port, up: bool) -> bytes:
    status = "UP" if up else "DOWN"
    if sw.fmt == "json":
        return _json(
            sw, "oper-state", ts, f"{_IF}[name={port.name}]/state", [("oper-status", status)]
        )
    values = {f"/{_IF}/state/oper-status": status}
    return _event(sw, "oper-state", ts, {"interface_name": port.name}, values)


def _speed_line(sw: _Switch, ts: int, port: Port, gbps: int) -> bytes:
    speed = f"openconfig-if-ethernet:SPEED_{gbps}GB"
    if sw.fmt == "json":
        prefix = f"{_IF}[name={port.name}]/ethernet/state"
        return _json(sw, "speed", ts, prefix, [("negotiated-port-speed", speed)])
    values = {f"/{_IF}/ethernet/state/negotiated-port-speed": speed}
    return _event(sw, "speed", ts, {"interface_name": port.name}, values)


def _changes(inc: Incident, port: Port) -> list[tuple[int, str, Any]]:
    """The port's oper-status and speed changes, in true time."""
    cable = inc.cluster.at[port]
    out: list[tuple[int, str, Any]] = []
    for fault in inc.link_faults:
        if fault.cable != cable:
            continue
        if fault.kind in ("down", "flap"):
            out.append((fault.at_ns, "state", False))
            if fault.kind == "flap" and fault.up_ns is not None:
                # A flap goes down and up a few times before it settles up.
                mid = fault.at_ns + (fault.up_ns - fault.at_ns) // 3
                out += [
                    (mid, "state", True),
                    (mid + NS, "state", False),
                    (fault.up_ns, "state", True),
                ]
        elif fault.kind == "speed":
            out += [(fault.at_ns, "state", False), (fault.at_ns + 3 * NS, "state", True)]
            out.append((fault.at_ns + 3 * NS, "speed", _full_speed(inc.dims.planes) // 2))
    return sorted(out)


def switch_lines(inc: Incident, tel: Telemetry, sw: _Switch) -> Iterator[bytes]:
    """Every line of one switch's file, in its own time order."""
    step = inc.dims.sample_s * NS
    end = (
        inc.telemetry_end_ns
        if sw.silent_from is None
        else min(inc.telemetry_end_ns, sw.silent_from)
    )
    pending: list[tuple[int, Port, str, Any]] = []
    for port in sw.ports:
        pending += [(t, port, what, v) for t, what, v in _changes(inc, port)]
    pending.sort(key=lambda e: (e[0], e[1]))
    t = inc.start_ns + int(sw.phase)
    first = True
    offsets: dict[Port, dict[str, int]] = {}
    resets = list(sw.resets)
    while t <= end:
        while pending and pending[0][0] <= t:
            at, port, what, value = pending.pop(0)
            if at > end:
                break
            if what == "state":
                yield _state_line(sw, at + sw.skew, port, value)
            else:
                yield _speed_line(sw, at + sw.skew, port, value)
        if resets and resets[0] <= t:
            at = resets.pop(0)
            # Counters cleared: from here each counts from what it had then.
            offsets = {p: _ints(tel.counters(p, at)) for p in sw.ports}
        for port in sw.ports:
            if first:
                yield _state_line(sw, t + sw.skew, port, True)
                yield _speed_line(sw, t + sw.skew, port, _full_speed(inc.dims.planes))
            now = _ints(tel.counters(port, t))
            base = offsets.get(port)
            if base is not None:
                now = {k: max(0, v - base[k]) for k, v in now.items()}
            yield from _counter_lines(sw, t + sw.skew, port, now)
        first = False
        t += step


def _ints(counters: dict[str, float]) -> dict[str, int]:
    return {k: int(v) for k, v in counters.items()}


def write(out_dir: Path, inc: Incident, rng: random.Random) -> None:
    tel = Telemetry(inc, rng)
    by_switch: dict[str, list[Port]] = {}
    for cable in inc.cluster.cables:
        for end in (cable.a, cable.b):
            if end.device in inc.cluster.switch_ports:
                by_switch.setdefault(end.device, []).append(end)
    gnmi = out_dir / "gnmi"
    gnmi.mkdir(parents=True, exist_ok=True)
    for name in sorted(by_switch):
        sw = _Switch(name, by_switch[name], inc, rng)
        suffix = ".jsonl" if sw.fmt == "event" else ".json"
        with (gnmi / f"{name}{suffix}").open("wb") as fh:
            fh.writelines(switch_lines(inc, tel, sw))
