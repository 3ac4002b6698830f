"""The plan of a simulated incident: which jobs run where, which links their flows were hashed
onto, what fault strikes when, and what unrelated trouble happens elsewhere.

Everything is drawn from one seeded RNG, so a seed names an incident exactly. The fault is put
on a link that the affected job's flows really crossed (its ECMP choice), as in life, where a
job only stalls on a link it was using.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum

from railtrace.streams.records import Endpoint, LinkRef
from railtrace.topology.attrs import Role
from railtrace.topology.fabric import Fabric, build_fabric
from railtrace.topology.paths import PathFinder
from railtrace.topology.reference import SU_NODES, ReferenceDesign, rail_optimized

NS = 1_000_000_000
#: Bytes per second one ring channel moves while the job is busy (about 360 Gb/s).
FLOW_RATE = 45e9


class Fault(StrEnum):
    """What goes wrong. `app-hang` stalls a job for a reason outside the fabric (a deadlock in
    the training code, a stuck data loader): nothing on the links or GPUs explains it, and a
    link elsewhere goes down at the same moment, so the only right verdict is `unknown`."""

    LINK_DOWN = "link-down"
    FLAP = "flap"
    CRC_BURST = "crc-burst"
    PFC_STORM = "pfc-storm"
    NIC_DOWN = "nic-down"
    GPU_XID = "gpu-xid"
    APP_HANG = "app-hang"
    NONE = "none"


#: Faults that the affected job's NICs see as transport errors against a peer.
TRANSPORT_FAULTS = frozenset({Fault.LINK_DOWN, Fault.FLAP, Fault.CRC_BURST, Fault.NIC_DOWN})


@dataclass(frozen=True, slots=True)
class SimFlow:
    channel: int
    src: Endpoint
    dst: Endpoint
    path: tuple[str, ...]  # link ids the flow was hashed onto, host cable to host cable


@dataclass(slots=True)
class SimJob:
    job_id: str
    hosts: list[str]
    comm_id: str
    base_pid: int
    flows: list[SimFlow] = field(default_factory=list)
    started_ns: int = 0
    stalled_ns: int | None = None  # start of the collective that never finished

    @property
    def ranks(self) -> int:
        return 8 * len(self.hosts)


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A fault-like event on a link no job uses, or far from any stall: noise to ignore."""

    kind: Fault
    link: LinkRef
    at_ns: int


@dataclass(slots=True)
class Scenario:
    seed: int
    fault: Fault
    design: ReferenceDesign
    fabric: Fabric
    jobs: list[SimJob]
    start_ns: int
    end_ns: int
    sample_s: int
    watchdog_s: int
    fault_at_ns: int | None = None
    fault_link: LinkRef | None = None
    fault_node: str | None = None
    fault_gpu: int | None = None
    affected: SimJob | None = None
    unrelated: list[Anomaly] = field(default_factory=list)
    address: dict[Endpoint, str] = field(default_factory=dict)


