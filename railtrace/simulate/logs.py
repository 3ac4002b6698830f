"""The stdout/stderr of a simulated job's ranks and its hosts' kernel logs, line by line.

Lines follow the formats NCCL, PyTorch and the NVIDIA driver really print (see the parser's
fixtures for the public threads they come from). Two styles, as captures arrive in the field:
`raw` (NCCL INFO lines untimed, WARN lines with NCCL's own date prefix, PyTorch's glog prefix)
and `shipped` (every line prefixed by a log shipper's ISO-8601 time).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from railtrace.simulate.scenario import NS, TRANSPORT_FAULTS, Fault, Scenario, SimJob, Strike

BUS_IDS = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")
#: PCI buses of the eight NICs, by rail.
NIC_BUSES = ("0c", "1b", "3c", "4d", "8c", "9d", "bc", "cd")
NCCL_VERSION = "2.21.5+cuda12.4"


@dataclass(slots=True)
class LogFile:
    """One file of the capture: `logs/<job>/<name>`, lines with the time each was written."""

    job_id: str
    name: str
    lines: list[tuple[int, str]] = field(default_factory=list)

    def text(self, shipped: bool) -> str:
        rows = sorted(self.lines, key=lambda tl: tl[0])
        if shipped:
            return "".join(f"{_iso(t)} {line}\n" for t, line in rows)
        return "".join(f"{line}\n" for _, line in rows)


def _dt(t: int) -> datetime:
    return datetime.fromtimestamp(t / NS, tz=UTC)


def _iso(t: int) -> str:
    return _dt(t).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def _nccl_stamp(t: int) -> str:
    return _dt(t).strftime("[%Y-%m-%d %H:%M:%S]")


def _glog(t: int, level: str, where: str) -> str:
    d = _dt(t)
    return f"[{level}{d:%m%d %H:%M:%S}.{t % NS:09d} {where}]"


class _Rank:
    def __init__(self, job: SimJob, host_index: int, gpu: int) -> None:
        self.rank = host_index * 8 + gpu
        self.gpu = gpu
        self.host = job.hosts[host_index]
        self.pid = job.base_pid + self.rank
        self.prefix = f"{self.host}:{self.pid}:{self.pid + 7} [{gpu}] NCCL"


#: NCCL_DEBUG as jobs run with it: INFO prints the setup (NICs, ranks, channels), WARN only
#: NCCL's warnings, and unset (the default, and most production jobs) nothing at all, so
#: only PyTorch's own lines (watchdog timeouts, the exception carrying NCCL's last error)
#: remain.
NCCL_DEBUG_LEVELS = ("INFO", "WARN", "unset")


def _printed(line: str, nccl_debug: str) -> bool:
    """Whether NCCL prints `line` at `nccl_debug`. Every line is made at every level and the
    unprinted ones dropped afterwards, so the levels draw the same random numbers and give
    the same incident."""
    if " NCCL INFO " in line:
        return nccl_debug == "INFO"
    if " NCCL WARN " in line:
        return nccl_debug in ("INFO", "WARN")
    return True


def job_logs(
    sc: Scenario, job: SimJob, rng: random.Random, nccl_debug: str = "INFO"
) -> list[LogFile]:
    """Every file one job leaves in the capture, as NCCL_DEBUG=`nccl_debug` prints it."""
    if nccl_debug not in NCCL_DEBUG_LEVELS:
        raise ValueError(f"NCCL_DEBUG {nccl_debug!r}: one of {', '.join(NCCL_DEBUG_LEVELS)}")
    files = {h: LogFile(job.job_id, f"{h}.log") for h in job.hosts}
    nranks = job.ranks
    t0 = job.started_ns
    for i, host in enumerate(job.hosts):
        out = files[host].lines
        ip = sc.address[sc.design.nic(sc.design.hosts.index(host), 0)]
        for gpu in range(8):
            r = _Rank(job, i, gpu)
            t = t0 + rng.randrange(NS // 2)
            if r.rank == 0:
                out.append((t, f"{r.prefix} INFO NCCL version {NCCL_VERSION}"))
            devs = " ".join(f"[{k}]mlx5_{k}:1/RoCE" for k in range(8))
            out.append((t, f"{r.prefix} INFO NET/IB : Using {devs} [RO]; OOB eth0:{ip}<0>"))
            comm = f"comm 0x{(job.base_pid * 4099 + r.rank) & 0xFFFFFFFFFFFF:x} rank {r.rank}"
            detail = (
                f"{comm} nranks {nranks} cudaDev {gpu} nvmlDev {gpu} busId {BUS_IDS[gpu]}"
                f" commId {job.comm_id}"
            )
            out.append((t + 1000, f"{r.prefix} INFO {detail} - Init START"))
            t += NS // 2
            for channel in range(8):
                out.extend((t, line) for line in _channel_lines(job, i, gpu, channel))
            out.append((t + NS, f"{r.prefix} INFO ncclCommInitRank {detail} - Init COMPLETE"))
    _progress(files[job.hosts[-1]], job, sc, rng)
    strike = sc.strike_of(job)
    if strike is not None and job.stalled_ns is not None:
        _stall(sc, strike, files, rng)
    result = list(files.values())
    if strike is not None and strike.kind is Fault.GPU_XID:
        result.append(_dmesg(strike))
    if strike is not None and (nic := _nic_dmesg(sc, strike)) is not None:
        result.append(nic)
    for f in result:
        f.lines = [(t, line) for t, line in f.lines if _printed(line, nccl_debug)]
    return result


def _channel_lines(job: SimJob, i: int, gpu: int, channel: int) -> list[str]:
    """Channel c enters each node on GPU c through NIC c, walks the NVLink ring, and leaves
    from GPU c-1 through NIC c again (so every hop between nodes stays on rail c)."""
    n = len(job.hosts)
    r = _Rank(job, i, gpu)
    exit_gpu = (channel + 7) % 8
    head = f"{r.prefix} INFO Channel {channel:02d}/0 :"
    lines = []
    if gpu == exit_gpu:
        nxt = _Rank(job, (i + 1) % n, channel)
        lines.append(
            f"{head} {r.rank}[{gpu}] -> {nxt.rank}[{channel}] [send] via NET/IB/{channel}/GDRDMA"
        )
    else:
        nxt_gpu = (gpu + 1) % 8
        nxt = _Rank(job, i, nxt_gpu)
        lines.append(f"{head} {r.rank}[{gpu}] -> {nxt.rank}[{nxt_gpu}] via P2P/CUMEM/read")
    if gpu == channel:
        prev = _Rank(job, (i - 1) % n, exit_gpu)
        lines.append(
            f"{head} {prev.rank}[{exit_gpu}] -> {r.rank}[{gpu}] [receive] "
            f"via NET/IB/{channel}/GDRDMA"
        )
    return lines


def _progress(file: LogFile, job: SimJob, sc: Scenario, rng: random.Random) -> None:
    """Megatron-style iteration lines from the last rank until the job hangs, printed every ten
    iterations with their mean time; a slowed job's iterations take `slowdown` times as long."""
    t = job.started_ns + 20 * NS
    stop = job.stalled_ns if job.stalled_ns is not None else sc.end_ns
    it = 0
    while t < stop:
        it += 10
        ms = 950 + rng.uniform(-20, 20)
        if job.slowed_ns is not None and t >= job.slowed_ns:
            ms *= job.slowdown
        file.lines.append(
            (
                t,
                f" [{_dt(t):%Y-%m-%d %H:%M:%S}] iteration {it:8d}/  100000 | "
                f"elapsed time per iteration (ms): {ms:.1f} | lm loss: "
                f"{3.2 - it / 20000:.6E} |",
            )
        )
        t += int(ms * 10 * 1_000_000)


