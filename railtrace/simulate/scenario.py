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

from railtrace.topology.attrs import Role
from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import Endpoint, LinkRef
from railtrace.topology.fabric import Fabric, build_fabric, link_id
from railtrace.topology.paths import PathFinder
from railtrace.topology.reference import SU_NODES, ReferenceDesign, rail_optimized

NS = 1_000_000_000
#: Bytes per second one ring channel moves while the job is busy (about 360 Gb/s).
FLOW_RATE = 45e9


class Fault(StrEnum):
    """What goes wrong.

    `app-hang` stalls a job for a reason outside the fabric (a deadlock in the training code, a
    stuck data loader): nothing on the links or GPUs explains it, and a link elsewhere goes
    down at the same moment, so the only right verdict is `unknown`. `gray` is a link that
    stays up but corrupts a small share of frames: the job slows down and never hangs.
    `pfc-storm` is a NIC that stops draining its queue: its pauses spread upstream through the
    leaf and the spines, so many ports see storms while one is the source. `several` strikes
    two jobs at once with different faults. `optic` is a transceiver dying on a host's cable:
    its receive power falls for minutes, errors follow, then the link goes down. `miswire` is a
    host whose two cables were swapped at the leaves (the plan says otherwise; LLDP shows it),
    and one of those cables goes down. `ecmp` takes down a leaf-spine link the job's flow was
    hashed onto while another uplink of that leaf, which the job could have used but did not,
    goes down at the same moment: only the traffic tells which one carried the job.
    `speed-down` is a link that renegotiates at half its speed: up again within seconds, it
    slows the job for good.
    """

    LINK_DOWN = "link-down"
    FLAP = "flap"
    CRC_BURST = "crc-burst"
    PFC_STORM = "pfc-storm"
    NIC_DOWN = "nic-down"
    GPU_XID = "gpu-xid"
    OPTIC = "optic"
    MISWIRE = "miswire"
    ECMP = "ecmp"
    GRAY = "gray"
    SPEED_DOWN = "speed-down"
    APP_HANG = "app-hang"
    SEVERAL = "several"
    NONE = "none"


#: Faults that the affected job's NICs see as transport errors against a peer.
TRANSPORT_FAULTS = frozenset(
    {
        Fault.LINK_DOWN,
        Fault.FLAP,
        Fault.CRC_BURST,
        Fault.NIC_DOWN,
        Fault.OPTIC,
        Fault.MISWIRE,
        Fault.ECMP,
    }
)
#: Faults that take their link down for good.
DOWN_FAULTS = frozenset({Fault.LINK_DOWN, Fault.NIC_DOWN, Fault.OPTIC, Fault.MISWIRE, Fault.ECMP})
#: Faults on a host's cable only (the switch end is a leaf).
HOST_CABLE_FAULTS = frozenset({Fault.NIC_DOWN, Fault.PFC_STORM, Fault.OPTIC})
#: Faults that slow a job down rather than stop it.
SLOWING_FAULTS = frozenset({Fault.GRAY, Fault.SPEED_DOWN})
#: What `several` draws from: one fault for the first job, another for the second.
SEVERAL_FIRST = (Fault.LINK_DOWN, Fault.FLAP, Fault.CRC_BURST, Fault.NIC_DOWN)
SEVERAL_SECOND = (Fault.LINK_DOWN, Fault.CRC_BURST, Fault.GPU_XID, Fault.GRAY)
#: Every switch port's speed, and a renegotiated one's.
FULL_SPEED_GBPS = 800.0
LOW_SPEED_GBPS = 400.0


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
    slowed_ns: int | None = None  # from when its steps take `slowdown` times as long
    slowdown: float = 1.0

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
class Strike:
    """One fault and the job it hits: on a link (`link`), or on a GPU of a node (`node`)."""

    kind: Fault
    job: SimJob
    at_ns: int
    link: LinkRef | None = None
    node: str | None = None
    gpu: int | None = None