def _place_jobs(rng: random.Random, design: ReferenceDesign) -> list[list[str]]:
    """Three jobs: the first straddles a scalable-unit boundary (so it crosses spines)."""
    n = len(design.hosts)
    big = max(2, n // 4)
    small = max(2, n // 8)
    boundary = SU_NODES * rng.randrange(1, max(2, n // SU_NODES)) if n > SU_NODES else n // 2
    first = list(range(boundary - big // 2, boundary + big - big // 2))
    free = [i for i in range(n) if i not in set(first)]
    offset = rng.randrange(0, max(1, len(free) - big - small))
    second = free[offset : offset + big]
    rest = [i for i in free if i not in set(second)]
    third = rest[-small:] if len(rest) >= small + 4 else []
    return [[design.hosts[i] for i in job] for job in (first, second, third) if len(job) >= 2]


def _ring_flows(rng: random.Random, paths: PathFinder, hosts: list[str]) -> list[SimFlow]:
    """Channel c of a rail-optimized ring crosses the network on NIC c of consecutive nodes."""
    flows = []
    for channel in range(8):
        for i, host in enumerate(hosts):
            src = Endpoint(host, f"mlx5_{channel}")
            dst = Endpoint(hosts[(i + 1) % len(hosts)], f"mlx5_{channel}")
            options = list(paths.candidate_paths(src, dst, limit=4096))
            flows.append(SimFlow(channel, src, dst, options[rng.randrange(len(options))]))
    return flows


def plan_scenario(
    nodes: int, fault: Fault, seed: int, watchdog_s: int = 600, sample_s: int = 10
) -> Scenario:
    """Draw a whole incident from `seed`."""
    rng = random.Random(f"{nodes}-{fault}-{seed}")
    design = rail_optimized(nodes)
    fabric = build_fabric(design.plan)
    paths = PathFinder(fabric)
    start_ns = (1_778_000_000 + 86_400 * (seed % 365)) * NS  # spring 2026 onward, whole seconds
    jobs = []
    for j, hosts in enumerate(_place_jobs(rng, design)):
        job = SimJob(
            job_id=str(4_810_000 + rng.randrange(10_000) * 10 + j),
            hosts=hosts,
            comm_id=f"0x{rng.getrandbits(64):016x}",
            base_pid=10_000 + rng.randrange(50_000),
            started_ns=start_ns + (5 + 3 * j) * NS,
        )
        job.flows = _ring_flows(rng, paths, hosts)
        jobs.append(job)
    sc = Scenario(seed, fault, design, fabric, jobs, start_ns, 0, sample_s, watchdog_s)
    for h, host in enumerate(design.hosts):
        for rail in range(design.rails):
            sc.address[Endpoint(host, f"mlx5_{rail}")] = f"10.{rail}.{h // 250}.{h % 250 + 1}"
    used = {lid for job in jobs for flow in job.flows for lid in flow.path}
    if fault is not Fault.NONE:
        _strike(rng, sc, jobs[0], used)
    _add_unrelated(rng, sc, used)
    last = max([sc.start_ns + 240 * NS] + [a.at_ns + 60 * NS for a in sc.unrelated])
    if sc.affected is not None and sc.affected.stalled_ns is not None:
        last = max(last, sc.affected.stalled_ns + (watchdog_s + 45) * NS)
    sc.end_ns = last
    return sc


def _strike(rng: random.Random, sc: Scenario, job: SimJob, used: set[str]) -> None:
    sc.affected = job
    sc.fault_at_ns = sc.start_ns + (100 + rng.randrange(40)) * NS + rng.randrange(NS)
    # The collective that hangs was launched a moment before the fault hit.
    job.stalled_ns = sc.fault_at_ns - rng.randrange(50, 900) * 1_000_000
    if sc.fault is Fault.GPU_XID:
        sc.fault_node = rng.choice(job.hosts)
        sc.fault_gpu = rng.randrange(8)
        return
    if sc.fault is Fault.APP_HANG:
        return
    host_links = sorted({f.path[0] for f in job.flows} | {f.path[-1] for f in job.flows})
    fabric_links = sorted({lid for f in job.flows for lid in f.path[1:-1]})
    if sc.fault in (Fault.NIC_DOWN, Fault.PFC_STORM) or not fabric_links or rng.random() < 0.5:
        lid = rng.choice(host_links)
    else:
        lid = rng.choice(fabric_links)
    sc.fault_link = sc.fabric.links[lid]
    assert lid in used


def _add_unrelated(rng: random.Random, sc: Scenario, used: set[str]) -> None:
    """Trouble elsewhere: links no job's flow was hashed onto, at random times; for an
    application hang, also one going down just as the job stops, a decoy in time."""
    idle = sorted(
        lid
        for lid, ref in sc.fabric.links.items()
        if lid not in used
        and sc.fabric.role(ref.a.device) != Role.SUPER_SPINE
        and sc.fabric.role(ref.b.device) != Role.SUPER_SPINE
    )
    kinds = [Fault.LINK_DOWN, Fault.FLAP, Fault.CRC_BURST]
    for _ in range(3):
        at = sc.start_ns + (30 + rng.randrange(400)) * NS
        sc.unrelated.append(Anomaly(rng.choice(kinds), sc.fabric.links[rng.choice(idle)], at))
    if sc.fault is Fault.APP_HANG and sc.fault_at_ns is not None:
        at = sc.fault_at_ns + rng.randrange(1, 5) * NS
        sc.unrelated.append(Anomaly(Fault.LINK_DOWN, sc.fabric.links[rng.choice(idle)], at))
