"""One incident in a world: the jobs, their flows, the fault and what it does to them.

What a fault does is decided here from how fabrics and NCCL behave, and recorded as the truth:

- a host's cable down (or its NIC failing) breaks the queue pairs on it: the job stalls and
  its ranks on both ends of those flows report transport errors;
- a leaf or spine uplink down is routed around: under ECMP and InfiniBand the flows hashed onto
  it black-hole until the route is withdrawn, and the job stalls when that outlasts NCCL's
  retries (half the time here), or survives it; under spraying the job only loses a share of
  its bandwidth and survives;
- frame errors at a ratio r slow the flows crossing the link (retransmissions: about r x 2e4
  of their communication time, gated by the ring's slowest hop); under 5% slower the job is
  not affected at all; at a ratio of 5e-5 or more on a host's cable the NIC's retries run out
  half the time and the job stalls;
- a port renegotiated at half speed doubles the communication time of the flows on it;
- a PFC storm is a NIC that stops draining: the job stalls, and its pauses spread upstream;
- a GPU off the bus stalls the job, a node fault; an application hang stalls it with no
  fabric cause while a link elsewhere goes down at the same moment; a checkpoint pause stops
  the job's steps and traffic for minutes and then it resumes: no fault at all;
- a switch whose counters are cleared (`reset-only`) is no fault either.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from railtrace.world.dimensions import Dimensions
from railtrace.world.routing import Route, Router
from railtrace.world.shape import RAILS, Cable, Cluster, Port

NS = 1_000_000_000
#: Bytes one ring flow moves per second while its job communicates (about 320 Gb/s).
FLOW_RATE = 40e9
#: Frame error ratio at which a host cable's queue pairs may run out of retries.
FATAL_RATIO = 5e-5
#: A job slowed by less than this is not affected.
NOTICEABLE = 1.05


@dataclass(frozen=True, slots=True)
class Flow:
    channel: int
    src: Port
    dst: Port
    src_rank: int
    dst_rank: int
    nic_index: int  # the index in the NCCL device list of both ends
    route: Route


@dataclass(slots=True)
class Job:
    job_id: str
    hosts: list[str]
    step_s: float
    comm_fraction: float
    started_ns: int
    flows: list[Flow] = field(default_factory=list)
    #: The collective that never finished started here (None: never stalled).
    stalled_ns: int | None = None
    slowed_ns: int | None = None
    slowdown: float = 1.0
    #: A checkpoint pause: (from, to), when the job neither steps nor talks.
    paused: tuple[int, int] | None = None
    base_pid: int = 0
    comm_id: str = ""

    @property
    def ranks(self) -> int:
        return RAILS * len(self.hosts)

    def cables(self) -> set[Cable]:
        return {cable for f in self.flows for cable, _ in f.route}


@dataclass(slots=True)
class LinkFault:
    """What a cable does from `at_ns`: down (and back up at `up_ns`), errors at `ratio`, half
    speed, or pause frames from its host end."""

    cable: Cable
    kind: str  # "down", "flap", "errors", "speed", "pfc"
    at_ns: int
    up_ns: int | None = None
    ratio: float = 0.0


@dataclass(slots=True)
class Strike:
    """The truth for one job: what hit it, and what it should be blamed on."""

    fault: str
    job: Job
    at_ns: int
    cable: Cable | None = None
    node: str | None = None
    gpu: int | None = None
    place: str | None = None
    state: str = "stalled"  # or "slow", "healthy" (the fault did not affect it)
    transport_errors: bool = False


@dataclass(slots=True)
class Incident:
    dims: Dimensions
    cluster: Cluster
    jobs: list[Job]
    start_ns: int
    telemetry_end_ns: int
    end_ns: int
    watchdog_s: int
    strikes: list[Strike] = field(default_factory=list)
    link_faults: list[LinkFault] = field(default_factory=list)
    #: Switches whose counters are cleared at a time (`clear counters`, or a reboot).
    resets: list[tuple[str, int]] = field(default_factory=list)
    #: A switch whose telemetry stops at a time.
    silenced: dict[str, int] = field(default_factory=dict)
    #: Other tenants' and storage flows: (route, bytes/s).
    background: list[tuple[Route, float]] = field(default_factory=list)

    def strike_of(self, job: Job) -> Strike | None:
        return next((s for s in self.strikes if s.job is job), None)


def _place_jobs(rng: random.Random, cluster: Cluster) -> list[list[str]]:
    """Two to four jobs on disjoint nodes; the first spans scalable units when there are
    several, as large jobs do."""
    hosts = list(cluster.hosts)
    n = len(hosts)
    first = max(2, int(n * rng.uniform(0.25, 0.5)))
    start = rng.randrange(0, n - first + 1)
    jobs = [hosts[start : start + first]]
    free = hosts[:start] + hosts[start + first :]
    for _ in range(rng.randint(1, 3)):
        if len(free) < 2:
            break
        size = rng.randint(2, max(2, len(free) // 2))
        at = rng.randrange(0, len(free) - size + 1)
        jobs.append(free[at : at + size])
        free = free[:at] + free[at + size :]
    return jobs


def _ring_flows(
    rng: random.Random, cluster: Cluster, router: Router, hosts: list[str]
) -> list[Flow]:
    """NCCL's rail-local rings: channel c leaves each node through NIC c (of the job's NIC
    list) to the next node's NIC c; two channels per NIC."""
    nics = RAILS * cluster.planes
    flows = []
    for channel in range(2 * nics):
        k = channel % nics
        rail, plane = divmod(k, cluster.planes)
        for i, host in enumerate(hosts):
            nxt = hosts[(i + 1) % len(hosts)]
            src, dst = cluster.nic[(host, rail, plane)], cluster.nic[(nxt, rail, plane)]
            sport = 49152 + rng.randrange(16384)
            exit_gpu = (rail + RAILS - 1) % RAILS
            flows.append(
                Flow(
                    channel,
                    src,
                    dst,
                    i * RAILS + exit_gpu,
                    ((i + 1) % len(hosts)) * RAILS + rail,
                    k,
                    router.route(src, dst, sport),
                )
            )
    return flows


