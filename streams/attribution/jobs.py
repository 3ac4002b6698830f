"""What the logs say about one job: where its ranks run, which NIC pairs its channels use, and
whether (and since when) it stopped.

Built incrementally from job facts in event-time order; the derived flow set is recomputed only
when a fact that changes it arrives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    Endpoint,
    InitComplete,
    JobFact,
    NetDevice,
    NetDevices,
    NetError,
    RankInfo,
    RasReport,
    XidEvent,
)
from railtrace.topology.fabric import Fabric

Flow = tuple[Endpoint, Endpoint]


@dataclass(slots=True)
class JobView:
    job_id: str
    net_devs: dict[tuple[str, int], tuple[NetDevice, ...]] = field(default_factory=dict)
    rank_host: dict[tuple[str, int], str] = field(default_factory=dict)
    comm_size: dict[str, int] = field(default_factory=dict)
    edges: dict[tuple[str, int, int, int, str], ChannelEdge] = field(default_factory=dict)
    hosts: set[str] = field(default_factory=set)
    timeouts: list[CollectiveTimeout] = field(default_factory=list)
    net_errors: list[NetError] = field(default_factory=list)
    xids: list[XidEvent] = field(default_factory=list)
    ras: list[RasReport] = field(default_factory=list)
    init_complete: int = 0
    first_ts_ns: int | None = None
    last_ts_ns: int | None = None
    _flows: set[Flow] | None = None

    def add(self, fact: JobFact) -> bool:
        """Record a fact; True when it changes the job's flow set."""
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
                    return False
                key = (fact.comm_id, fact.channel, fact.src_rank, fact.dst_rank, fact.direction)
                self.edges[key] = fact
            case InitComplete():
                self.init_complete += 1
                self.rank_host.setdefault((fact.comm_id, fact.rank), fact.host)
                return False
            case CollectiveTimeout():
                self.timeouts.append(fact)
                return False
            case NetError():
                self.net_errors.append(fact)
                return False
            case XidEvent():
                self.xids.append(fact)
                return False
            case RasReport():
                self.ras.append(fact)
                return False
        self._flows = None
        return True

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
                nics = fabric.host_nics.get(peer_host or "", ())
                if peer_host is None or rail is None or rail >= len(nics):
                    continue
                remote = Endpoint(peer_host, nics[rail])
            if remote.device == local.device:
                continue
            a, b = sorted((local, remote), key=lambda e: (e.device, e.interface))
            flows.add((a, b))
        self._flows = flows
        return flows
