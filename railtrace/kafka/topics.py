"""Every Kafka topic railtrace reads or writes, declared once.

Names carry a version (`railtrace.link-samples.v1`) so that a change of value format is a new
topic, not a surprise for old consumers. deploy/kafka/README.md documents the same table for
people; a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class TopicSpec:
    suffix: str
    key: str
    value: str
    retention_ms: int
    doc: str
    compacted: bool = False


RAW_GNMI = TopicSpec(
    "raw.gnmi.v1",
    "switch name (railtrace collectors, replay); gnmic's `source_sub` or `source:::sub` key, "
    "or none, from gnmic's Kafka output (keyless messages are re-published keyed by switch)",
    "one gnmic message, `json` format (a notification object) or `event` format (an array of "
    "events, or one event with split-events)",
    3 * DAY_MS,
    "raw gNMI notifications",
)
RAW_SNMP = TopicSpec(
    "raw.snmp.v1",
    "device name",
    '{"device", "ts_ns", "kind": "poll"|"trap", "ifnames": {ifIndex: name}, '
    '"varbinds": {numeric OID: value}}',
    3 * DAY_MS,
    "raw SNMP polls and traps",
)
RAW_LOGS = TopicSpec(
    "raw.logs.v1",
    "job id",
    '{"job_id", "source", "line_no" (1-based, of the first line), "line" or "lines", '
    '"year" (optional: the year of the file, for log prefixes without one)}',
    7 * DAY_MS,
    "raw NCCL / PyTorch / kernel log lines",
)
RAW_SCHEDULER = TopicSpec(
    "raw.scheduler.v1",
    "job id (the key of its raw log lines: both reach the worker that owns the job)",
    '{"v": 1, "source", "first" (1-based line or item position in the output), "text" (one '
    'job\'s record as `scontrol show job -d`, `squeue --json` or kubectl printed it), "tz" '
    '(the zone scontrol printed its times in), "polled_ns" (optional), "gone_ns" (optional: '
    "the job ended unseen, Slurm no longer held it at this poll)}",
    7 * DAY_MS,
    "job starts, ends and placements, as the scheduler printed them",
)
RAW_NODE_EVENTS = TopicSpec(
    "raw.node-events.v1",
    "node (host) name",
    '{"v": 1, "kind": "xid"|"release", "node", "ts_ns", "quarantined", "decision", ...}: a '
    "kernel Xid seen by `railtrace collect xid` and the quarantine decision it led to "
    "(railtrace/collectors/hosts/nodeevents.py)",
    30 * DAY_MS,
    "GPU Xid events and quarantine decisions, per node",
)
LINK_SAMPLES = TopicSpec(
    "link-samples.v2",
    "none: each message holds the samples of the links that the default partitioner puts in "
    "its partition (murmur2 of the link id), so a link's samples stay in one partition",
    "JSON list of [ts_ns, link_id, device, interface, metric, qualifier, rate, interval_s]",
    3 * DAY_MS,
    "per-interval rates of interface counters",
)
LINK_EVENTS = TopicSpec(
    "link-events.v1",
    "link id",
    "JSON list of LinkEvent records (railtrace.streams.codec)",
    30 * DAY_MS,
    "link anomalies and state changes; every worker reads all of it",
)
CABLING_EVENTS = TopicSpec(
    "cabling-events.v1",
    "device (the switch whose LLDP table showed the difference)",
    "JSON list of CablingEvent records (railtrace.streams.codec)",
    365 * DAY_MS,
    "ports whose LLDP neighbour differs from cables.csv (miswired, unexpected, missing) "
    "and the differences that went away (resolved)",
)
JOB_FACTS = TopicSpec(
    "job-facts.v1",
    "job id",
    "JSON list of job fact records (RankInfo, ChannelEdge, NetError, CollectiveTimeout, ...)",
    30 * DAY_MS,
    "what the logs say about each job",
)
VERDICTS = TopicSpec(
    "verdicts.v1",
    "job id",
    "JSON list holding one Verdict record",
    365 * DAY_MS,
    "each change of a job's verdict",
)
DEAD_LETTERS = TopicSpec(
    "dead-letters.v1",
    "name of the topic the bad message came from",
    '{"topic", "partition", "offset", "key" and "value" (base64 of the original bytes), "reason"}',
    30 * DAY_MS,
    "input that could not be used, with the reason",
)

NORMALIZER_STATE = TopicSpec(
    "normalizer-state.v1",
    "`gnmi:` or `snmp:` and the raw message key (a device); written to the partition number "
    "of the raw topic the device's messages are in",
    '{"v", "upto": the next raw offset the state has not seen, "state": a Normalizer snapshot, '
    '"cabling": the device\'s LLDP table and reported differences, if it sends LLDP}',
    -1,
    "checkpoints of the telemetry stage's per-device state (compacted)",
    compacted=True,
)

ALL = (
    RAW_GNMI,
    RAW_SNMP,
    RAW_LOGS,
    RAW_SCHEDULER,
    RAW_NODE_EVENTS,
    LINK_SAMPLES,
    LINK_EVENTS,
    CABLING_EVENTS,
    JOB_FACTS,
    VERDICTS,
    DEAD_LETTERS,
    NORMALIZER_STATE,
)


def name(prefix: str, spec: TopicSpec) -> str:
    return f"{prefix}.{spec.suffix}"
