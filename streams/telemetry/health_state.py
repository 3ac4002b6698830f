"""The JSON snapshot of what `LinkHealth` remembers per interface: latches, oper-status, flap
windows, PFC pause groups, baselines and the last sample of each series.

Apart from the rules because a stream worker stores this state in a changelogged table and
restores it after a restart or a rebalance: its layout is a contract of its own (`VERSION`),
while the rules that read it change with the thresholds. The state itself lives in the compiled
rules (`walk/src/health.rs`); it crosses into Python as rows per part, each led by its
(device, interface), in the order the rules first kept them, and this module lays the rows out
and reads them back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..records import LinkEventKind, Metric
from .state import VERSION, check_header, dec_bool, dec_int, dec_num, dec_str, enc_int, enc_num

#: The per-interface parts of a version 1 snapshot, in the order they are laid out.
PARTS = ("oper", "changes", "carrier", "latches", "pause", "baselines", "pre_fec", "seen")
SNAPSHOT_PARTS = frozenset(PARTS)


def snapshot(rows: dict[str, list[tuple[Any, ...]]]) -> dict[str, Any]:
    """The state's rows (`HealthCore.rows`) as plain JSON values.

    Layout (version 1): `ifaces` is device -> interface -> an object with only the parts
    that interface has: `oper` [ts_ns, down or null], `changes` [ts_ns, ...], `carrier`
    [[ts_ns, increments], ...], `latches` [[kind, sub, active, last_bad_ns], ...], `pause`
    [[direction, ts_ns, total, [qualifier, ...]], ...], `baselines` [[metric, ewma,
    samples], ...], `pre_fec` [[metric, qualifier, ewma, samples], ...] and `seen`
    [[metric, qualifier, ts_ns], ...]. Grouping by interface keeps it small and readable;
    thresholds are configuration and are not in it.
    """
    ifaces: dict[str, dict[str, dict[str, list[Any]]]] = {}

    def part(device: str, interface: str, name: str) -> list[Any]:
        return ifaces.setdefault(device, {}).setdefault(interface, {}).setdefault(name, [])

    for device, interface, ts_ns, down in rows["oper"]:
        part(device, interface, "oper").extend((enc_int(ts_ns), down))
    for device, interface, changes in rows["changes"]:
        if changes:
            part(device, interface, "changes").extend(enc_int(ts) for ts in changes)
    for device, interface, carrier in rows["carrier"]:
        if carrier:
            part(device, interface, "carrier").extend([enc_int(ts), n] for ts, n in carrier)
    for device, interface, kind, sub, active, last_bad_ns in rows["latches"]:
        part(device, interface, "latches").append([kind, sub, active, enc_int(last_bad_ns)])
    for device, interface, direction, ts_ns, total, qualifiers in rows["pause"]:
        row = [direction, enc_int(ts_ns), enc_num(total), list(qualifiers)]
        part(device, interface, "pause").append(row)
    for device, interface, metric, ewma, samples in rows["baselines"]:
        part(device, interface, "baselines").append([str(metric), enc_num(ewma), samples])
    for device, interface, metric, qualifier, ewma, samples in rows["pre_fec"]:
        row = [str(metric), qualifier, enc_num(ewma), samples]
        part(device, interface, "pre_fec").append(row)
    for device, interface, metric, qualifier, ts_ns in rows["seen"]:
        part(device, interface, "seen").append([str(metric), qualifier, enc_int(ts_ns)])
    return {"v": VERSION, "type": "LinkHealth", "ifaces": ifaces}


def rows(snap: Any) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(part, row) for every row of `snap`, decoded, as `HealthCore.load` takes them. `snap`
    may come straight from `orjson.loads`. Raises ValueError for another version, another
    kind of snapshot, or a damaged one (also when the rows are read lazily)."""
    check_header(snap, "LinkHealth")
    try:
        for device, interfaces in snap["ifaces"].items():
            for interface, parts in interfaces.items():
                yield from _iface_rows(dec_str(device), dec_str(interface), parts)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"damaged LinkHealth snapshot: {exc!r}") from exc


def _iface_rows(
    device: str, interface: str, parts: dict[str, Any]
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    unknown = parts.keys() - SNAPSHOT_PARTS
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)} for {device} {interface}")
    at = (device, interface)
    if "oper" in parts:
        ts_ns, down = parts["oper"]
        yield "oper", (*at, dec_int(ts_ns), None if down is None else dec_bool(down))
    if "changes" in parts:
        yield "changes", (*at, [dec_int(ts) for ts in parts["changes"]])
    if "carrier" in parts:
        yield "carrier", (*at, [(dec_int(ts), dec_int(n)) for ts, n in parts["carrier"]])
    for kind, sub, active, last_bad_ns in parts.get("latches", ()):
        latch = (str(LinkEventKind(kind)), dec_str(sub), dec_bool(active), dec_int(last_bad_ns))
        yield "latches", (*at, *latch)
    for direction, ts_ns, total, qualifiers in parts.get("pause", ()):
        quals = [dec_str(q) for q in qualifiers]
        yield "pause", (*at, dec_str(direction), dec_int(ts_ns), float(dec_num(total)), quals)
    for metric, ewma, samples in parts.get("baselines", ()):
        yield "baselines", (*at, Metric(metric), float(dec_num(ewma)), dec_int(samples))
    for metric, qualifier, ewma, samples in parts.get("pre_fec", ()):
        level = (Metric(metric), dec_str(qualifier), float(dec_num(ewma)), dec_int(samples))
        yield "pre_fec", (*at, *level)
    for metric, qualifier, ts_ns in parts.get("seen", ()):
        yield "seen", (*at, Metric(metric), dec_str(qualifier), dec_int(ts_ns))
