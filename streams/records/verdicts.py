"""Verdicts, the answer to "which link stalled job X", with their evidence; and the node
(Xid, quarantine) and cabling events decided beside them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from railtrace.topology.ends import CablingKind, Endpoint, LinkRef

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
