"""What a world's jobs and hosts print, in the formats NCCL, PyTorch, the trainers and the
kernel use (the public threads in tests/fixtures/logs/real show each), and how the site keeps
them:

- NCCL_DEBUG=INFO prints each rank's setup (its NICs, its rank in the communicator, its ring
  channels), WARN only the warnings, unset nothing of NCCL's own; PyTorch's watchdog lines and
  the exception carrying NCCL's last error come at every level;
- the trainer's step reports every `report_every` steps come from one rank (Megatron with the
  mean time of those steps, torchtitan with its tokens per second, NeMo 2 with the last step's
  time, DeepSpeed with the last step's samples per second, the HF Trainer's tqdm bar redrawn
  after a carriage return every step and ended by its log dict's newline; or none at all),
  stamped in the host's local time where the trainer stamps;
- each file's lines are kept by the site as `stamp` says: prefixed by a shipper's UTC stamp
  (seconds late), by the local time with or without its offset, or by journald's short
  format (local, no year); with `srun --label` every rank's line carries its task number;
- a host's kernel lines (a GPU off the bus, a NIC failing) come in their own file, as `dmesg
  -T` prints them, named for the host.

The trainers' lines are written by `trainerlogs`, the site's keeping by `logfiles`.
"""

from __future__ import annotations

import random
from datetime import tzinfo

from railtrace.world.incident import NS, Incident, Job, Strike
from railtrace.world.logfiles import LogFile, Printer, render
from railtrace.world.shape import RAILS
from railtrace.world.traffic import JobClock
from railtrace.world.trainerlogs import progress

NCCL_VERSION = "2.23.4+cuda12.6"
NCCL_RELEASE = NCCL_VERSION.partition("+")[0]
BUS_IDS = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")
NIC_BUSES = ("0c", "1b", "3c", "4d", "8c", "9d", "bc", "cd")