def _job_cables(job: Job, tier: str | None = None) -> list[Cable]:
    return sorted(
        (c for c in job.cables() if tier is None or c.tier == tier),
        key=lambda c: c.name,
    )


def plan(dims: Dimensions, cluster: Cluster, seed: int, watchdog_s: int = 600) -> Incident:
    """Draw the incident of `seed` in `cluster`."""
    rng = random.Random(f"incident-{seed}")
    router = Router(cluster, dims.routing)
    start = (1_780_000_000 + 86_400 * rng.randrange(200) + rng.randrange(86_400)) * NS
    # The fault comes after enough samples for the links' baselines.
    fault_at = start + max(60, 8 * dims.sample_s) * NS + rng.randrange(30 * NS)
    jobs = []
    for j, hosts in enumerate(_place_jobs(rng, cluster)):
        step = dims.step_s * rng.uniform(0.8, 1.25) if j else dims.step_s
        job = Job(
            job_id=str(7_100_000 + rng.randrange(100_000) * 10 + j),
            hosts=hosts,
            step_s=step,
            comm_fraction=rng.uniform(0.2, 0.6),
            started_ns=start - rng.randrange(300, 3600) * NS,
            base_pid=20_000 + rng.randrange(40_000),
            comm_id=f"0x{rng.getrandbits(64):016x}",
        )
        job.flows = _ring_flows(rng, cluster, router, hosts)
        jobs.append(job)
    inc = Incident(dims, cluster, jobs, start, 0, 0, watchdog_s)
    _background(rng, inc, router)
    kinds = [dims.fault if dims.fault != "several" else "link-down"]
    if dims.fault == "several" and len(jobs) > 1:
        kinds = [
            rng.choice(("link-down", "errors", "nic-down", "flap")),
            rng.choice(("gpu-xid", "errors", "link-down")),
        ]
    taken: set[Cable] = set()
    for j, kind in enumerate(kinds):
        at = fault_at + j * rng.randrange(0, 20 * NS)
        _strike(rng, inc, kind, jobs[j], at, taken)
        taken |= jobs[j].cables()
    _noise(rng, inc, fault_at)
    _timeline(inc, fault_at)
    return inc


