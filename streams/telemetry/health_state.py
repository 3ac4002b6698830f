"""What `LinkHealth` remembers per interface (latches, oper-status, flap windows, PFC pause
groups, baselines, the last sample of each series) and its JSON snapshot.

Apart from the rules because a stream worker stores this state in a changelogged table and
restores it after a restart or a rebalance: its layout is a contract of its own (`VERSION`),
while the rules that read it change with the thresholds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..records import LinkEventKind, Metric
from .state import VERSION, check_header, dec_bool, dec_int, dec_num, dec_str, enc_int, enc_num

Iface = tuple[str, str]
LatchKey = tuple[str, str, LinkEventKind, str]

#: The per-interface parts of a version 1 snapshot (see `HealthState.snapshot`).
SNAPSHOT_PARTS = frozenset(
    {"oper", "changes", "carrier", "latches", "pause", "baselines", "pre_fec", "seen"}
)


@dataclass(slots=True)
class Latch:
    """An anomaly being reported on, and when it was last seen: it re-arms only once the
    condition has been clear for `rearm_quiet_s`."""

    active: bool
    last_bad_ns: int


@dataclass(slots=True)
class PauseGroup:
    """PFC pause rates of one direction reported at one timestamp, summed as they arrive."""

    ts_ns: int
    total: float
    qualifiers: list[str]


@dataclass(slots=True)
class Baseline:
    """A series' own level (an EWMA) and how many samples taught it: a level is trusted only
    after enough of them."""

    ewma: float
    samples: int

    def learn(self, value: float, alpha: float) -> None:
        """Move the level towards `value` (an EWMA) and count the sample."""
        self.ewma += alpha * (value - self.ewma)
        self.samples += 1


@dataclass(slots=True)
class HealthState:
    """Every interface's state, keyed by (device, interface, ...)."""

    latches: dict[LatchKey, Latch] = field(default_factory=dict)
    #: Last oper-status time and whether the link was down then (None: no up/down seen yet).
    oper: dict[Iface, tuple[int, bool | None]] = field(default_factory=dict)
    changes: dict[Iface, deque[int]] = field(default_factory=dict)
    carrier: dict[Iface, deque[tuple[int, int]]] = field(default_factory=dict)
    pause: dict[tuple[str, str, str], PauseGroup] = field(default_factory=dict)
    baselines: dict[tuple[str, str, Metric], Baseline] = field(default_factory=dict)
    #: Pre-FEC levels per series: one port reports per-lane corrected symbols beside its
    #: total corrected bits, each on its own scale.
    pre_fec: dict[tuple[str, str, Metric, str], Baseline] = field(default_factory=dict)
    #: Time of the last sample of each watched (device, interface, metric, qualifier).
    seen: dict[tuple[str, str, Metric, str], int] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain JSON values, to be stored once per batch, not per input.

        Layout (version 1): `ifaces` is device -> interface -> an object with only the parts
        that interface has: `oper` [ts_ns, down or null], `changes` [ts_ns, ...], `carrier`
        [[ts_ns, increments], ...], `latches` [[kind, sub, active, last_bad_ns], ...], `pause`
        [[direction, ts_ns, total, [qualifier, ...]], ...], `baselines` [[metric, ewma,
        samples], ...], `pre_fec` [[metric, qualifier, ewma, samples], ...] and `seen`
        [[metric, qualifier, ts_ns], ...]. Grouping by interface
        keeps it small and readable; thresholds are configuration and are not in it.
        """
        ifaces: dict[str, dict[str, dict[str, list[Any]]]] = {}

        def rows(device: str, interface: str, part: str) -> list[Any]:
            return ifaces.setdefault(device, {}).setdefault(interface, {}).setdefault(part, [])

        for (device, interface), (ts_ns, down) in self.oper.items():
            rows(device, interface, "oper").extend((enc_int(ts_ns), down))
        for (device, interface), changes in self.changes.items():
            if changes:
                rows(device, interface, "changes").extend(enc_int(ts) for ts in changes)
        for (device, interface), carrier in self.carrier.items():
            if carrier:
                rows(device, interface, "carrier").extend([enc_int(ts), n] for ts, n in carrier)
        for (device, interface, kind, sub), latch in self.latches.items():
            row = [str(kind), str(sub), latch.active, enc_int(latch.last_bad_ns)]
            rows(device, interface, "latches").append(row)
        for (device, interface, direction), group in self.pause.items():
            row = [direction, enc_int(group.ts_ns), enc_num(group.total), list(group.qualifiers)]
            rows(device, interface, "pause").append(row)
        for (device, interface, metric), baseline in self.baselines.items():
            row = [str(metric), enc_num(baseline.ewma), baseline.samples]
            rows(device, interface, "baselines").append(row)
        for (device, interface, metric, qualifier), baseline in self.pre_fec.items():
            row = [str(metric), qualifier, enc_num(baseline.ewma), baseline.samples]
            rows(device, interface, "pre_fec").append(row)
        for (device, interface, metric, qualifier), ts_ns in self.seen.items():
            rows(device, interface, "seen").append([str(metric), qualifier, enc_int(ts_ns)])
        return {"v": VERSION, "type": "LinkHealth", "ifaces": ifaces}

    @classmethod
    def restore(cls, snap: dict[str, Any]) -> HealthState:
        """The state `snap` was taken of. `snap` may come straight from `orjson.loads`; nothing
        in it is kept by reference. Raises ValueError for another version, another kind of
        snapshot, or a damaged one."""
        check_header(snap, "LinkHealth")
        state = cls()
        try:
            for device, interfaces in snap["ifaces"].items():
                for interface, parts in interfaces.items():
                    state._restore_iface(device, interface, parts)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"damaged LinkHealth snapshot: {exc!r}") from exc
        return state

    def _restore_iface(self, device: str, interface: str, parts: dict[str, Any]) -> None:
        iface = (device, interface)
        unknown = parts.keys() - SNAPSHOT_PARTS
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)} for {device} {interface}")
        if "oper" in parts:
            ts_ns, down = parts["oper"]
            self.oper[iface] = (dec_int(ts_ns), None if down is None else dec_bool(down))
        if "changes" in parts:
            self.changes[iface] = deque(dec_int(ts) for ts in parts["changes"])
        if "carrier" in parts:
            self.carrier[iface] = deque((dec_int(ts), dec_int(n)) for ts, n in parts["carrier"])
        for kind, sub, active, last_bad_ns in parts.get("latches", ()):
            key = (device, interface, LinkEventKind(kind), dec_str(sub))
            self.latches[key] = Latch(dec_bool(active), dec_int(last_bad_ns))
        for direction, ts_ns, total, qualifiers in parts.get("pause", ()):
            quals = [dec_str(q) for q in qualifiers]
            group = PauseGroup(dec_int(ts_ns), dec_num(total), quals)
            self.pause[(device, interface, dec_str(direction))] = group
        for metric, ewma, samples in parts.get("baselines", ()):
            baseline = Baseline(dec_num(ewma), dec_int(samples))
            self.baselines[(device, interface, Metric(metric))] = baseline
        for metric, qualifier, ewma, samples in parts.get("pre_fec", ()):
            series = (device, interface, Metric(metric), dec_str(qualifier))
            self.pre_fec[series] = Baseline(dec_num(ewma), dec_int(samples))
        for metric, qualifier, ts_ns in parts.get("seen", ()):
            self.seen[(device, interface, Metric(metric), dec_str(qualifier))] = dec_int(ts_ns)