def _nccl_head(job: Job, rank: int) -> tuple[str, str]:
    host = job.hosts[rank // RAILS]
    pid = job.base_pid + rank
    return host, f"{host}:{pid}:{pid + 11} [{rank % RAILS}] NCCL"


def _setup(inc: Incident, job: Job, rng: random.Random, file_of: dict[str, LogFile]) -> None:
    """NCCL's INFO lines of every rank: its NICs, its place in the communicator, its
    channels (the hops between nodes as the flows really go)."""
    planes = inc.cluster.planes
    nics = RAILS * planes
    devs = " ".join(f"[{k}]mlx5_{k}:1/RoCE" for k in range(nics))
    n = job.ranks
    sends: dict[int, list[str]] = {}
    for flow in job.flows:
        line = (
            f"Channel {flow.channel:02d}/0 : {flow.src_rank}[{flow.src_rank % RAILS}] -> "
            f"{flow.dst_rank}[{flow.dst_rank % RAILS}] [send] via NET/IB/{flow.nic_index}/GDRDMA"
        )
        sends.setdefault(flow.src_rank, []).append(line)
        recv = (
            f"Channel {flow.channel:02d}/0 : {flow.src_rank}[{flow.src_rank % RAILS}] -> "
            f"{flow.dst_rank}[{flow.dst_rank % RAILS}] [receive] via NET/IB/{flow.nic_index}/GDRDMA"
        )
        sends.setdefault(flow.dst_rank, []).append(recv)
    for rank in range(n):
        host, head = _nccl_head(job, rank)
        t = job.started_ns + 5 * NS + rng.randrange(NS)
        ip = inc.cluster.address[inc.cluster.nic[(host, 0, 0)]]
        out = file_of[host].lines
        gpu = rank % RAILS
        if rank == 0:
            out.append((t, host, rank, f"{head} INFO NCCL version {NCCL_VERSION}"))
        out.append((t, host, rank, f"{head} INFO NET/IB : Using {devs} [RO]; OOB eth0:{ip}<0>"))
        comm = f"comm 0x{(job.base_pid * 7919 + rank) & 0xFFFFFFFFFFFF:x} rank {rank}"
        detail = (
            f"{comm} nranks {n} cudaDev {gpu} nvmlDev {gpu} busId {BUS_IDS[gpu]} "
            f"commId {job.comm_id}"
        )
        out.append((t + 1000, host, rank, f"{head} INFO {detail} - Init START"))
        for line in sends.get(rank, []):
            out.append((t + NS // 2, host, rank, f"{head} INFO {line}"))
        out.append((t + NS, host, rank, f"{head} INFO ncclCommInitRank {detail} - Init COMPLETE"))


def _glog(p: Printer, t: int, where: str) -> str:
    d = p.local(t)
    return f"[E{d:%m%d %H:%M:%S}.{d.microsecond:06d} {where}]"


def _stall(
    p: Printer, inc: Incident, job: Job, strike: Strike | None, file_of: dict[str, LogFile]
) -> None:
    assert job.stalled_ns is not None
    rng = p.rng
    seq = 10_000 + rng.randrange(90_000)
    if strike is not None and strike.transport_errors and strike.cable is not None:
        cable = strike.cable
        for flow in job.flows:
            if not any(c == cable for c, _ in flow.route):
                continue
            for rank, here, peer in (
                (flow.src_rank, flow.src, flow.dst),
                (flow.dst_rank, flow.dst, flow.src),
            ):
                host, head = _nccl_head(job, rank)
                t = strike.at_ns + rng.randrange(15, 40) * NS + rng.randrange(NS)
                local, remote = inc.cluster.address[here], inc.cluster.address[peer]
                warning = (
                    f"NET/IB : Got completion from peer {remote}<{40000 + rng.randrange(20000)}> "
                    f"with status=12 opcode=0 len=0 vendor err 129 (Send) localGid "
                    f"::ffff:{local} remoteGid ::ffff:{remote}"
                )
                stamp = f"[{p.local(t):%Y-%m-%d %H:%M:%S}]"
                lines = file_of[host].lines
                lines.append((t, host, rank, f"{stamp} {head} WARN {warning}"))
                tag = f"[rank{rank}]:"
                lines += [
                    (
                        t + 2 * NS,
                        host,
                        rank,
                        f"{tag} torch.distributed.DistBackendError: NCCL error in: "
                        "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process "
                        "exited or there was a network error, NCCL version "
                        f"{NCCL_RELEASE}",
                    ),
                    (
                        t + 2 * NS,
                        host,
                        rank,
                        f"{tag} ncclRemoteError: A call failed possibly due to a network error "
                        "or a remote process exiting prematurely.",
                    ),
                    (t + 2 * NS, host, rank, f"{tag} Last error:"),
                    (t + 2 * NS, host, rank, f"{tag} {warning}"),
                ]
    dead = None
    if strike is not None and strike.node is not None and strike.gpu is not None:
        dead = job.hosts.index(strike.node) * RAILS + strike.gpu
    timeout_ms = inc.watchdog_s * 1000
    for rank in range(job.ranks):
        if rank == dead:
            continue
        host = job.hosts[rank // RAILS]
        t = job.stalled_ns + timeout_ms * 1_000_000 + rng.randrange(2 * NS, 4 * NS)
        ran_for = (t - job.stalled_ns) // 1_000_000
        head = f"[rank{rank}]:{_glog(p, t, 'ProcessGroupNCCL.cpp:632')} [Rank {rank}]"
        file_of[host].lines.append(
            (
                t,
                host,
                rank,
                f"{head} Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                f"OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)={timeout_ms}) "
                f"ran for {ran_for} milliseconds before timing out.",
            )
        )


def _kernel(p: Printer, inc: Incident, strike: Strike) -> LogFile | None:
    """`dmesg -T` of the struck host: the GPU off the bus, or the NIC's carrier lost (and its
    health failing first when the NIC itself failed). No hostname in the lines: the file is
    named for the host."""

    def dmesg(t: int) -> str:
        return f"[{p.local(t):%a %b %e %H:%M:%S %Y}] "

    if strike.node is not None and strike.gpu is not None:
        f = LogFile(f"{strike.node}.dmesg")
        bus = BUS_IDS[strike.gpu][:2]
        t = strike.at_ns
        f.lines.append(
            (
                t,
                strike.node,
                None,
                f"{dmesg(t)}NVRM: Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', "
                "name=<unknown>, GPU has fallen off the bus.",
            )
        )
        f.lines.append(
            (
                t,
                strike.node,
                None,
                f"{dmesg(t)}NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.",
            )
        )
        return f
    cable = strike.cable
    if (
        cable is None
        or cable.tier != "host"
        or strike.fault not in ("link-down", "nic-down", "flap")
    ):
        return None
    host, nic = cable.a.device, cable.a.name
    # mlx5_<rail * planes + plane>: one PCI function per plane of the rail's NIC.
    rail, plane = divmod(int(nic.rsplit("_", 1)[1]), inc.cluster.planes)
    bus = NIC_BUSES[rail % len(NIC_BUSES)]
    pci = f"0000:{bus}:00.{plane}"
    netdev = f"enp{int(bus, 16)}s0np{plane}"
    f = LogFile(f"{host}.dmesg")
    t = strike.at_ns
    if strike.fault == "nic-down":
        f.lines.append(
            (
                t,
                host,
                None,
                f"{dmesg(t)}mlx5_core {pci}: poll_health:803:(pid 0): device's health "
                "compromised - reached miss count",
            )
        )
    f.lines.append((t + NS // 10, host, None, f"{dmesg(t)}mlx5_core {pci} {netdev}: Link down"))
    return f


def job_files(inc: Incident, job: Job, zone: tzinfo, rng: random.Random) -> dict[str, str]:
    """Every file of one job's folder in the capture: name -> text."""
    p = Printer(inc, zone, rng)
    file_of = {h: LogFile(f"{h}.log") for h in job.hosts}
    _setup(inc, job, rng, file_of)
    clock = JobClock.of(job, inc.end_ns)
    stop = job.stalled_ns if job.stalled_ns is not None else inc.end_ns
    reporter = job.ranks - 1 if p.dims.trainer == "megatron" else 0
    progress(p, job, clock, stop, file_of[job.hosts[reporter // RAILS]], reporter)
    strike = inc.strike_of(job)
    if job.stalled_ns is not None:
        _stall(p, inc, job, strike, file_of)
    files = list(file_of.values())
    if strike is not None and (kernel := _kernel(p, inc, strike)) is not None:
        files.append(kernel)
    out: dict[str, str] = {}
    nccl = p.dims.nccl_debug
    if p.dims.srun_label:
        merged = LogFile(f"slurm-{job.job_id}.out")
        for f in files:
            if f.name.endswith(".dmesg"):
                out[f.name] = render(p, f, label=False, nccl=nccl)
            else:
                merged.lines += f.lines
        out[merged.name] = render(p, merged, label=True, nccl=nccl)
    else:
        for f in files:
            out[f.name] = render(p, f, label=False, nccl=nccl)
    return out