def _background(rng: random.Random, inc: Incident, router: Router) -> None:
    """Other tenants' flows between nodes no logged job uses (they leave no logs here), and
    storage and checkpoint traffic, all on the same uplinks as the jobs."""
    cluster = inc.cluster
    busy = {h for job in inc.jobs for h in job.hosts}
    hosts = list(cluster.hosts)
    for _ in range(rng.randint(4, 12)):
        a, b = rng.sample(hosts, 2)
        rail, plane = rng.randrange(RAILS), rng.randrange(cluster.planes)
        if a in busy and b in busy and rng.random() < 0.7:
            continue
        route = router.route(
            cluster.nic[(a, rail, plane)],
            cluster.nic[(b, rail, plane)],
            49152 + rng.randrange(16384),
        )
        inc.background.append((route, FLOW_RATE * rng.uniform(0.05, 0.6)))


def _strike(
    rng: random.Random,
    inc: Incident,
    kind: str,
    job: Job,
    at: int,
    avoid: set[Cable],
) -> None:
    strike = Strike(kind, job, at)
    inc.strikes.append(strike)
    hang = at - rng.randrange(50, 900) * 1_000_000  # the collective was launched just before
    if kind in ("none", "reset-only"):
        strike.state = "healthy"
        if kind == "reset-only":
            switch = rng.choice(sorted({c.b.device for c in job.cables()}))
            inc.resets.append((switch, at))
        return
    if kind == "checkpoint":
        strike.state = "healthy"
        job.paused = (at, at + rng.randrange(60, 300) * NS)
        return
    if kind == "gpu-xid":
        strike.node = rng.choice(job.hosts)
        strike.gpu = rng.randrange(RAILS)
        job.stalled_ns = hang
        return
    if kind == "app-hang":
        job.stalled_ns = hang
        return
    _link_strike(rng, inc, strike, avoid, hang)


def _link_strike(
    rng: random.Random, inc: Incident, strike: Strike, avoid: set[Cable], hang: int
) -> None:
    """A fault on one of the job's cables, in the place the world drew (or the nearest tier
    the job has: a two-tier fabric has no spine uplinks)."""
    dims, job, kind, at = inc.dims, strike.job, strike.fault, strike.at_ns
    place = dims.place
    if kind in ("nic-down", "pfc-storm"):
        place = "host"
    tier = {"host": "host", "uplink": "uplink", "spine": "spine"}[place]
    options = [c for c in _job_cables(job, tier) if c not in avoid]
    if not options and tier == "spine":
        tier, place = "uplink", "uplink"  # two tiers: the spines' only links are uplinks
        options = [c for c in _job_cables(job, tier) if c not in avoid]
    if not options:
        tier, place = "host", "host"
        options = [c for c in _job_cables(job, tier) if c not in avoid]
    cable = rng.choice(options)
    strike.cable, strike.place = cable, place
    sprayed = dims.routing == "spray" and tier != "host"
    share = _worst_share(job, cable)
    if kind in ("link-down", "nic-down"):
        inc.link_faults.append(LinkFault(cable, "down", at))
        if tier == "host" or (not sprayed and rng.random() < 0.5):
            job.stalled_ns = hang
            strike.transport_errors = True
        else:
            strike.state = "healthy"  # routed around in time
    elif kind == "flap":
        inc.link_faults.append(LinkFault(cable, "flap", at, at + rng.randrange(3, 20) * NS))
        if tier == "host" or (not sprayed and rng.random() < 0.5):
            job.stalled_ns = hang
            strike.transport_errors = True
        else:
            strike.state = "healthy"
    elif kind == "errors":
        ratio = dims.error_ratio
        inc.link_faults.append(LinkFault(cable, "errors", at, ratio=ratio))
        if tier == "host" and ratio >= FATAL_RATIO and rng.random() < 0.5:
            job.stalled_ns = hang
            strike.transport_errors = True
        else:
            _slow(job, strike, at, 1 + job.comm_fraction * min(4.0, ratio * 2e4) * share)
    elif kind == "speed-down":
        inc.link_faults.append(LinkFault(cable, "speed", at))
        _slow(job, strike, at, 1 + job.comm_fraction * share)
    elif kind == "pfc-storm":
        inc.link_faults.append(LinkFault(cable, "pfc", at))
        job.stalled_ns = hang


