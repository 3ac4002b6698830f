-- railtrace ClickHouse schema, rendered from railtrace/store/schema.py; do not edit by hand.
-- Regenerate with: python -m railtrace.store.schema > deploy/clickhouse/schema.sql
--
-- Retention (TTL) counts from inserted_at (DateTime DEFAULT now()), NOT from the event time
-- `ts`: railtrace replays captures recorded months ago, and a TTL on `ts` would delete such
-- a replay the moment it is inserted. link_samples are kept 30 days after arrival; link events,
-- cabling events, node events, job facts, verdicts and dead letters 12 months.
--
-- Idempotent writes: verdicts (one per job), link_events (one per device, interface, kind, ts
-- and series), cabling_events and node_events (one per device or node, kind and ts) are
-- ReplacingMergeTree, read with FINAL; every table keeps
-- the hashes of its last non_replicated_deduplication_window insert blocks so that a retried
-- identical batch is dropped.
--
-- link_fault_minutes is a rollup kept by the materialized view link_fault_minutes_mv: the
-- nonzero counts of the fault counters per link and minute, for ranking the worst links.

CREATE DATABASE IF NOT EXISTS railtrace;

-- link_samples: per-second counter rates and gauge readings per interface; kept 30 days
CREATE TABLE IF NOT EXISTS railtrace.link_samples
(
    ts DateTime64(9, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    device LowCardinality(String),
    interface LowCardinality(String),
    link_id String COMMENT 'cable id; empty when unknown',
    metric LowCardinality(String),
    qualifier LowCardinality(String),
    rate Float64 CODEC(Gorilla, ZSTD(1)),
    interval_s Float64,
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time'
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(ts)
ORDER BY (device, interface, metric, qualifier, ts)
TTL inserted_at + INTERVAL 30 DAY
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'per-second counter rates and gauge readings per interface; kept 30 days';

-- link_events: link anomalies and state changes; one row per (device, interface, kind, ts, series)
CREATE TABLE IF NOT EXISTS railtrace.link_events
(
    ts DateTime64(9, 'UTC'),
    device LowCardinality(String),
    interface LowCardinality(String),
    link_id String COMMENT 'cable id; empty when unknown',
    kind LowCardinality(String),
    value Float64,
    detail String,
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time',
    series LowCardinality(String) COMMENT 'the counter, direction or lane it is about; empty when the port has one',
    span_s Float64 COMMENT 'how long before ts it may have begun: the sampling interval of a rate'
)
ENGINE = ReplacingMergeTree
ORDER BY (device, interface, kind, ts, series)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'link anomalies and state changes; one row per (device, interface, kind, ts, series)';

-- cabling_events: ports whose LLDP neighbour differs from cables.csv, and when that stopped
CREATE TABLE IF NOT EXISTS railtrace.cabling_events
(
    ts DateTime64(9, 'UTC'),
    device LowCardinality(String),
    interface LowCardinality(String),
    kind LowCardinality(String),
    planned String COMMENT 'device:interface; empty if none',
    seen String COMMENT 'device:interface; empty if none',
    detail String,
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time'
)
ENGINE = ReplacingMergeTree
ORDER BY (device, interface, ts, kind)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'ports whose LLDP neighbour differs from cables.csv, and when that stopped';

-- node_events: GPU Xids and quarantine decisions per node, from `railtrace collect xid`
CREATE TABLE IF NOT EXISTS railtrace.node_events
(
    ts DateTime64(9, 'UTC'),
    node LowCardinality(String),
    kind LowCardinality(String) COMMENT 'xid or release',
    xid Nullable(Int32),
    pci String,
    detail String,
    quarantined Bool COMMENT 'the node\'s state after it',
    action LowCardinality(String) COMMENT 'quarantine or release when the event changed the state, else empty',
    reason String,
    sdc Bool COMMENT 'suspected silent data corruption',
    line String COMMENT 'the kernel line as read',
    source String,
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time'
)
ENGINE = ReplacingMergeTree
ORDER BY (node, ts, kind, pci)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'GPU Xids and quarantine decisions per node, from `railtrace collect xid`';

-- job_facts: facts parsed from NCCL, PyTorch and kernel logs, with the line they came from
CREATE TABLE IF NOT EXISTS railtrace.job_facts
(
    ts DateTime64(9, 'UTC'),
    job_id String,
    kind LowCardinality(String),
    host LowCardinality(String) COMMENT 'empty when unknown',
    rank Nullable(Int32),
    comm_id String COMMENT 'empty when not per communicator',
    detail String COMMENT 'the whole record as JSON',
    origin_source String,
    origin_line UInt64,
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time'
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (job_id, origin_source, origin_line, kind)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'facts parsed from NCCL, PyTorch and kernel logs, with the line they came from';

-- verdicts: the current verdict of each job; read with FINAL for one row per job
CREATE TABLE IF NOT EXISTS railtrace.verdicts
(
    job_id String,
    state LowCardinality(String),
    stalled_at Nullable(DateTime64(9, 'UTC')),
    decided_at Nullable(DateTime64(9, 'UTC')),
    cause_kind LowCardinality(String),
    link_id String COMMENT 'empty unless the cause is a link',
    node String COMMENT 'empty unless the cause is a node',
    confidence Float64,
    payload String COMMENT 'the full verdict as JSON',
    updated_at DateTime64(9, 'UTC') COMMENT 'version: the newest row wins',
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time'
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (job_id)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'the current verdict of each job; read with FINAL for one row per job';

-- dead_letters: input that could not be used, with the reason; kept 12 months
CREATE TABLE IF NOT EXISTS railtrace.dead_letters
(
    ts DateTime64(9, 'UTC') DEFAULT now64(9, 'UTC') COMMENT 'time of receipt',
    source LowCardinality(String),
    reason String,
    line_no UInt64,
    raw String,
    extra Map(String, String),
    inserted_at DateTime DEFAULT now() COMMENT 'arrival time; every TTL counts from here, not from the event time'
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(inserted_at)
ORDER BY (source, ts)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1
COMMENT 'input that could not be used, with the reason; kept 12 months';

-- link_fault_minutes: nonzero fault-counter counts per link and minute, rolled up from link_samples
CREATE TABLE IF NOT EXISTS railtrace.link_fault_minutes
(
    minute DateTime('UTC'),
    metric LowCardinality(String),
    link_id String,
    total SimpleAggregateFunction(sum, Float64) COMMENT 'rate x interval summed: the count',
    peak_rate SimpleAggregateFunction(max, Float64),
    samples SimpleAggregateFunction(sum, UInt64) COMMENT 'samples with a nonzero count',
    inserted_at SimpleAggregateFunction(max, DateTime)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (metric, minute, link_id)
TTL inserted_at + INTERVAL 12 MONTH
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'nonzero fault-counter counts per link and minute, rolled up from link_samples';

-- link_fault_minutes_mv: keeps link_fault_minutes up to date from every link_samples insert
CREATE MATERIALIZED VIEW IF NOT EXISTS railtrace.link_fault_minutes_mv
TO railtrace.link_fault_minutes
AS SELECT toStartOfMinute(toDateTime(ts)) AS minute, metric, link_id,
       sum(rate * interval_s) AS total, max(rate) AS peak_rate, toUInt64(count()) AS samples,
       max(inserted_at) AS inserted_at
FROM railtrace.link_samples
WHERE rate > 0 AND link_id != '' AND metric IN ('carrier_transitions', 'ecn_marked', 'fec_corrected', 'fec_uncorrectable', 'in_discards', 'in_errors', 'in_fcs_errors', 'out_discards', 'out_errors', 'pfc_rx_pause', 'pfc_tx_pause', 'symbol_errors')
GROUP BY minute, metric, link_id;
