"""The telemetry stage's per-device fold, free of Kafka: a Normalizer and a cabling watch per
device, what one batch of raw messages produced, and the checkpoints that carry a device's
state across restarts. `telemetry_stage.py` feeds it from aiokafka and sends what it gives.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiokafka.partitioner import murmur2

from railtrace.streams.pipeline import Normalizer, Output
from railtrace.streams.records import CablingEvent, LinkEvent
from railtrace.streams.telemetry import DecodeError, DecodeStats
from railtrace.streams.telemetry.cabling import CablingWatch
from railtrace.streams.telemetry.gnmic import decode_with_lldp
from railtrace.streams.telemetry.lldp import LldpUpdate, snmp_neighbours
from railtrace.streams.telemetry.snmp import decode_snmp
from railtrace.streams.telemetry.thresholds import Thresholds
from railtrace.streams.wire import SampleRow, sample_row
from railtrace.topology.fabric import PortLinks
from railtrace.topology.lldp import PlanIndex

log = logging.getLogger(__name__)
CHECKPOINT_VERSION = 1


@dataclass(slots=True)
class DeviceState:
    """One device's Normalizer, where its checkpoint goes, and how far its input has been read."""

    normalizer: Normalizer
    partition: int
    upto: int = 0  # first raw offset not yet folded into `normalizer`
    cabling: CablingWatch | None = None  # from the device's first LLDP update on
    # interface -> (link id, link-samples partition): derived, so not checkpointed
    routes: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(slots=True)
class BatchOutput:
    """Everything one batch of raw messages produced, grouped the way it is sent."""

    samples: dict[int, list[SampleRow]] = field(default_factory=lambda: defaultdict(list))
    events: dict[str, list[LinkEvent]] = field(default_factory=lambda: defaultdict(list))
    cabling: dict[str, list[CablingEvent]] = field(default_factory=lambda: defaultdict(list))
    dead: list[tuple[Any, str]] = field(default_factory=list)
    rekey: list[tuple[bytes, bytes]] = field(default_factory=list)
    values: int = 0


def decode_counts(stats: DecodeStats) -> dict[str, int]:
    """The decoder's counts since the worker started, as the checkpoint log prints them."""
    counts = {
        "unknown_paths": stats.unknown_paths,
        "unattributed": stats.unattributed,
        "bad_values": stats.bad_values,
        "pathless": stats.pathless,
    }
    counts.update({f"stamped_in_{unit}": n for unit, n in sorted(stats.retimed.items())})
    return counts


