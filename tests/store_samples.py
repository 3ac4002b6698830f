"""Small, realistic records for the store and API tests (a helper module, not a test file)."""

from __future__ import annotations

from railtrace.streams.records import (
    Candidate,
    CauseKind,
    ChannelEdge,
    CollectiveTimeout,
    DeadLetter,
    Evidence,
    InitComplete,
    JobFact,
    JobState,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    LogOrigin,
    Metric,
    NetDevice,
    NetDevices,
    NetError,
    RankInfo,
    RasReport,
    Verdict,
    WatchdogState,
    XidEvent,
)
from railtrace.topology.ends import Endpoint, LinkRef

#: 2026-05-05T06:16:47.123456789Z, a time with all nine digits significant.
T0 = 1_777_961_807_123_456_789
SECOND = 1_000_000_000

LINK = LinkRef(
    link_id="leaf03:Ethernet1/7--gpu-node-12:mlx5_3",
    a=Endpoint("leaf03", "Ethernet1/7"),
    b=Endpoint("gpu-node-12", "mlx5_3"),
)


def link_sample(i: int = 0, link_id: str = LINK.link_id) -> tuple[LinkSample, str]:
    sample = LinkSample(
        ts_ns=T0 + i * SECOND,
        device="leaf03",
        interface="Ethernet1/7",
        metric=Metric.PFC_RX_PAUSE,
        qualifier="3",
        rate=1234.5 + i,
        interval_s=1.0,
    )
    return sample, link_id


def link_event(i: int = 0, detail: str = "oper-status down") -> tuple[LinkEvent, str]:
    event = LinkEvent(
        ts_ns=T0 + i * SECOND,
        device="leaf03",
        interface="Ethernet1/7",
        kind=LinkEventKind.DOWN,
        value=0.0,
        detail=detail,
    )
    return event, LINK.link_id


def job_facts(job_id: str = "slurm-4242") -> list[JobFact]:
    """One fact of every kind, each from its own line of a capture."""

    def at(line: int) -> LogOrigin:
        return LogOrigin("nccl-rank0.log", line)

    return [
        NetDevices(T0, job_id, "gpu-node-12", 811, (NetDevice(0, "mlx5_3", 1, "RoCE"),), at(1)),
        RankInfo(T0, job_id, "gpu-node-12", 811, "0x7f3a", 3, 16, 3, "0000:1a:00.0", at(2)),
        ChannelEdge(T0, job_id, "gpu-node-12", 811, "0x7f3a", 2, 3, 4, "send", "NET", 0, at(3)),
        InitComplete(T0, job_id, "gpu-node-12", 811, "0x7f3a", 3, 16, at(4)),
        NetError(T0, job_id, "gpu-node-12", 811, "ib-completion", "10.0.3.7", "status 12", at(5)),
        CollectiveTimeout(T0, job_id, None, 3, 1181, "ALLREDUCE", 600_000, 600_012, T0, at(6)),
        XidEvent(T0, job_id, "gpu-node-12", "0000:1a:00.0", 79, "fallen off the bus", at(7)),
        RasReport(T0, job_id, None, "rank 3 unresponsive", at(8)),
        WatchdogState(T0, job_id, None, 3, "0", "failure", 1181, 1182, 1180, None, "", at(9)),
    ]


def dead_letter(i: int = 0) -> DeadLetter:
    return DeadLetter(
        source="gnmi-capture.jsonl",
        reason="unknown path",
        raw=b"\xff\x00 not utf-8",
        line_no=10 + i,
        extra={"path": "/interfaces/interface/state/x"},
    )


def verdict(
    job_id: str = "slurm-4242",
    state: JobState = JobState.STALLED,
    confidence: float = 0.87,
) -> Verdict:
    """A link verdict with a runner-up node candidate listed first (unranked on purpose)."""
    down = Evidence(T0, "gnmi", "down", LINK.link_id, "leaf03 Ethernet1/7 oper-status down")
    timeout = Evidence(T0 + 600 * SECOND, "pytorch", "timeout", "rank 3", "ALLREDUCE 600012 ms")
    return Verdict(
        job_id=job_id,
        state=state,
        stalled_at_ns=T0,
        decided_at_ns=T0 + 600 * SECOND,
        cause_kind=CauseKind.LINK,
        cause_link=LINK,
        cause_node=None,
        confidence=confidence,
        candidates=(
            Candidate(CauseKind.NODE, 0.1, node="gpu-node-12", evidence=(timeout,)),
            Candidate(CauseKind.LINK, confidence, link=LINK, evidence=(down, timeout)),
        ),
        evidence=(down, timeout),
        ranks=16,
        hosts=2,
        **(
            {"gpus": 16, "watchdog_at_ns": T0 + 600 * SECOND, "watchdog_seen": True}
            if state == JobState.STALLED
            else {}
        ),
    )
