"""What the logs say about one job: where its ranks run, which NIC pairs its channels use, and
whether (and since when) it stopped.

Built incrementally from job facts in event-time order; the derived flow set is recomputed only
when a fact that changes it arrives.
"""

from __future__ import annotations

import bisect
import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from railtrace.streams import codec
from railtrace.streams.attribution.pace import DEFAULT_RULES, Pace, PaceRules
from railtrace.streams.attribution.watchdog import stall_of
from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    InitComplete,
    JobFact,
    JobPlacement,
    NetDevice,
    NetDevices,
    NetError,
    NicEvent,
    Progress,
    RankInfo,
    RasReport,
    WatchdogState,
    XidEvent,
)
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric

Flow = tuple[Endpoint, Endpoint]
SNAPSHOT_VERSION = 1
#: How many of each kind of hang evidence a verdict shows (verdicts.py shows at most 3).
EVIDENCE_SHOWN = 3


class Change(enum.IntFlag):
    """What a new fact changed in a job's view."""

    NONE = 0
    FLOWS = 1
    EVIDENCE = 2
    #: A host the job was not known on: the links of a job without channel flows change.
    HOSTS = 4


@dataclass(slots=True)
class JobView:
    job_id: str
    net_devs: dict[tuple[str, int], tuple[NetDevice, ...]] = field(default_factory=dict)
    rank_host: dict[tuple[str, int], str] = field(default_factory=dict)
    comm_size: dict[str, int] = field(default_factory=dict)
    edges: dict[tuple[str, int, int, int, str], ChannelEdge] = field(default_factory=dict)
    hosts: set[str] = field(default_factory=set)
    #: The GPU indexes the job holds on a host, as its scheduler printed them (none: unknown).
    host_gpus: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # Hang evidence by where it was read, so a fact delivered twice counts once.
    timeouts_at: dict[tuple[str, int], CollectiveTimeout] = field(default_factory=dict)
    net_errors_at: dict[tuple[str, int], NetError] = field(default_factory=dict)
    xids_at: dict[tuple[str, int], XidEvent] = field(default_factory=dict)
    ras_at: dict[tuple[str, int], RasReport] = field(default_factory=dict)
    nics_at: dict[tuple[str, int], NicEvent] = field(default_factory=dict)
    watchdogs_at: dict[tuple[str, int], WatchdogState] = field(default_factory=dict)
    pace: Pace = field(default_factory=Pace)
    first_ts_ns: int | None = None
    last_ts_ns: int | None = None
    #: Whether anything but the scheduler spoke of the job: a placement alone tells where a
    #: job runs, never how it is doing.
    heard: bool = False
    #: The last placement read at each origin (source, line), as its digest: a scheduler
    #: record delivered again is no new fact.
    placements: dict[tuple[str, int], str] = field(default_factory=dict)
    _flows: set[Flow] | None = None
    _stall_floor_ns: int = 2**63
    _peers: set[tuple[str, str | None]] = field(default_factory=set)
    # Per kind of hang evidence, the sort keys of the facts a verdict shows (the first few
    # by time and file), whatever order the facts arrived in.
    _shown: dict[str, list[tuple[int, str, int]]] = field(default_factory=dict)

    def add(self, fact: JobFact) -> Change:
        """Record a fact and say what it changed: the flow set, the verdict's inputs, or nothing.

        Hang evidence changes the inputs when it moves the stall earlier, names a new peer, is
        among the first few of its kind by time and file (those are shown as evidence, and a
        streaming worker gets the files in any order), or is an Xid; a later watchdog line of
        the same hang changes nothing.
        """
        # A job placed by its scheduler and known by nothing else is unknown: its first own
        # line makes it healthy (or not), which is news.
        news = not self.heard and bool(self.hosts) and not isinstance(fact, JobPlacement)
        self.heard |= not isinstance(fact, JobPlacement)
        new_host = bool(fact.host) and fact.host not in self.hosts
        change = self._record(fact, new_host)
        if new_host:
            change |= Change.HOSTS
        return change | Change.EVIDENCE if news else change

    def _record(self, fact: JobFact, new_host: bool) -> Change:
        ts = fact.ts_ns
        if ts:
            self.first_ts_ns = ts if self.first_ts_ns is None else min(self.first_ts_ns, ts)
            self.last_ts_ns = ts if self.last_ts_ns is None else max(self.last_ts_ns, ts)
        if fact.host:
            self.hosts.add(fact.host)
        match fact:
            case NetDevices():
                self.net_devs[fact.host, fact.pid] = fact.devices
            case RankInfo():
                self.rank_host[fact.comm_id, fact.rank] = fact.host
                self.comm_size[fact.comm_id] = max(fact.nranks, self.comm_size.get(fact.comm_id, 0))
            case ChannelEdge():
                if fact.net_dev is None:
                    return Change.NONE
                key = (fact.comm_id, fact.channel, fact.src_rank, fact.dst_rank, fact.direction)
                self.edges[key] = fact
            case InitComplete():
                self.rank_host.setdefault((fact.comm_id, fact.rank), fact.host)
                return Change.NONE
            case CollectiveTimeout():
                return self._evidence(self.timeouts_at, fact, fact.started_ns)
            case NetError():
                new_peer = (fact.host, fact.peer) not in self._peers
                self._peers.add((fact.host, fact.peer))
                change = self._evidence(self.net_errors_at, fact, fact.ts_ns)
                return Change.EVIDENCE if new_peer else change
            case XidEvent():
                self._evidence(self.xids_at, fact, 0)
                return Change.EVIDENCE
            case RasReport():
                # A healthy summary row is kept (it is shown) but dates no stall.
                return self._evidence(self.ras_at, fact, fact.ts_ns if fact.trouble else 0)
            case WatchdogState():
                return self._evidence(self.watchdogs_at, fact, stall_of(fact))
            case NicEvent():
                self._evidence(self.nics_at, fact, 0)
                return Change.EVIDENCE
            case Progress():
                return Change.EVIDENCE if self.pace.add(fact) else Change.NONE
            case JobPlacement():
                self.placements[fact.origin.source, fact.origin.line_no] = _digest(fact)
                # The scheduler's hosts: all a job at NCCL_DEBUG=WARN has to place it.
                known = len(self.hosts)
                self.hosts.update(h.name for h in fact.hosts)
                # A later record of an ended job prints no GPU indexes (the allocation is
                # released): what was printed while it ran is kept.
                gpus = {h.name: h.gpus for h in fact.hosts if h.gpus}
                new_gpus = any(self.host_gpus.get(n) != g for n, g in gpus.items())
                self.host_gpus.update(gpus)
                if len(self.hosts) == known and not new_host and not new_gpus:
                    return Change.NONE
        self._flows = None
        return Change.FLOWS

    def knows(self, placement: JobPlacement) -> bool:
        """Whether this very placement was read at its origin already (a redelivery)."""
        at = (placement.origin.source, placement.origin.line_no)
        return self.placements.get(at) == _digest(placement)

    def _evidence(self, into: dict[tuple[str, int], Any], fact: Any, stall_ns: int) -> Change:
        at = _at(fact)
        if at in into:
            return Change.NONE
        into[at] = fact
        lowers = 0 < stall_ns < self._stall_floor_ns
        if lowers:
            self._stall_floor_ns = stall_ns
        shown = self._shown.setdefault(type(fact).__name__, [])
        key = (fact.ts_ns, *at)
        if len(shown) < EVIDENCE_SHOWN or key < shown[-1]:
            bisect.insort(shown, key)
            del shown[EVIDENCE_SHOWN:]
            return Change.EVIDENCE
        return Change.EVIDENCE if lowers else Change.NONE

    @property
    def timeouts(self) -> list[CollectiveTimeout]:
        return list(self.timeouts_at.values())

    @property
    def net_errors(self) -> list[NetError]:
        return list(self.net_errors_at.values())

    @property
    def xids(self) -> list[XidEvent]:
        return list(self.xids_at.values())

    @property
    def ras(self) -> list[RasReport]:
        return list(self.ras_at.values())

    @property
    def nic_events(self) -> list[NicEvent]:
        return list(self.nics_at.values())

    @property
    def watchdogs(self) -> list[WatchdogState]:
        return list(self.watchdogs_at.values())

    @property
    def ranks(self) -> int:
        return max(self.comm_size.values(), default=0)

    def world_rank_host(self, rank: int) -> str | None:
        """Host of a global (PyTorch) rank: its rank in the largest communicator."""
        if not self.comm_size:
            return None
        world = max(self.comm_size, key=lambda c: (self.comm_size[c], c))
        return self.rank_host.get((world, rank))

    def _nic(self, edge: ChannelEdge) -> Endpoint | None:
        devices = self.net_devs.get((edge.host, edge.pid), ())
        for dev in devices:
            if dev.index == edge.net_dev:
                return Endpoint(edge.host, dev.name)
        return None

    def flows(self, fabric: Fabric) -> set[Flow]:
        """NIC pairs the job's channels connect, each as a sorted pair.

        A hop is printed by both its ends, each naming its own NIC. When only one end's log is
        in the capture, the other end is assumed to use the NIC of the same rail, which is what
        NCCL picks on a rail-optimized fabric.
        """
        if self._flows is not None:
            return self._flows
        flows: set[Flow] = set()
        for (comm, channel, src, dst, direction), edge in self.edges.items():
            local = self._nic(edge)
            if local is None:
                continue
            peer_rank = dst if direction != "receive" else src
            other_dir = "receive" if direction == "send" else "send"
            twin = self.edges.get((comm, channel, src, dst, other_dir))
            remote = self._nic(twin) if twin is not None else None
            if remote is None:
                peer_host = self.rank_host.get((comm, peer_rank))
                rail = fabric.nic_rail.get(local)
                peer_nic = fabric.rail_nic.get((peer_host or "", rail if rail is not None else -1))
                if peer_host is None or peer_nic is None:
                    continue
                remote = Endpoint(peer_host, peer_nic)
            if remote.device == local.device:
                continue
            a, b = sorted((local, remote), key=lambda e: (e.device, e.interface))
            flows.add((a, b))
        self._flows = flows
        return flows

    def snapshot(self) -> dict[str, Any]:
        """Everything the view holds, as JSON types: the job's state in a streaming table."""
        return {
            "v": SNAPSHOT_VERSION,
            "job_id": self.job_id,
            "net_devs": [[h, p, codec.encode(d)] for (h, p), d in self.net_devs.items()],
            "rank_host": [[c, r, h] for (c, r), h in self.rank_host.items()],
            "comm_size": self.comm_size,
            "edges": [codec.encode(e) for e in self.edges.values()],
            "hosts": sorted(self.hosts),
            "host_gpus": sorted([h, list(g)] for h, g in self.host_gpus.items()),
            "evidence": [
                codec.encode(f)
                for f in (
                    *self.timeouts_at.values(),
                    *self.net_errors_at.values(),
                    *self.xids_at.values(),
                    *self.ras_at.values(),
                    *self.nics_at.values(),
                    *self.watchdogs_at.values(),
                )
            ],
            "pace": self.pace.snapshot(),
            "first_ts_ns": self.first_ts_ns,
            "last_ts_ns": self.last_ts_ns,
            "heard": self.heard,
            "placements": sorted([src, line, d] for (src, line), d in self.placements.items()),
        }

    @classmethod
    def restore(cls, snap: dict[str, Any], pace_rules: PaceRules = DEFAULT_RULES) -> JobView:
        """The view `snapshot` saved, reading step reports by `pace_rules` (the settings'
        rules, which a snapshot does not carry)."""
        if snap.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"unknown JobView snapshot version {snap.get('v')!r}")
        view = cls(snap["job_id"], pace=Pace(rules=pace_rules))
        for host, pid, devs in snap["net_devs"]:
            view.net_devs[host, pid] = tuple(codec.decode(d, NetDevice) for d in devs)
        view.rank_host = {(c, r): h for c, r, h in snap["rank_host"]}
        view.comm_size = dict(snap["comm_size"])
        for raw in snap["edges"]:
            view.add(codec.decode(raw, ChannelEdge))
        for raw in snap["evidence"]:
            view.add(codec.decode(raw))
        view.hosts = set(snap["hosts"])
        # absent from views saved before GPU indexes were kept
        view.host_gpus = {h: tuple(g) for h, g in snap.get("host_gpus", [])}
        if "pace" in snap:  # absent from views saved before step reports were read
            view.pace = Pace.restore(snap["pace"], pace_rules)
        view.first_ts_ns, view.last_ts_ns = snap["first_ts_ns"], snap["last_ts_ns"]
        view.heard = snap.get("heard", True)  # views saved before placements were read: logs
        view.placements = {(src, line): d for src, line, d in snap.get("placements", [])}
        return view


def _digest(placement: JobPlacement) -> str:
    return hashlib.blake2b(orjson.dumps(codec.encode(placement)), digest_size=12).hexdigest()


def _at(
    fact: CollectiveTimeout | NetError | XidEvent | RasReport | NicEvent | WatchdogState,
) -> tuple[str, int]:
    return (fact.origin.source, fact.origin.line_no)