@dataclass(slots=True)
class Scenario:
    """`design.plan` is the cabling plan (what `cables.csv` says); `fabric` is the fabric as
    cabled, which traffic follows. They differ only where `miswired` lists cables."""

    seed: int
    fault: Fault
    design: ReferenceDesign
    fabric: Fabric
    jobs: list[SimJob]
    start_ns: int
    end_ns: int  # of the logs
    sample_s: int
    watchdog_s: int
    strikes: list[Strike] = field(default_factory=list)
    telemetry_end_ns: int = 0  # the switches' samples stop here
    miswired: list[str] = field(default_factory=list)  # link ids of cables unlike the plan
    unrelated: list[Anomaly] = field(default_factory=list)
    address: dict[Endpoint, str] = field(default_factory=dict)

    # The first strike, which every case but `none` has: what most callers ask about.
    @property
    def fault_at_ns(self) -> int | None:
        return self.strikes[0].at_ns if self.strikes else None

    @property
    def fault_link(self) -> LinkRef | None:
        return self.strikes[0].link if self.strikes else None

    @property
    def fault_node(self) -> str | None:
        return self.strikes[0].node if self.strikes else None

    @property
    def fault_gpu(self) -> int | None:
        return self.strikes[0].gpu if self.strikes else None

    @property
    def affected(self) -> SimJob | None:
        return self.strikes[0].job if self.strikes else None

    def strike_of(self, job: SimJob) -> Strike | None:
        return next((s for s in self.strikes if s.job is job), None)