class DeviceStates:
    """The per-device fold of the telemetry stage, free of Kafka so it can be tested alone.

    Keys are `gnmi:<raw key>` and `snmp:<raw key>`; `saved` holds checkpoints read back on
    assignment, turned into Normalizers only when their device speaks again.
    """

    def __init__(
        self,
        link_id: PortLinks,
        sample_partitions: int,
        plan: PlanIndex | None = None,
        lldp_settle_s: float = 30.0,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.link_id = link_id
        self.thresholds = thresholds or Thresholds()
        self.sample_partitions = sample_partitions
        self.plan = plan if plan is not None else PlanIndex(())
        self.settle_ns = int(lldp_settle_s * 1e9)
        self.live: dict[bytes, DeviceState] = {}
        self.saved: dict[bytes, tuple[int, bytes]] = {}
        self.dirty: set[bytes] = set()
        self.unreadable = 0
        self.redelivered = 0  # records skipped as already in a restored state
        # What gNMI messages held that railtrace does not use or had to re-read (stamps in
        # ms or s, paths without names), as replay counts them; the checkpoint log says it.
        self.decoded = DecodeStats()

    def state(self, key: bytes, partition: int) -> DeviceState:
        st = self.live.get(key)
        if st is None:
            saved = self.saved.pop(key, None)
            if saved is not None:
                try:
                    st = self._restore(saved[1], partition)
                except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError included
                    # Start the device afresh (its next sample is a new baseline) rather than
                    # stop the stage on every restart.
                    self.unreadable += 1
                    log.error("unreadable checkpoint", extra={"key": key, "reason": str(exc)})
            if st is None:
                st = DeviceState(Normalizer(self.thresholds), partition)
            self.live[key] = st
        return st

    def fold(self, kind: str, record: Any, out: BatchOutput) -> None:
        """Fold one raw record (an aiokafka ConsumerRecord) into its device's state."""
        value = record.value
        if kind == "gnmi" and value and record.key:
            key = b"gnmi:" + record.key
            st = self.state(key, record.partition)
            if record.offset >= st.upto:
                self._fold_gnmi(key, st, record, out)
                return
        self._fold_decoded(kind, record, out)

    def _fold_gnmi(self, key: bytes, st: DeviceState, record: Any, out: BatchOutput) -> None:
        """The hot path: a gNMI message of a keyed device, not redelivered, walked and folded
        in one compiled pass (`Normalizer.fold_message`); what it gives is what
        `_fold_decoded` gives for it."""
        try:
            events, values, last_ns, lldp = st.normalizer.fold_message(
                orjson.loads(record.value), self._route, out.samples, self.decoded
            )
        except (orjson.JSONDecodeError, DecodeError, ValueError) as exc:
            out.dead.append((record, f"gnmi: {exc}"))
            return
        if not values and not lldp:
            return
        if lldp or st.cabling is not None:
            self._cabling(st, last_ns, lldp, out)
        st.upto = record.offset + 1
        self.dirty.add(key)
        out.values += values
        for e in events:
            out.events[self._route(e.device, e.interface)[0]].append(e)

    def _fold_decoded(self, kind: str, record: Any, out: BatchOutput) -> None:
        """SNMP, gNMI messages of no key and redeliveries: decoded into values first."""
        value = record.value
        lldp: list[LldpUpdate] = []
        try:
            if not value:
                raise DecodeError("empty message")
            decoded = orjson.loads(value)
            if kind == "snmp":
                values = decode_snmp(decoded)
                table = snmp_neighbours(decoded)
                if table is not None and values:  # a poll that reached the agent
                    lldp.append(table)
            else:
                values, lldp = decode_with_lldp(decoded, self.decoded)
        except (orjson.JSONDecodeError, DecodeError, ValueError) as exc:
            out.dead.append((record, f"{kind}: {exc}"))
            return
        if not values and not lldp:
            return
        if not record.key:  # gnmic without insert-key: give it a home, keyed by switch
            device = values[0].device if values else lldp[0].device
            out.rekey.append((device.encode(), value))
            return
        key = kind.encode() + b":" + record.key
        st = self.state(key, record.partition)
        if record.offset < st.upto:  # already in the restored state: a redelivery
            self.redelivered += 1
            return
        if lldp or st.cabling is not None:
            self._cabling(st, values[-1].ts_ns if values else None, lldp, out)
        o = Output()
        st.normalizer.fold(values, o)
        st.upto = record.offset + 1
        self.dirty.add(key)
        out.values += len(values)
        routes = st.routes
        for s in o.samples:
            route = routes.get(s.interface)
            if route is None:
                route = routes[s.interface] = self._route(s.device, s.interface)
            out.samples[route[1]].append(sample_row(s, route[0]))
        for e in o.events:
            out.events[self._route(e.device, e.interface)[0]].append(e)

    def _cabling(
        self,
        st: DeviceState,
        last_ns: int | None,
        lldp: list[LldpUpdate],
        out: BatchOutput,
    ) -> None:
        """Fold LLDP news into the device's cabling watch; any message with values moves its
        clock to the last value's stamp, `last_ns`."""
        for update in lldp:
            if st.cabling is None:
                st.cabling = CablingWatch(update.device, self.plan, self.settle_ns)
            out.cabling[update.device].extend(st.cabling.apply(update))
        if last_ns is not None and st.cabling is not None and st.cabling.pending:
            out.cabling[st.cabling.device].extend(st.cabling.tick(last_ns))

    def _route(self, device: str, interface: str) -> tuple[str, int]:
        """The link id of a port (or `device:interface` for a port off the plan) and the
        partition the default partitioner gives that key."""
        lid = self.link_id(device, interface) or f"{device}:{interface}"
        return lid, (murmur2(lid.encode()) & 0x7FFFFFFF) % self.sample_partitions

    def checkpoint(self) -> list[tuple[bytes, int, bytes]]:
        """(key, partition, value) for every device changed since the last checkpoint."""
        rows = [
            (
                key,
                self.live[key].partition,
                orjson.dumps(
                    {
                        "v": CHECKPOINT_VERSION,
                        "upto": self.live[key].upto,
                        "state": self.live[key].normalizer.snapshot(),
                        **_cabling_snapshot(self.live[key]),
                    }
                ),
            )
            for key in sorted(self.dirty)
        ]
        self.dirty.clear()
        return rows

    def drop_partitions(self, partitions: Iterable[int]) -> None:
        """Forget the devices of partitions this worker no longer owns (their checkpoints
        have been written)."""
        gone = set(partitions)
        for key in [k for k, st in self.live.items() if st.partition in gone]:
            del self.live[key]
        for key in [k for k, (part, _) in self.saved.items() if part in gone]:
            del self.saved[key]

    def _restore(self, raw: bytes, partition: int) -> DeviceState:
        snap = orjson.loads(raw)
        if not isinstance(snap, dict) or snap.get("v") != CHECKPOINT_VERSION:
            raise ValueError("not a version-1 checkpoint")
        normalizer = Normalizer.restore(snap["state"], self.thresholds)
        st = DeviceState(normalizer, partition, int(snap["upto"]))
        if (cabling := snap.get("cabling")) is not None:
            st.cabling = CablingWatch.restore(
                cabling["watch"], cabling["device"], self.plan, self.settle_ns
            )
        return st


def _cabling_snapshot(st: DeviceState) -> dict[str, Any]:
    """The checkpoint's optional `cabling` part: absent for devices that send no LLDP."""
    if st.cabling is None:
        return {}
    return {"cabling": {"device": st.cabling.device, "watch": st.cabling.snapshot()}}