def _worst_share(job: Job, cable: Cable) -> float:
    """The largest share of one flow the cable carries: the ring waits for its slowest hop."""
    return max(
        (share for f in job.flows for (c, _), share in f.route.items() if c == cable), default=0.0
    )


def _slow(job: Job, strike: Strike, at: int, factor: float) -> None:
    if factor < NOTICEABLE:
        strike.state = "healthy"
        return
    strike.state = "slow"
    job.slowed_ns = at
    job.slowdown = factor


def _noise(rng: random.Random, inc: Incident, fault_at: int) -> None:
    """Trouble no logged job feels: anomalies on cables none of them uses, a switch whose
    telemetry stops (one carrying no fault), a switch that reboots with nobody on it."""
    used = {c for job in inc.jobs for c in job.cables()}
    struck = {s.cable for s in inc.strikes if s.cable is not None}
    idle = sorted((c for c in inc.cluster.cables if c not in used), key=lambda c: c.name)
    for _ in range(rng.randint(0, 3)):
        if not idle:
            break
        cable = rng.choice(idle)
        kind = rng.choice(("down", "flap", "errors"))
        at = inc.start_ns + rng.randrange(30, 400) * NS
        up = at + rng.randrange(3, 15) * NS if kind == "flap" else None
        inc.link_faults.append(LinkFault(cable, kind, at, up, ratio=1e-5))
    if any(s.fault == "app-hang" for s in inc.strikes) and idle:
        # A decoy in time: a link no job uses goes down as the job stops.
        at = fault_at + rng.randrange(1, 5) * NS
        inc.link_faults.append(LinkFault(rng.choice(idle), "down", at))
    quiet = sorted(
        {c.b.device for c in inc.cluster.cables}
        - {c.b.device for c in struck}
        - {c.a.device for c in struck}
    )
    if quiet and rng.random() < 0.15:
        inc.silenced[rng.choice(quiet)] = fault_at - rng.randrange(0, 120) * NS
    unused = sorted(set(inc.cluster.switches()) - {p.device for c in used for p in (c.a, c.b)})
    if unused and rng.random() < 0.15:
        inc.resets.append((rng.choice(unused), inc.start_ns + rng.randrange(60, 300) * NS))


def _timeline(inc: Incident, fault_at: int) -> None:
    """Telemetry covers the fault and minutes after; logs go on until the watchdogs fire, or
    for a slowed job until four of its reports have come at the slower pace, however far
    apart its reports are."""
    telemetry = fault_at + max(150, 6 * inc.dims.sample_s) * NS
    end = telemetry
    for job in inc.jobs:
        if job.slowed_ns is not None:
            telemetry = max(telemetry, job.slowed_ns + max(300, 6 * inc.dims.sample_s) * NS)
            report_s = job.step_s * job.slowdown * inc.dims.report_every
            end = max(end, job.slowed_ns + int(max(300, 4 * report_s) * NS))
        if job.paused is not None:
            telemetry = max(telemetry, job.paused[1] + 120 * NS)
        if job.stalled_ns is not None:
            end = max(end, job.stalled_ns + (inc.watchdog_s + 45) * NS)
    inc.telemetry_end_ns = telemetry
    inc.end_ns = max(end, telemetry)
