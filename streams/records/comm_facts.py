"""Facts of how a job's ranks talk, from NCCL's and PyTorch's logs: its NICs, ranks and
channels, and the transport errors and collective timeouts that stop them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# ---------------------------------------------------------------------------------------------
# Facts parsed from NCCL / PyTorch / kernel logs. Each carries the job it came from and the
# place in the input it came from (`source`, `line_no`), so evidence can point back to it.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogOrigin:
    """Where a fact was read: the capture file (or stream) name and the 1-based line number.

    `dated_by` says where an event's time came from when its line carried none, so evidence
    can say the time is borrowed: "line N" for the nearest earlier stamped line of the same
    file, "shipper" for the log shipper's stamp on the message; "<source> line N" (the job's
    first stamped line, `streams.logs.undated`) for a fact saying where the job runs that was
    read before any time. "" otherwise: the line's own stamp, or a structure fact (NICs,
    ranks, channels) whose time no judgement reads.
    """

    source: str
    line_no: int
    dated_by: str = ""


@dataclass(frozen=True, slots=True)
class NetDevice:
    """One entry of NCCL's `NET/IB : Using [0]mlx5_0:1/IB ...` list."""

    index: int
    name: str
    port: int
    link_layer: str  # "IB" or "RoCE"


@dataclass(frozen=True, slots=True)
class NetDevices:
    """The network devices one NCCL process (host, pid) will use, indexed as channels name them."""

    ts_ns: int
    job_id: str
    host: str
    pid: int
    devices: tuple[NetDevice, ...]
    origin: LogOrigin


@dataclass(frozen=True, slots=True)
class RankInfo:
    """A rank of a communicator and where it runs (from the `comm ... rank R nranks N` lines)."""

    ts_ns: int
    job_id: str
    host: str
    pid: int
    comm_id: str
    rank: int
    nranks: int
    cuda_dev: int | None
    bus_id: str | None
    origin: LogOrigin


@dataclass(frozen=True, slots=True)
class ChannelEdge:
    """One hop of a ring or tree channel as the printing rank saw it.

    `net_dev` is the index into that process's NetDevices list when the hop crosses the
    network (`via NET/IB/2`), None for intra-node transports (P2P, SHM, NVLS).
    `direction` is "send", "receive" or "" when NCCL did not say.
    """

    ts_ns: int
    job_id: str
    host: str
    pid: int
    comm_id: str
    channel: int
    src_rank: int
    dst_rank: int
    direction: str
    transport: str
    net_dev: int | None
    origin: LogOrigin


@dataclass(frozen=True, slots=True)
class InitComplete:
    """A rank finished communicator init: the job was healthy at least until here."""

    ts_ns: int
    job_id: str
    host: str
    pid: int
    comm_id: str
    rank: int
    nranks: int
    origin: LogOrigin


class ErrorSide(StrEnum):
    """Which side of the wire an IB/RoCE failure points at: what decides whether it is held
    against a link (see `attribution.corroboration`)."""

    FABRIC = "fabric"  # the wire: retries ran out (12, 13), a port went down
    HOST = "host"  # a NIC, its driver, memory registration or the software at either end
    CONSEQUENCE = "consequence"  # flushed (5) after another failure on its queue pair
    UNKNOWN = "unknown"  # a status or event ibverbs does not document, or none was read


@dataclass(frozen=True, slots=True)
class Completion:
    """An IB/RoCE work completion with error, as NCCL printed it (`Got completion ...`).

    `status` is ibverbs' `ibv_wc_status` (12: transport retry counter exceeded) and
    `status_name` its enum name whether or not NCCL printed it. `direction` is NCCL's request
    type (`Send`, `Recv`, `Flush`), "" before NCCL 2.18 printed it. The GIDs are as printed (on
    RoCE the only per-NIC identity of the line; NCCL prints none on InfiniBand); `hca` is the
    local device NCCL 2.22+ names at the end.
    """

    status: int
    status_name: str
    side: ErrorSide
    vendor_err: int | None = None
    opcode: int | None = None
    length: int | None = None
    direction: str = ""
    local_gid: str = ""
    remote_gids: tuple[str, ...] = ()
    hca: str = ""


@dataclass(frozen=True, slots=True)
class AsyncEvent:
    """An ibverbs asynchronous event NCCL relayed: `event` as `ibv_event_type_str` names it
    ("port error"), on `hca` port `port` when NCCL 2.20+ printed them ("" and None before)."""

    event: str
    side: ErrorSide
    hca: str = ""
    port: int | None = None


@dataclass(frozen=True, slots=True)
class NetError:
    """A transport error NCCL reported: IB/RoCE completion error, async event or socket failure.

    `peer` is the remote address NCCL printed (IP or host, without port), when it did.
    `cuda_dev` is the `[N]` of the NCCL prefix (the printing process's CUDA device), None on a
    line without one. `completion` / `async_event` hold what an IB completion error or async
    event says beyond its kind; None for other kinds, and for records stored before they
    were read.
    """

    ts_ns: int
    job_id: str
    host: str
    pid: int
    kind: str  # "ib-completion", "socket", "remote-error", ...
    peer: str | None
    detail: str
    origin: LogOrigin
    cuda_dev: int | None = None
    completion: Completion | None = None
    async_event: AsyncEvent | None = None

    @property
    def side(self) -> ErrorSide:
        """The side the error points at; UNKNOWN for socket and PyTorch-only errors."""
        if self.completion is not None:
            return self.completion.side
        if self.async_event is not None:
            return self.async_event.side
        return ErrorSide.UNKNOWN


@dataclass(frozen=True, slots=True)
class CollectiveTimeout:
    """A rank's watchdog (PyTorch ProcessGroupNCCL) gave up on a collective.

    `started_ns` is derived from the line itself (`ran for N milliseconds`), so the stall
    time is known even when the line is the only evidence.
    """

    ts_ns: int
    job_id: str
    host: str | None
    rank: int | None
    seq: int | None
    op: str
    timeout_ms: int | None
    ran_for_ms: int | None
    started_ns: int
    origin: LogOrigin
