"""Canonical records: one shape per fact, made at the edge, understood by every later stage.

Nothing downstream of a decoder parses vendor paths or raw log text again; it sees only these
frozen dataclasses. Times are integer nanoseconds since the Unix epoch (UTC), as gNMI carries
them, so that ordering and arithmetic are exact.

The records are declared by domain, one module each (`bounds`, `telemetry`, `comm_facts`,
`job_facts`, `dead_letters`, `verdicts`); every name is importable from here, as the rest of
railtrace does.
"""

from __future__ import annotations

from railtrace.streams.records import (
    bounds,
    comm_facts,
    dead_letters,
    job_facts,
    telemetry,
    verdicts,
)
from railtrace.streams.records.bounds import (
    EARLIEST_NS,
    JOB_ID_MAX_LENGTH,
    JOB_ID_PATTERN,
    LATEST_NS,
    in_time_range,
    valid_job_id,
)
from railtrace.streams.records.comm_facts import (
    AsyncEvent,
    ChannelEdge,
    CollectiveTimeout,
    Completion,
    ErrorSide,
    InitComplete,
    LogOrigin,
    NetDevice,
    NetDevices,
    NetError,
    RankInfo,
)
from railtrace.streams.records.dead_letters import (
    DeadLetter,
)
from railtrace.streams.records.job_facts import (
    JobFact,
    JobPlacement,
    NicEvent,
    PlacedHost,
    Progress,
    RasReport,
    WatchdogState,
    XidEvent,
)
from railtrace.streams.records.telemetry import (
    COUNTER_METRICS,
    FAULT_COUNTERS,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    Metric,
    TelemetryValue,
)
from railtrace.streams.records.verdicts import (
    DIAGNOSIS_TEXT,
    CablingEvent,
    Candidate,
    CauseKind,
    Diagnosis,
    Evidence,
    JobState,
    NodeEvent,
    Verdict,
)

#: The modules that declare records, in the order the wire codec lists their types.
MODULES = (bounds, telemetry, comm_facts, job_facts, dead_letters, verdicts)

__all__ = [
    "COUNTER_METRICS",
    "DIAGNOSIS_TEXT",
    "EARLIEST_NS",
    "FAULT_COUNTERS",
    "JOB_ID_MAX_LENGTH",
    "JOB_ID_PATTERN",
    "LATEST_NS",
    "MODULES",
    "AsyncEvent",
    "CablingEvent",
    "Candidate",
    "CauseKind",
    "ChannelEdge",
    "CollectiveTimeout",
    "Completion",
    "DeadLetter",
    "Diagnosis",
    "ErrorSide",
    "Evidence",
    "InitComplete",
    "JobFact",
    "JobPlacement",
    "JobState",
    "LinkEvent",
    "LinkEventKind",
    "LinkSample",
    "LogOrigin",
    "Metric",
    "NetDevice",
    "NetDevices",
    "NetError",
    "NicEvent",
    "NodeEvent",
    "PlacedHost",
    "Progress",
    "RankInfo",
    "RasReport",
    "TelemetryValue",
    "Verdict",
    "WatchdogState",
    "XidEvent",
    "in_time_range",
    "valid_job_id",
]
