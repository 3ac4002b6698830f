"""Canonical records: one shape per fact, made at the edge, understood by every later stage.

Nothing downstream of a decoder parses vendor paths or raw log text again; it sees only these
frozen dataclasses. Times are integer nanoseconds since the Unix epoch (UTC), as gNMI carries
them, so that ordering and arithmetic are exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from railtrace.topology.ends import CablingKind, Endpoint, LinkRef

#: The event times railtrace holds, [EARLIEST_NS, LATEST_NS): from the Unix epoch to the start
#: of 2106. The store's narrowest time type sets it (the per-minute fault rollup and
#: `inserted_at` are ClickHouse `DateTime`, 32-bit seconds, which wraps on 2106-02-07): a later
#: time would be filed in another year. Decoders refuse times outside it, and the API accepts
#: no window outside it.
EARLIEST_NS = 0
LATEST_NS = 4_291_747_200 * 1_000_000_000


#: Scheduler job ids (Slurm `1234_5`, Kubernetes names, run names): letters, digits and
#: `._:@+-`, starting with a letter or digit, at most 128 long. One grammar for every layer:
#: the readers refuse any other (it could not be asked for by URL), the API accepts no other.
JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$"
JOB_ID_MAX_LENGTH = 128
_JOB_ID = re.compile(JOB_ID_PATTERN[:-1] + r"\Z")


def valid_job_id(job_id: str) -> bool:
    """Whether `job_id` is one railtrace can store and serve.

    >>> valid_job_id("4812_3"), valid_job_id("../etc"), valid_job_id("a b"), valid_job_id("")
    (True, False, False, False)
    """
    return len(job_id) <= JOB_ID_MAX_LENGTH and _JOB_ID.match(job_id) is not None


def in_time_range(ts_ns: int) -> bool:
    """Whether railtrace can hold an event at `ts_ns` (see LATEST_NS).

    >>> in_time_range(1_700_000_000 * 10**9), in_time_range(LATEST_NS), in_time_range(-1)
    (True, False, False)
    """
    return EARLIEST_NS <= ts_ns < LATEST_NS


class Metric(StrEnum):
    """Interface-level quantities railtrace understands, whatever path or OID carried them."""

    IN_OCTETS = "in_octets"
    OUT_OCTETS = "out_octets"
    IN_PKTS = "in_pkts"
    OUT_PKTS = "out_pkts"
    IN_ERRORS = "in_errors"
    OUT_ERRORS = "out_errors"
    IN_DISCARDS = "in_discards"
    OUT_DISCARDS = "out_discards"
    IN_FCS_ERRORS = "in_fcs_errors"
    SYMBOL_ERRORS = "symbol_errors"
    FEC_CORRECTED = "fec_corrected"
    FEC_UNCORRECTABLE = "fec_uncorrectable"
    PFC_RX_PAUSE = "pfc_rx_pause"
    PFC_TX_PAUSE = "pfc_tx_pause"
    ECN_MARKED = "ecn_marked"
    CARRIER_TRANSITIONS = "carrier_transitions"
    OPER_STATUS = "oper_status"
    RX_POWER_DBM = "rx_power_dbm"
    TEMPERATURE_C = "temperature_c"
    PORT_SPEED_GBPS = "port_speed_gbps"  # the speed the port negotiated


#: Metrics that are monotonically increasing counters (turned into rates); the rest are gauges
#: or states and pass through as they are.
COUNTER_METRICS = frozenset(
    {
        Metric.IN_OCTETS,
        Metric.OUT_OCTETS,
        Metric.IN_PKTS,
        Metric.OUT_PKTS,
        Metric.IN_ERRORS,
        Metric.OUT_ERRORS,
        Metric.IN_DISCARDS,
        Metric.OUT_DISCARDS,
        Metric.IN_FCS_ERRORS,
        Metric.SYMBOL_ERRORS,
        Metric.FEC_CORRECTED,
        Metric.FEC_UNCORRECTABLE,
        Metric.PFC_RX_PAUSE,
        Metric.PFC_TX_PAUSE,
        Metric.ECN_MARKED,
        Metric.CARRIER_TRANSITIONS,
    }
)
#: The counters that say something is wrong (rather than how busy a port is): links are
#: ranked by them, and the store keeps a sparse per-minute rollup of their nonzero counts.
FAULT_COUNTERS = COUNTER_METRICS - {
    Metric.IN_OCTETS,
    Metric.OUT_OCTETS,
    Metric.IN_PKTS,
    Metric.OUT_PKTS,
}


# TelemetryValue and LinkSample are made several times per telemetry message, so they are not
# frozen: a frozen dataclass sets each field through object.__setattr__, and constructing one
# took 560 ns against 124 ns (Python 3.11), a tenth of the streaming worker's time. They stay
# hashable by value; treat them as immutable all the same.
@dataclass(slots=True, unsafe_hash=True)
class TelemetryValue:
    """One decoded leaf from a switch: a counter reading, a gauge, or a state.

    `value` is a float for counters and gauges and a lower-case string for states
    (`oper_status` is "up", "down", ...). `qualifier` distinguishes sub-instances of one metric
    on one interface, such as the PFC priority ("3") or a transceiver lane; it is "" otherwise.
    """

    ts_ns: int
    device: str
    interface: str
    metric: Metric
    value: float | str
    qualifier: str = ""


@dataclass(slots=True, unsafe_hash=True)
class LinkSample:
    """A per-second rate of one counter over one sampling interval (or a gauge reading)."""

    ts_ns: int
    device: str
    interface: str
    metric: Metric
    qualifier: str
    rate: float
    interval_s: float


class LinkEventKind(StrEnum):
    """Anomalies and state changes railtrace derives from link telemetry."""

    DOWN = "down"
    UP = "up"
    FLAP = "flap"
    ERROR_BURST = "error-burst"
    FEC_UNCORRECTABLE = "fec-uncorrectable"
    PFC_STORM = "pfc-storm"  # the peer pauses this port (pause frames received)
    PFC_PAUSING = "pfc-pausing"  # this port pauses its peer (pause frames sent)
    RX_POWER_LOW = "rx-power-low"
    SPEED_DOWN = "speed-down"  # the port negotiated a lower speed than it had
    TRAFFIC_DROP = "traffic-drop"
    COUNTER_RESET = "counter-reset"


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """Something happened on one interface at `ts_ns`; `detail` says what, for a human.

    `series` names the part of the interface the event is about when one interface has
    several (the counter of an error burst or a reset, the direction of a traffic drop or of
    pauses, an optic lane), empty when there is one. Two detectors can fire on one port at
    the same instant (in-errors and in-fcs-errors bursts), so (device, interface, kind,
    series, ts) is what makes an event distinct: the store keeps one row per such identity.

    `span_s` is how long before `ts_ns` the anomaly may have begun: a rate is reported at the
    end of the interval it was measured over, so an error burst in a 60 s sample began up to
    60 s before its stamp. 0 for what is seen at an instant (a state change, a gauge).
    """

    ts_ns: int
    device: str
    interface: str
    kind: LinkEventKind
    value: float = 0.0
    detail: str = ""
    series: str = ""
    span_s: float = 0.0


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


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Input that could not be used, with the reason; counted and kept, never fatal."""

    source: str
    reason: str
    raw: bytes = b""
    line_no: int = 0
    extra: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Verdicts: the answer to "which link stalled job X".
