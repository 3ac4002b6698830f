"""The API's response shapes, kept apart from the records and the storage rows, one module per
resource: `common` (times, a cable's ends, errors), `verdicts` (a job's verdict, job lists,
next steps, timeline), `fabric` (topology, cabling, link counters and blast radius), `nodes`,
`tokens`. Times appear twice: as ISO-8601 UTC strings for people (nanoseconds kept when
present) and as the integer nanoseconds railtrace computes with, for programs.

Every shape is importable from here, as routes and the CLI do.
"""

from railtrace.api.schemas.common import (
    EndpointOut,
    ErrorOut,
    HealthOut,
    LinkOut,
    ValidationErrorOut,
    ValidationProblemOut,
    iso_utc,
)
from railtrace.api.schemas.fabric import (
    CablingDifferenceOut,
    CablingOut,
    CrossingJobOut,
    DeviceOut,
    DifferenceKind,
    LinkDetailOut,
    LinkEventOut,
    LinkJobsOut,
    SeriesOut,
    TopologyLinkOut,
    TopologyOut,
    WorstLinkOut,
    WorstLinksOut,
)
from railtrace.api.schemas.nodes import NodeDetailOut, NodeEventOut, NodeListOut, NodeOut
from railtrace.api.schemas.tokens import TokenListOut, TokenOut
from railtrace.api.schemas.verdicts import (
    CandidateOut,
    CauseOut,
    CostOut,
    EvidenceOut,
    JobListOut,
    JobSummaryOut,
    NextStepOut,
    NextStepsOut,
    TimelineOut,
    VerdictOut,
)

__all__ = [
    "CablingDifferenceOut",
    "CablingOut",
    "CandidateOut",
    "CauseOut",
    "CostOut",
    "CrossingJobOut",
    "DeviceOut",
    "DifferenceKind",
    "EndpointOut",
    "ErrorOut",
    "EvidenceOut",
    "HealthOut",
    "JobListOut",
    "JobSummaryOut",
    "LinkDetailOut",
    "LinkEventOut",
    "LinkJobsOut",
    "LinkOut",
    "NextStepOut",
    "NextStepsOut",
    "NodeDetailOut",
    "NodeEventOut",
    "NodeListOut",
    "NodeOut",
    "SeriesOut",
    "TimelineOut",
    "TokenListOut",
    "TokenOut",
    "TopologyLinkOut",
    "TopologyOut",
    "ValidationErrorOut",
    "ValidationProblemOut",
    "VerdictOut",
    "WorstLinkOut",
    "WorstLinksOut",
    "iso_utc",
]