def _stall(sc: Scenario, strike: Strike, files: dict[str, LogFile], rng: random.Random) -> None:
    job = strike.job
    assert job.stalled_ns is not None
    seq = 4000 + rng.randrange(5000)
    if strike.kind in TRANSPORT_FAULTS and strike.link is not None:
        lid = strike.link.link_id
        for flow in job.flows:
            if lid not in flow.path:
                continue
            src_i, dst_i = job.hosts.index(flow.src.device), job.hosts.index(flow.dst.device)
            for here, gpu, peer in (
                (src_i, (flow.channel + 7) % 8, flow.dst),
                (dst_i, flow.channel, flow.src),
            ):
                r = _Rank(job, here, gpu)
                t = strike.at_ns + (18 + rng.randrange(20)) * NS + rng.randrange(NS)
                peer_ip = sc.address[peer]
                local_ip = sc.address[sc.design.nic(sc.design.hosts.index(r.host), flow.channel)]
                warning = (
                    f"NET/IB : Got completion from peer {peer_ip}<{40000 + rng.randrange(20000)}>"
                    f" with status=12 opcode=0 len=0 vendor err 129 (Send) localGid "
                    f"::ffff:{local_ip} remoteGid ::ffff:{peer_ip}"
                )
                files[r.host].lines.append((t, f"{_nccl_stamp(t)} {r.prefix} WARN {warning}"))
                files[r.host].lines.extend(_torch_error(r, t + 2 * NS, warning))
    dead = None
    if strike.node is not None and strike.gpu is not None:
        dead = job.hosts.index(strike.node) * 8 + strike.gpu
    timeout_ms = sc.watchdog_s * 1000
    for i, host in enumerate(job.hosts):
        for gpu in range(8):
            rank = i * 8 + gpu
            if rank == dead:
                continue
            t = job.stalled_ns + timeout_ms * 1_000_000 + rng.randrange(2 * NS, 4 * NS)
            ran_for = (t - job.stalled_ns) // 1_000_000
            head = f"[rank{rank}]:{_glog(t, 'E', 'ProcessGroupNCCL.cpp:616')} [Rank {rank}]"
            files[host].lines.append(
                (
                    t,
                    (
                        f"{head} Watchdog caught collective operation timeout: "
                        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, "
                        f"NumelOut=1048576, Timeout(ms)={timeout_ms}) ran for {ran_for} "
                        "milliseconds before timing out."
                    ),
                )
            )


