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
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from railtrace.world.incident import NS, Incident, Job, Strike
from railtrace.world.shape import RAILS
from railtrace.world.traffic import JobClock

NCCL_VERSION = "2.23.4+cuda12.6"
NCCL_RELEASE = NCCL_VERSION.partition("+")[0]
BUS_IDS = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")
NIC_BUSES = ("0c", "1b", "3c", "4d", "8c", "9d", "bc", "cd")
TOKENS_PER_STEP = 4_194_304


@dataclass(slots=True)
class LogFile:
    name: str
    #: (true time, host, rank or None, text)
    lines: list[tuple[int, str, int | None, str]] = field(default_factory=list)


class _Printer:
    """One incident's formats: the zone, the stamp style, the NCCL level."""

    def __init__(self, inc: Incident, zone: tzinfo, rng: random.Random) -> None:
        self.inc = inc
        self.zone = zone
        self.rng = rng
        self.dims = inc.dims

    def local(self, t: int) -> datetime:
        return datetime.fromtimestamp(t / NS, tz=self.zone)

    def prefix(self, t: int, host: str) -> str:
        """What the site's log keeping puts before a line written at true time t."""
        style = self.dims.stamp
        if style == "utc-shipper":
            late = t + int(self.rng.uniform(0, self.dims.shipper_delay_s) * NS)
            stamp = datetime.fromtimestamp(late / NS, tz=UTC)
            return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z "
        d = self.local(t)
        if style == "local-naive":
            return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{d.microsecond // 1000:03d} "
        if style == "local-offset":
            return d.isoformat(timespec="milliseconds") + " "
        pid = 4000 + zlib.crc32(host.encode()) % 3000
        return d.strftime("%b %e %H:%M:%S") + f" {host} python[{pid}]: "


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


def _progress(p: _Printer, job: Job, clock: JobClock, until: int, file: LogFile, rank: int) -> None:
    """Step reports every `report_every` steps, each with the mean pace since the last."""
    dims = p.dims
    if dims.trainer == "silent":
        return
    if dims.trainer == "hf":
        _hf_bar(p, job, clock, until, file, rank)
        return
    host = job.hosts[rank // RAILS]
    every = dims.report_every
    last_t, last_step = job.started_ns, 0
    t = job.started_ns
    # Walk event time a step at a time; report when the count passes a multiple of `every`.
    step_ns = int(job.step_s * NS / 4) or NS
    while t < until:
        t += step_ns
        done = clock.steps(t)
        if done // every <= last_step // every:
            continue
        reached = (done // every) * every
        mean_ms = (t - last_t) / max(1, reached - last_step) / 1e6
        mean_ms *= p.rng.uniform(0.98, 1.02)
        last_t, last_step = t, reached
        last_ms = (clock.step_ns(t) or job.step_s * NS) / 1e6 * p.rng.uniform(0.97, 1.03)
        if dims.trainer == "nemo":
            text = (
                f"Training epoch 0, iteration {reached}/1000000 | lr: 3e-04 | consumed_samples: "
                f"{reached * 1024} | global_batch_size: 1024 | global_step: {reached} | "
                f"reduced_train_loss: {3.1 - reached / 1e6:.4g} | train_step_timing in s: "
                f"{last_ms / 1000:.5g}"
            )
        elif dims.trainer == "deepspeed":
            d = p.local(t)
            samples = 1024 / (last_ms / 1000)
            text = (
                f"[{d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d}] [INFO] [timer.py:215:stop] "
                f"epoch=0/micro_step={reached}/global_step={reached}, RunningAvgSamplesPerSec="
                f"{1024 / job.step_s:.6f}, CurrSamplesPerSec={samples:.6f}, MemAllocated=59.65GB, "
                "MaxMemAllocated=63.31GB"
            )
        elif dims.trainer == "megatron":
            text = (
                f" [{p.local(t):%Y-%m-%d %H:%M:%S}] iteration {reached:8d}/ 1000000 | consumed "
                f"samples: {reached * 1024:12d} | elapsed time per iteration (ms): {mean_ms:.1f} "
                f"| learning rate: 3.000000E-04 | global batch size:  1024 | lm loss: "
                f"{3.1 - reached / 1e6:.6E} | loss scale: 1.0 | grad norm: 0.512 |"
            )
        else:
            d = p.local(t)
            tps = TOKENS_PER_STEP / job.ranks / (mean_ms / 1000)
            text = (
                f"[rank{rank}]:[titan] {d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d} - root - "
                f"INFO - step: {reached:5d}  loss:  {3.1 - reached / 1e6:.4f}  memory: 61.20GiB"
                f"(64.42%)  tps: {tps:,.0f}  tflops: 402.15  mfu: 40.66%"
            )
        file.lines.append((t, host, rank, text))


#: The Trainer's `max_steps` in the world's runs: its bar counts up to it.
HF_MAX_STEPS = 100_000
#: tqdm's default smoothing: an exponential moving average of the per-render pace.
TQDM_SMOOTHING = 0.3


def _tqdm_interval(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _hf_bar(p: _Printer, job: Job, clock: JobClock, until: int, file: LogFile, rank: int) -> None:
    """The HF Trainer's tqdm bar as a file holds it: every step a render after a carriage
    return, no newline, until its log dict every `report_every` steps (`tqdm.write` blanks the
    bar, prints the dict and its newline, and draws the bar again). So one physical line per
    report, stamped when its newline came, and the pace is tqdm's smoothed one."""
    host = job.hosts[rank // RAILS]
    every = p.dims.report_every
    alpha = TQDM_SMOOTHING
    ema_dn = ema_dt = 0.0
    last_t, last_n = job.started_ns, 0
    renders: list[str] = []
    t = job.started_ns
    step_ns = int(job.step_s * NS / 4) or NS
    while t < until:
        t += step_ns
        done = clock.steps(t)
        if done <= last_n:
            continue
        dt = (t - last_t) / NS
        ema_dn = alpha * (done - last_n) + (1 - alpha) * ema_dn
        ema_dt = alpha * dt + (1 - alpha) * ema_dt
        rate = ema_dn / ema_dt  # tqdm's bias correction cancels in the ratio
        before = last_n
        last_t, last_n = t, done
        elapsed = (t - job.started_ns) / NS
        pace = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
        left = _tqdm_interval((HF_MAX_STEPS - done) / rate)
        share = done / HF_MAX_STEPS
        bar = "█" * int(share * 10)
        renders.append(
            f"\r{share * 100:3.0f}%|{bar:<10}| {done}/{HF_MAX_STEPS} "
            f"[{_tqdm_interval(elapsed)}<{left}, {pace}]"
        )
        if done // every > before // every:
            blank = "\r" + " " * (len(renders[-1]) - 1) + "\r"
            loss = 3.1 - done / 1e6
            text = (
                "".join(renders)
                + blank
                + (
                    f"{{'loss': {loss:.4f}, 'grad_norm': 0.512, 'learning_rate': 3e-05, "
                    f"'epoch': {done / HF_MAX_STEPS:.2f}}}"
                )
            )
            file.lines.append((t + NS // 100, host, rank, text))
            renders = [renders[-1]]


def _glog(p: _Printer, t: int, where: str) -> str:
    d = p.local(t)
    return f"[E{d:%m%d %H:%M:%S}.{d.microsecond:06d} {where}]"


def _stall(
    p: _Printer, inc: Incident, job: Job, strike: Strike | None, file_of: dict[str, LogFile]
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


def _kernel(p: _Printer, inc: Incident, strike: Strike) -> LogFile | None:
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
    p = _Printer(inc, zone, rng)
    file_of = {h: LogFile(f"{h}.log") for h in job.hosts}
    _setup(inc, job, rng, file_of)
    clock = JobClock.of(job, inc.end_ns)
    stop = job.stalled_ns if job.stalled_ns is not None else inc.end_ns
    reporter = job.ranks - 1 if p.dims.trainer == "megatron" else 0
    _progress(p, job, clock, stop, file_of[job.hosts[reporter // RAILS]], reporter)
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
                out[f.name] = _render(p, f, label=False, nccl=nccl)
            else:
                merged.lines += f.lines
        out[merged.name] = _render(p, merged, label=True, nccl=nccl)
    else:
        for f in files:
            out[f.name] = _render(p, f, label=False, nccl=nccl)
    return out


def _printed(text: str, nccl: str) -> bool:
    if " NCCL INFO " in text:
        return nccl == "INFO"
    if " NCCL WARN " in text:
        return nccl in ("INFO", "WARN")
    return True


def _render(p: _Printer, f: LogFile, label: bool, nccl: str) -> str:
    rows = sorted(f.lines, key=lambda r: r[0])
    out = []
    kernel = f.name.endswith(".dmesg")
    for t, host, rank, text in rows:
        if not _printed(text, nccl):
            continue
        if kernel:
            out.append(text)
            continue
        tagged = f"{rank:4d}: {text}" if label and rank is not None else text
        out.append(p.prefix(t, host) + tagged)
    return "\n".join(out) + ("\n" if out else "")