# ---------------------------------------------------------------------------------------------


class JobState(StrEnum):
    STALLED = "stalled"
    SLOW = "slow"
    HEALTHY = "healthy"
    UNKNOWN = "unknown"


class Diagnosis(StrEnum):
    """Which side of a culprit failed: what the engineer sends someone to fix."""

    HOST_NIC = "host-nic"  # the host's NIC failed (its kernel reports the device unhealthy)
    SWITCH_PORT = "switch-port"  # the link went down at the switch with a healthy NIC
    OPTIC = "optic"  # a transceiver or cable dying: receive power fell
    LINK_ERRORS = "link-errors"  # the link stays up but corrupts frames (cable, optic, port)
    LINK_SPEED = "link-speed"  # the link came back at a lower speed (cable, optic, port)
    PFC_SOURCE = "pfc-source"  # the device past this link stopped draining: pauses spread
    GPU = "gpu"  # a GPU of the node failed (Xid)


#: How each diagnosis reads next to the culprit, in a terminal or an alert.
DIAGNOSIS_TEXT: dict[str, str] = {
    Diagnosis.HOST_NIC: "the host's NIC failed",
    Diagnosis.SWITCH_PORT: "went down at the switch, NIC healthy",
    Diagnosis.OPTIC: "optic dying: receive power fell first",
    Diagnosis.LINK_ERRORS: "up but corrupting frames",
    Diagnosis.LINK_SPEED: "up at a lower speed than it had",
    Diagnosis.PFC_SOURCE: "source of spreading PFC pauses",
    Diagnosis.GPU: "GPU failed",
}


class CauseKind(StrEnum):
    LINK = "link"
    NODE = "node"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """A GPU node's kernel Xid or an operator's release, with the quarantine state it left.

    `quarantined` is the node's state after the event; `action` is "quarantine" or "release"
    when the event changed it, else ""; `reason` and `sdc` (suspected silent data corruption,
    lifted only by an explicit release) belong to that decision.
    """

    ts_ns: int
    node: str
    kind: str  # "xid" or "release"
    xid: int | None
    pci: str
    detail: str
    quarantined: bool
    action: str
    reason: str
    sdc: bool
    line: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class CablingEvent:
    """A port's cabling started or stopped differing from the plan, as seen from `device`."""

    ts_ns: int
    device: str
    interface: str
    kind: CablingKind
    planned: Endpoint | None
    seen: Endpoint | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One observation behind a verdict, in words an engineer can check against the raw input."""

    ts_ns: int
    source: str  # "gnmi", "nccl", "pytorch", "kernel", "topology"
    kind: str
    subject: str  # link id, host, or rank the observation is about
    detail: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A link or node that could explain the stall, with its score and the evidence for it."""

    kind: CauseKind
    score: float
    link: LinkRef | None = None
    node: str | None = None
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """railtrace's current answer for one job; replaced as evidence arrives, never looked ahead.

    `decided_at_ns` is the event time of the evidence at which the current cause was first
    reached, so "how long after the fault did we know" can be measured.
    """

    job_id: str
    state: JobState
    stalled_at_ns: int | None
    decided_at_ns: int | None
    cause_kind: CauseKind
    cause_link: LinkRef | None
    cause_node: str | None
    confidence: float
    candidates: tuple[Candidate, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    ranks: int = 0
    hosts: int = 0
    #: Which part failed, as far as the evidence tells (see `Diagnosis`); "" when unknown.
    diagnosis: str = ""
    #: The candidates (link ids, node names) scoring within `judging.tie_margin` of the named
    #: cause, the cause first: the evidence cannot tell them apart, and the verdict says so
    #: rather than draw one culprit. Empty when the cause clearly leads.
    tied: tuple[str, ...] = ()
    #: GPUs the job holds, and when its watchdog fired (`watchdog_seen`) or would fire, for
    #: a stalled job: what the stall cost (`attribution.cost`). 0 / None otherwise.
    gpus: int = 0
    watchdog_at_ns: int | None = None
    watchdog_seen: bool = False
