"""Facts of what else happens to a job and its hosts: Xids, NIC events, NCCL RAS reports,
PyTorch watchdog states, training progress and where the scheduler placed it; and `JobFact`,
every fact a job can have."""

from __future__ import annotations

from dataclasses import dataclass

from railtrace.streams.records.comm_facts import (
    ChannelEdge,
    CollectiveTimeout,
    InitComplete,
    LogOrigin,
    NetDevices,
    NetError,
    RankInfo,
)


@dataclass(frozen=True, slots=True)
class XidEvent:
    """An NVIDIA driver Xid from the kernel log of a host.

    A GPU that fell off the bus without an `Xid` line (the driver's multi-line "The NVIDIA GPU
    ... has fallen off the bus" message) is the same loss as Xid 79 and is read as one.
    `caused_by` is the Xid the driver names as the cause (`caused by previous Xid 149`): such
    an Xid is a consequence of that fault, not a second one. `severity` ("fatal", "nonfatal")
    and `link` are what NVLink Xids (144-150) print about the link that failed.
    """

    ts_ns: int
    job_id: str
    host: str
    pci: str
    xid: int
    detail: str
    origin: LogOrigin
    #: The process the driver named (`pid=`, `name=`); None and "" when `<unknown>`.
    pid: int | None = None
    process: str = ""
    caused_by: int | None = None
    severity: str = ""
    link: int | None = None


@dataclass(frozen=True, slots=True)
class NicEvent:
    """A host's kernel on one of its RDMA NICs (mlx5): its port went down or up, or the device
    itself failed (firmware health, fatal error). What only the host side can tell: a switch
    sees a port go down whichever end failed.

    `netdev` is the interface the kernel named ("" when it named only the PCI function), for
    an InfiniBand port state (`mlx5_5: Port: 1 Link ACTIVE`) the RDMA device, as NCCL and
    `cables.csv` name it; `state` is "down", "up", "init" (trained but not yet active) or
    "failed"; `port` is the device's port number when the kernel printed one.
    """

    ts_ns: int
    job_id: str
    host: str
    pci: str
    netdev: str
    state: str
    detail: str
    origin: LogOrigin
    port: int | None = None


@dataclass(frozen=True, slots=True)
class RasReport:
    """A line of an NCCL RAS report: a row of its communicator summary, or a rank or process
    that a section of the report names (missing, dead, or out of step).

    `section` is "summary" for a row of the summary table (its `status` and `errors` columns,
    `comm` the group "#N"), else the section the line stood under: "INCOMPLETE", "DEAD",
    "ERROR" or "MISMATCH" ("" from reports read before sections were kept), or "PEER_DEAD"
    for the monitor mode's event of that name (`host` the dead peer's node). In a MISMATCH
    section a rank's `op_count` is how far it launched `operation` while most ranks reached
    `peer_count`: `standing` is "ahead" or "behind" them, as NCCL lists only the outliers.
    """

    ts_ns: int
    job_id: str
    host: str | None
    detail: str
    origin: LogOrigin
    section: str = ""
    comm: str = ""
    rank: int | None = None
    status: str = ""
    errors: str = ""
    operation: str = ""
    op_count: int | None = None
    peer_count: int | None = None
    standing: str = ""

    @property
    def trouble(self) -> bool:
        """Whether the line says something is wrong: every section line does; a summary row
        only when its errors say data is missing or a rank failed (a MISMATCH alone is often a
        query racing the collectives, NCCL's documentation says, and its section says more)."""
        return self.section != "summary" or "INCOMPLETE" in self.errors or "ERROR" in self.errors


@dataclass(frozen=True, slots=True)
class WatchdogState:
    """What a rank's PyTorch ProcessGroupNCCL watchdog said about its process group's progress.

    `kind` is "failure" (the watchdog caught a failed or timed-out work: `seq`), "dump" (a rank
    told to dump its state because another rank timed out), "heartbeat" (the monitor found the
    watchdog itself stuck for `stuck_s` and aborts the process) or "teardown" (the process is
    taken down). `last_enqueued` / `last_completed` are the group's work sequence numbers as
    the rank saw them: across ranks of one group, the lowest last-completed was behind.
    `pg` names the process group as printed (its GUID, or its id in older versions), "" when
    the line named none; `rank` is the process's global rank when a launcher prefix gave it,
    else the rank in the group.
    """

    ts_ns: int
    job_id: str
    host: str | None
    rank: int | None
    pg: str
    kind: str
    seq: int | None
    last_enqueued: int | None
    last_completed: int | None
    stuck_s: int | None
    detail: str
    origin: LogOrigin


@dataclass(frozen=True, slots=True)
class Progress:
    """A trainer's step report: the job was making progress at `ts_ns`, at this pace.

    Megatron prints the time per iteration (`step_ms`), torchtitan the tokens per second
    (`tokens_per_s`); a slowdown is judged on whichever the job's lines carry, against the
    job's own earlier pace, never against an absolute figure.
    """

    ts_ns: int
    job_id: str
    host: str | None
    step: int
    step_ms: float | None
    tokens_per_s: float | None
    origin: LogOrigin
    #: The step the run ends at, when the line says (Megatron's `iteration N/ total`).
    total_steps: int | None = None


@dataclass(frozen=True, slots=True)
class PlacedHost:
    """One host of a job as the scheduler placed it, with what it printed about the host."""

    name: str
    #: GPU indexes on the host (Slurm's `GRES=gpu:8(IDX:0-7)`), empty when not printed.
    gpus: tuple[int, ...] = ()
    #: How many GPUs the job holds there, when the scheduler says (a pod's `nvidia.com/gpu`).
    gpu_count: int | None = None
    #: The host's place in the job (torchrun's node rank, a pod's completion index), if known.
    node_rank: int | None = None


@dataclass(frozen=True, slots=True)
class JobPlacement:
    """Where a job runs, as its scheduler printed it: the hosts without which a job whose
    NCCL logs are at WARN (no INFO lines, so no channels) has no paths at all.

    `ts_ns` is when the placement began to hold (the job's start) or, for a job not yet
    started, when it was read; `hosts` is the whole placement when the source lists a job
    (Slurm or an env dump's node list), else the one host of a pod, or the host of a process
    whose env dump was read and the host its MASTER_ADDR names (the job's placement is then
    the union of its facts), or none for a pod of the job on none of its hosts (an MPI
    launcher that only starts mpirun).

    `last_seen_ns` is None when the scheduler printed the job's end. A job can end between two
    polls of the scheduler collector and be forgotten by Slurm (MinJobAge) before the next:
    its end is then not seen but known to lie between two polls, and is published as state
    ENDED (railtrace's word, not Slurm's) with `last_seen_ns` the last poll that listed it
    running and `end_ns` the first that found Slurm no longer holding it.
    """

    ts_ns: int
    job_id: str
    host: str  # the one host of a per-host source, "" for a job-wide placement
    hosts: tuple[PlacedHost, ...]
    scheduler: str  # "slurm", "kubernetes" or "env" (a job's own environment dump)
    state: str  # as the scheduler printed it (RUNNING, PENDING, Running, ...), "" if not
    start_ns: int | None
    end_ns: int | None
    origin: LogOrigin
    last_seen_ns: int | None = None


JobFact = (
    NetDevices
    | RankInfo
    | ChannelEdge
    | InitComplete
    | NetError
    | CollectiveTimeout
    | XidEvent
    | RasReport
    | Progress
    | NicEvent
    | JobPlacement
    | WatchdogState
)