def _place_jobs(rng: random.Random, design: ReferenceDesign) -> list[list[str]]:
    """Three jobs: the first straddles a scalable-unit boundary (so it crosses spines)."""
    n = len(design.hosts)
    big = max(2, n // 4)
    small = max(2, n // 8)
    # A boundary between scalable units that the first job fits around.
    fits = [
        SU_NODES * k
        for k in range(1, n // SU_NODES)
        if SU_NODES * k - big // 2 >= 0 and SU_NODES * k + big - big // 2 <= n
    ]
    boundary = rng.choice(fits) if fits else n // 2
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
    placed = _place_jobs(rng, design)
    cabled, miswired = design.plan, list[str]()
    if fault is Fault.MISWIRE:
        cabled, miswired = _swap_two_cables(rng, design, rng.choice(placed[0]))
    fabric = build_fabric(cabled)
    paths = PathFinder(fabric)
    start_ns = (1_778_000_000 + 86_400 * (seed % 365)) * NS  # spring 2026 onward, whole seconds
    jobs = []
    for j, hosts in enumerate(placed):
        job = SimJob(
            job_id=str(4_810_000 + rng.randrange(10_000) * 10 + j),
            hosts=hosts,
            comm_id=f"0x{rng.getrandbits(64):016x}",
            base_pid=10_000 + rng.randrange(50_000),
            started_ns=start_ns - (300 - 3 * j) * NS,  # running for minutes already
        )
        job.flows = _ring_flows(rng, paths, hosts)
        jobs.append(job)
    sc = Scenario(seed, fault, design, fabric, jobs, start_ns, 0, sample_s, watchdog_s)
    sc.miswired = miswired
    for h, host in enumerate(design.hosts):
        for rail in range(design.rails):
            sc.address[Endpoint(host, f"mlx5_{rail}")] = f"10.{rail}.{h // 250}.{h % 250 + 1}"
    used = {lid for job in jobs for flow in job.flows for lid in flow.path}
    at = start_ns + (100 + rng.randrange(40)) * NS + rng.randrange(NS)
    if fault is Fault.SEVERAL and len(jobs) > 1:
        # Each fault stays off the other job's links, so each job has one culprit.
        links = [{lid for flow in job.flows for lid in flow.path} for job in jobs[:2]]
        _strike(rng, sc, rng.choice(SEVERAL_FIRST), jobs[0], at, links[1])
        second_at = at + rng.randrange(0, 20 * NS)
        _strike(rng, sc, rng.choice(SEVERAL_SECOND), jobs[1], second_at, links[0])
    elif fault not in (Fault.NONE, Fault.SEVERAL):
        _strike(rng, sc, fault, jobs[0], at, set())
    _add_unrelated(rng, sc, used)
    # Telemetry covers the faults and what follows them; the logs go on until the watchdogs
    # have fired, as a capture taken after a job died holds them.
    telemetry = max([sc.start_ns + 240 * NS] + [a.at_ns + 60 * NS for a in sc.unrelated])
    last = telemetry
    for strike in sc.strikes:
        telemetry = max(telemetry, strike.at_ns + 180 * NS)
        if strike.job.stalled_ns is not None:
            last = max(last, strike.job.stalled_ns + (watchdog_s + 45) * NS)
        if strike.job.slowed_ns is not None:
            telemetry = max(telemetry, strike.job.slowed_ns + 300 * NS)
    sc.telemetry_end_ns = telemetry
    sc.end_ns = max(last, telemetry)
    return sc


def _strike(
    rng: random.Random, sc: Scenario, kind: Fault, job: SimJob, at: int, avoid: set[str]
) -> Strike:
    """Put a fault of `kind` on `job` at `at`; a link fault goes on a link the job's flows
    were hashed onto, and not on one in `avoid` (another struck job's links)."""
    strike = Strike(kind, job, at)
    sc.strikes.append(strike)
    if kind in SLOWING_FAULTS:
        job.slowed_ns = at
        job.slowdown = 1.3 + 0.5 * rng.random()
    elif kind is not Fault.NONE:
        # The collective that hangs was launched a moment before the fault hit.
        job.stalled_ns = at - rng.randrange(50, 900) * 1_000_000
    if kind is Fault.GPU_XID:
        strike.node = rng.choice(job.hosts)
        strike.gpu = rng.randrange(8)
        return strike
    if kind is Fault.APP_HANG:
        return strike
    if kind is Fault.MISWIRE:
        strike.link = sc.fabric.links[rng.choice(sc.miswired)]
        return strike
    host_links = sorted(({f.path[0] for f in job.flows} | {f.path[-1] for f in job.flows}) - avoid)
    fabric_links = sorted({lid for f in job.flows for lid in f.path[1:-1]} - avoid)
    uplinks = [
        lid
        for lid in fabric_links
        if Role.LEAF
        in (
            sc.fabric.role(sc.fabric.links[lid].a.device),
            sc.fabric.role(sc.fabric.links[lid].b.device),
        )
    ]
    if kind is Fault.ECMP and uplinks:
        lid = rng.choice(uplinks)  # a leaf's uplink: its other uplinks are the job's options
    elif kind in HOST_CABLE_FAULTS or not fabric_links or rng.random() < 0.5:
        lid = rng.choice(host_links)
    else:
        lid = rng.choice(fabric_links)
    strike.link = sc.fabric.links[lid]
    return strike


def _swap_two_cables(
    rng: random.Random, design: ReferenceDesign, host: str
) -> tuple[CablePlan, list[str]]:
    """The plan with the leaf ends of two of `host`'s cables (neighbouring rails) swapped, and
    the ids of the two cables as they are then cabled."""
    rail = rng.randrange(design.rails - 1)
    nics = {Endpoint(host, f"mlx5_{rail}"), Endpoint(host, f"mlx5_{rail + 1}")}
    ours = [c for c in design.plan.cables if c.a in nics or c.b in nics]
    first, second = sorted(ours, key=lambda c: (c.a, c.b))
    nic = [c.a if c.a in nics else c.b for c in (first, second)]
    leaf = [c.b if c.a in nics else c.a for c in (first, second)]
    swapped = [Cable(nic[0], leaf[1]), Cable(nic[1], leaf[0])]
    kept = [c for c in design.plan.cables if c not in (first, second)]
    return CablePlan([*kept, *swapped]), [link_id(c.a, c.b) for c in swapped]


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
    if any(strike.kind is Fault.APP_HANG for strike in sc.strikes) and sc.fault_at_ns is not None:
        at = sc.fault_at_ns + rng.randrange(1, 5) * NS
        sc.unrelated.append(Anomaly(Fault.LINK_DOWN, sc.fabric.links[rng.choice(idle)], at))
    for strike in sc.strikes:
        if strike.kind is Fault.ECMP and strike.link is not None:
            _add_decoy_member(rng, sc, strike, set(idle))


def _add_decoy_member(rng: random.Random, sc: Scenario, strike: Strike, idle: set[str]) -> None:
    """Another uplink of the struck link's leaf, one no flow was hashed onto, goes down within
    two seconds of the fault: in time and in the job's path set it is as likely a culprit."""
    assert strike.link is not None
    leaf = next(
        e.device for e in (strike.link.a, strike.link.b) if sc.fabric.role(e.device) == Role.LEAF
    )
    members = sorted(
        lid
        for lid in idle
        if leaf in (sc.fabric.links[lid].a.device, sc.fabric.links[lid].b.device)
        and all(
            sc.fabric.role(d) != Role.HOST
            for d in (sc.fabric.links[lid].a.device, sc.fabric.links[lid].b.device)
        )
    )
    if members:
        at = strike.at_ns + rng.randrange(0, 2 * NS)
        sc.unrelated.append(Anomaly(Fault.LINK_DOWN, sc.fabric.links[rng.choice(members)], at))
