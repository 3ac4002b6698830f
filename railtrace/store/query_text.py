"""The SQL of the store's queries, as text with `{table}` slots and `{name:Type}` parameters.

Kept apart from the code that runs them (`queries`) so each reads as one piece: the texts are
long, and their comments say why a query is shaped as it is.
"""

# Verdicts are read through FINAL in a subquery, and filtered outside it, so that a filter on
# `state` sees only each job's newest row even before a merge has collapsed the old ones.
JOBS_SQL = """\
SELECT job_id, state, cause_kind, link_id, node, confidence,
       toUnixTimestamp64Nano(stalled_at) AS stalled_at_ns,
       toUnixTimestamp64Nano(decided_at) AS decided_at_ns,
       toUnixTimestamp64Nano(updated_at) AS updated_at_ns,
       JSONExtract(payload, 'tied', 'Array(String)') AS tied
FROM (
    SELECT job_id, state, cause_kind, link_id, node, confidence, stalled_at, decided_at,
           updated_at, payload
    FROM {verdicts} FINAL
)
{where}
ORDER BY updated_at DESC, job_id
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

VERDICT_SQL = "SELECT payload FROM {verdicts} FINAL WHERE job_id = {{job_id:String}}"

# A port's state is its latest event; ties in `ts` cannot occur for one port (see
# streams.telemetry.cabling.CablingWatch), and a duplicate row only repeats the same latest event.
CABLING_SQL = """\
SELECT device, interface,
       argMax(kind, ts) AS last_kind, argMax(planned, ts) AS planned_end,
       argMax(seen, ts) AS seen_end, argMax(detail, ts) AS last_detail,
       toUnixTimestamp64Nano(max(ts)) AS ts_ns
FROM {cabling}
{where}
GROUP BY device, interface
HAVING last_kind != 'resolved'
ORDER BY device, interface
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

# One row per node: the state its newest event left, and the newest decision behind it.
NODES_SQL = """\
SELECT node,
       argMax(quarantined, ts) AS now_quarantined,
       argMaxIf(sdc, ts, action = 'quarantine') AS last_sdc,
       argMaxIf(reason, ts, action != '') AS last_reason,
       countIf(action != '') AS decisions,
       toUnixTimestamp64Nano(maxIf(ts, action != '')) AS decided_at_ns,
       countIf(kind = 'xid') AS xids,
       toUnixTimestamp64Nano(max(ts)) AS last_event_ns
FROM (SELECT * FROM {events} FINAL)
{where}
GROUP BY node
{having}
ORDER BY node
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

NODE_EVENTS_SQL = """\
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, node, kind, xid, pci, detail, quarantined, action,
       reason, sdc, line, source
FROM {events} FINAL
WHERE node = {{node:String}}
ORDER BY ts DESC, kind, pci
LIMIT {{limit:UInt32}} OFFSET {{offset:UInt32}}"""

JOB_FACTS_SQL = """\
SELECT kind, detail
FROM {facts} FINAL
WHERE job_id = {{job_id:String}} AND kind IN {{kinds:Array(String)}}
ORDER BY ts, origin_source, origin_line
LIMIT {{limit:UInt32}}"""

LINK_EVENTS_SQL = """\
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, device, interface, link_id, kind, value, detail,
       series, span_s
FROM {events} FINAL
WHERE link_id IN {{links:Array(String)}}
  AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
  AND ts <= fromUnixTimestamp64Nano({{until:Int64}})
ORDER BY ts, device, interface, kind, series
LIMIT {{limit:UInt32}}"""

# Bucketed by integer division of the nanosecond time, which runs the same on every
# ClickHouse version; (device, interface) lead the sort key, so only the ports' granules are
# read. `ends` pairs them, since the two IN lists alone would also admit cross pairs.
# One row per series with its buckets as arrays: handing thousands of bucket rows to Python
# one by one cost twice what the query did.
LINK_SERIES_SQL = """\
SELECT device, interface, metric, qualifier,
       arrayMap(p -> p.1, points) AS ts_ns, arrayMap(p -> p.2, points) AS mean,
       arrayMap(p -> p.3, points) AS peak
FROM (
    SELECT device, interface, metric, qualifier,
           arraySort(groupArray((bucket_ns, mean, peak))) AS points
    FROM (
        SELECT device, interface, metric, qualifier,
               intDiv(toUnixTimestamp64Nano(ts), {{step:Int64}}) * {{step:Int64}} AS bucket_ns,
               avg(rate) AS mean, max(rate) AS peak
        FROM {samples}
        WHERE device IN {{devices:Array(String)}} AND interface IN {{interfaces:Array(String)}}
          AND concat(device, ':', interface) IN {{ends:Array(String)}}
          AND ts >= fromUnixTimestamp64Nano({{since:Int64}})
          AND ts < fromUnixTimestamp64Nano({{until:Int64}})
          {metric_filter}
        GROUP BY device, interface, metric, qualifier, bucket_ns
        ORDER BY device, interface, metric, qualifier, bucket_ns
        LIMIT {{limit:UInt32}}
    )
    GROUP BY device, interface, metric, qualifier
)
ORDER BY device, interface, metric, qualifier"""

# From the sparse per-minute rollup, so whole minutes: those starting in [since rounded
# down to its minute, until).
WORST_LINKS_SQL = """\
SELECT link_id, sum(total) AS total, max(peak_rate) AS peak_rate,
       toUInt64(sum(samples)) AS samples
FROM {rollup}
WHERE metric = {{metric:String}}
  AND minute >= toStartOfMinute(toDateTime(fromUnixTimestamp64Nano({{since:Int64}})))
  AND minute < toDateTime(fromUnixTimestamp64Nano({{until:Int64}}))
GROUP BY link_id
HAVING total > 0
ORDER BY total DESC, link_id
LIMIT {{limit:UInt32}}"""

JOB_ACTIVITY_SQL = """\
SELECT job_id, toUnixTimestamp64Nano(min(ts)) AS first_ns,
       toUnixTimestamp64Nano(max(ts)) AS last_ns, toUInt64(count()) AS facts
FROM {facts}
GROUP BY job_id
ORDER BY last_ns DESC, job_id
LIMIT {{limit:UInt32}}"""

# Rows physically stored per table (before merges collapse repeats): cheap on any size, for
# monitoring; exact counts are `count()`.
PARTS_SQL = """\
SELECT table, toUInt64(sum(rows)) AS n
FROM system.parts
WHERE database = {database:String} AND active
GROUP BY table"""

# Seconds from a stall to its verdict, for the verdicts updated in the last day.
DELAYS_SQL = """\
SELECT quantilesExact(0.5, 0.95)(
         (toUnixTimestamp64Nano(decided_at) - toUnixTimestamp64Nano(stalled_at)) / 1e9
       ) AS q,
       count() AS n
FROM (SELECT stalled_at, decided_at, updated_at FROM {verdicts} FINAL)
WHERE stalled_at IS NOT NULL AND decided_at IS NOT NULL
  AND updated_at >= now64(9) - INTERVAL 1 DAY"""

PING_SQL = "SELECT name FROM system.tables WHERE database = {database:String}"