def _torch_error(r: _Rank, t: int, last_error: str) -> list[tuple[int, str]]:
    """PyTorch's exception when NCCL reports the error to it (at every NCCL_DEBUG level: the
    text of NCCL's last warning rides in it), behind torchrun's rank prefix, as in
    https://github.com/NVIDIA/nccl/issues/2076 and /1928."""
    head = f"[rank{r.rank}]:"
    return [
        (
            t,
            f"{head} torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or "
            f"there was a network error, NCCL version {NCCL_VERSION.split('+', maxsplit=1)[0]}",
        ),
        (
            t,
            f"{head} ncclRemoteError: A call failed possibly due to a network error or a "
            "remote process exiting prematurely.",
        ),
        (t, f"{head} Last error:"),
        (t, f"{head} {last_error}"),
    ]


def _dmesg(strike: Strike) -> LogFile:
    node, gpu, t = strike.node, strike.gpu, strike.at_ns
    assert node is not None and gpu is not None
    f = LogFile(strike.job.job_id, f"{node}.dmesg")
    bus = BUS_IDS[gpu][:2]
    stamp = _dt(t).strftime("%b %e %H:%M:%S")
    f.lines.append(
        (
            t - 300 * NS,
            f"{_dt(t - 300 * NS):%b %e %H:%M:%S} {node} kernel: "
            "mlx5_core 0000:0c:00.0: mlx5e_open: port module event",
        )
    )
    f.lines.append(
        (
            t,
            f"{stamp} {node} kernel: NVRM: Xid (PCI:0000:{bus}:00): 79, "
            "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        )
    )
    f.lines.append(
        (
            t,
            f"{stamp} {node} kernel: NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.",
        )
    )
    return f


def _nic_dmesg(sc: Scenario, strike: Strike) -> LogFile | None:
    """The host's kernel lines when the struck link is a host's cable: the NIC loses its
    carrier whichever end failed, and when the NIC itself failed, the driver says so first."""
    if strike.link is None or strike.kind not in (
        Fault.NIC_DOWN,
        Fault.LINK_DOWN,
        Fault.FLAP,
        Fault.OPTIC,
        Fault.MISWIRE,
    ):
        return None
    nic = next((e for e in (strike.link.a, strike.link.b) if e.device in strike.job.hosts), None)
    if nic is None:
        return None
    rail = sc.fabric.nic_rail.get(nic, 0)
    bus = NIC_BUSES[rail % len(NIC_BUSES)]
    pci = f"0000:{bus}:00.0"
    netdev = f"enp{int(bus, 16)}s0np0"
    f = LogFile(strike.job.job_id, f"{nic.device}.dmesg")

    def line(t: int, text: str) -> None:
        f.lines.append((t, f"{_dt(t):%b %e %H:%M:%S} {nic.device} kernel: {text}"))

    t = strike.at_ns
    if strike.kind is Fault.NIC_DOWN:
        line(
            t,
            f"mlx5_core {pci}: poll_health:803:(pid 0): device's health compromised - "
            "reached miss count",
        )
    line(t + 100_000_000, f"mlx5_core {pci} {netdev}: Link down")
    if strike.kind is Fault.FLAP:
        line(t + 4 * NS, f"mlx5_core {pci} {netdev}: Link up")
    return f
