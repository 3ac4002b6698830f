"""The data behind benchmarks/query_latency.py: the reference fabric's telemetry series, the
server-side loader of link samples, and the verdicts and link events written beside them.

Why the samples are made inside ClickHouse (`INSERT ... SELECT ... FROM numbers()`) and not in
Python: a hundred million rows through Python objects would take the better part of an hour on
this machine and measure the batched writer, which is timed on its own (`writer_rows`). What
the latency figures depend on is the shape of the stored data, so that is copied from what
railtrace itself stores for the 64-node reference fabric (`railtrace simulate` + `replay`):
one row per (switch port, metric, qualifier, sampling time), every cabled switch port, the
metrics each platform's paths carry, 10 s apart, with per-switch clock offsets, and the link id
resolved from cables.csv. Values are deterministic functions of (series, step), so a rerun
with the same arguments stores the same rows.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from railtrace.store.columns import qualified
from railtrace.store.sql_store import Store
from railtrace.streams.records import (
    Candidate,
    CauseKind,
    CollectiveTimeout,
    Evidence,
    JobFact,
    JobState,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    Metric,
    Verdict,
)
from railtrace.topology import Fabric, build_fabric, rail_optimized
from railtrace.topology.attrs import Role
from railtrace.topology.cabling import format_cables_csv
from railtrace.topology.ends import Endpoint, LinkRef

NS = 1_000_000_000
#: The loaded span ends here (UTC midnight), so reruns and --skip-load agree on the windows.
END = datetime(2026, 11, 29, tzinfo=UTC)
#: 800G ports: 1e11 bytes/s at line rate.
LINE_RATE_BYTES = 800e9 / 8

#: Helper objects of the load live in their own database, never among railtrace's tables.
BENCH_DATABASE = "railtrace_bench"
SERIES_TABLE = "series"

#: What one switch port reports, as the simulator's platforms do (its replayed capture of the
#: 64-node design stores exactly these per port): Cumulus leaves send the OpenConfig counters
#: (discards included), FCS, FEC and PFC priority 3; SONiC spines the SAI counters (no FCS,
#: no discards). 9 series per leaf port, 6 per spine port: 12,288 for the 64-node design.
LEAF_METRICS: tuple[tuple[Metric, str], ...] = (
    (Metric.FEC_UNCORRECTABLE, ""),
    (Metric.IN_DISCARDS, ""),
    (Metric.IN_ERRORS, ""),
    (Metric.IN_FCS_ERRORS, ""),
    (Metric.IN_OCTETS, ""),
    (Metric.OUT_DISCARDS, ""),
    (Metric.OUT_OCTETS, ""),
    (Metric.PFC_RX_PAUSE, "3"),
    (Metric.PFC_TX_PAUSE, "3"),
)
SPINE_METRICS: tuple[tuple[Metric, str], ...] = (
    (Metric.FEC_UNCORRECTABLE, ""),
    (Metric.IN_ERRORS, ""),
    (Metric.IN_OCTETS, ""),
    (Metric.OUT_OCTETS, ""),
    (Metric.PFC_RX_PAUSE, "3"),
    (Metric.PFC_TX_PAUSE, "3"),
)

# How a series' value is made (the `kind` column of the series table).
OCTETS, ERRORS, FEC, DISCARDS, PAUSE = range(5)
_KIND = {
    Metric.IN_OCTETS: OCTETS,
    Metric.OUT_OCTETS: OCTETS,
    Metric.IN_ERRORS: ERRORS,
    Metric.IN_FCS_ERRORS: ERRORS,
    Metric.FEC_UNCORRECTABLE: FEC,
    Metric.IN_DISCARDS: DISCARDS,
    Metric.OUT_DISCARDS: DISCARDS,
    Metric.PFC_RX_PAUSE: PAUSE,
    Metric.PFC_TX_PAUSE: PAUSE,
}


@dataclass(frozen=True, slots=True)
class Series:
    """One stored time series: a switch port's metric, and how its values are drawn."""

    device: str
    interface: str
    link_id: str
    metric: Metric
    qualifier: str
    util: float  # share of line rate the port carries; 0 for a port no job uses
    bad: bool  # a link with a bad optic: error and FEC bursts all along
    offset_ns: int  # the switch's sampling phase (switches do not sample in step)


@dataclass(frozen=True, slots=True)
class Span:
    """The loaded time range: `steps` sampling times `step_s` apart, ending at `end_ns`."""

    steps: int
    step_s: int
    end_ns: int

    @property
    def start_ns(self) -> int:
        return self.end_ns - self.steps * self.step_s * NS

    @property
    def hours(self) -> float:
        return self.steps * self.step_s / 3600


def reference(nodes: int) -> tuple[Fabric, str]:
    """The reference rail fabric and its cables.csv text (what the API is given)."""
    design = rail_optimized(nodes)
    return build_fabric(design.plan), format_cables_csv(design.plan)


def switch_ports(fabric: Fabric) -> list[tuple[Endpoint, str, Role]]:
    """Every cabled switch port with its link id and its switch's role, by (device, interface).

    Host NIC ends are left out: switches report telemetry, hosts' NICs do not (as in the
    simulator), so a host link has samples from its leaf end only."""
    out = []
    for ref in fabric.links.values():
        for end in (ref.a, ref.b):
            role = fabric.role(end.device)
            if role is not None and role != Role.HOST:
                out.append((end, ref.link_id, role))
    return sorted(out, key=lambda p: (p[0].device, p[0].interface))


def bad_links(fabric: Fabric, count: int, seed: int) -> list[str]:
    """The links with a bad optic: `count` of them, drawn by `seed`."""
    return sorted(random.Random(seed).sample(sorted(fabric.links), count))


def build_series(fabric: Fabric, bad: list[str], seed: int) -> list[Series]:
    """Every series of the fabric, sorted as the table's ORDER BY sorts them, so the loader
    hands ClickHouse each block already in key order."""
    rng = random.Random(seed)
    offsets: dict[str, int] = {}
    bad_set = set(bad)
    out = []
    for end, link_id, role in switch_ports(fabric):
        if end.device not in offsets:
            offsets[end.device] = rng.randrange(1000) * 1_000_000
        # One port in ten carries no job (LLDP and routing only); the rest run near line rate.
        util = 0.0 if rng.random() < 0.1 else rng.uniform(0.55, 0.95)
        metrics = LEAF_METRICS if role == Role.LEAF else SPINE_METRICS
        for metric, qualifier in metrics:
            out.append(
                Series(
                    end.device,
                    end.interface,
                    link_id,
                    metric,
                    qualifier,
                    util,
                    link_id in bad_set,
                    offsets[end.device],
                )
            )
    out.sort(key=lambda s: (s.device, s.interface, s.metric.value, s.qualifier))
    return out


def span_for(rows: int | None, days: float | None, series: int, step_s: int) -> Span:
    """The time range that holds `rows` samples of every series (whole sampling steps), or
    `days` of them."""
    if days is not None:
        steps = round(days * 86400 / step_s)
    else:
        assert rows is not None
        steps = max(1, rows // series)
    return Span(steps, step_s, int(END.timestamp()) * NS)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_series_table(store: Store, series: list[Series]) -> None:
    """The series as a Join-engine table keyed by index, read with joinGet by the loader:
    a hash lookup per row, about 10 ns, and no 12,000-element literal in every statement."""
    table = qualified(BENCH_DATABASE, SERIES_TABLE)
    store._execute(f"CREATE DATABASE IF NOT EXISTS {BENCH_DATABASE}")
    store._execute(f"DROP TABLE IF EXISTS {table}")
    store._execute(
        f"CREATE TABLE {table} (idx UInt32, device String, interface String, link_id String, "
        "metric String, qualifier String, kind UInt8, util Float64, bad UInt8, offset_ns Int64) "
        "ENGINE = Join(ANY, LEFT, idx)"
    )
    for start in range(0, len(series), 2000):
        values = ",".join(
            f"({i},{_quote(s.device)},{_quote(s.interface)},{_quote(s.link_id)},"
            f"{_quote(s.metric.value)},{_quote(s.qualifier)},{_KIND[s.metric]},{s.util!r},"
            f"{int(s.bad)},{s.offset_ns})"
            for i, s in enumerate(series[start : start + 2000], start)
        )
        store._execute(f"INSERT INTO {table} VALUES {values}")


def chunks(span: Span, series: int, chunk_rows: int) -> Iterator[tuple[int, int]]:
    """(first step, steps) of each insert: about `chunk_rows` rows, never across a UTC day, so
    that each insert makes one part of one daily partition."""
    per_chunk = max(1, chunk_rows // series)
    per_day = 86400 // span.step_s
    first_step_of_day = (span.start_ns // NS) % 86400 // span.step_s  # steps since midnight
    step = 0
    while step < span.steps:
        to_midnight = per_day - (first_step_of_day + step) % per_day
        n = min(per_chunk, span.steps - step, to_midnight)
        yield step, n
        step += n


def insert_sql(database: str, span: Span, series: int, first: int, steps: int) -> str:
    """One chunk: every series over steps [first, first + steps), generated series by series
    (the table's key order) from `numbers()`.

    Values, from a hash of (series, step): octet rates at 85-100% of the port's share of line
    rate (ports no job uses: LLDP-level 100-300 kB/s); error and FCS counters zero but for one
    sample in 5,000 (0.1/s, one error in 10 s), except on bad links, where 30% of samples carry
    a burst of 1-3,000 errors/s and uncorrectable FEC up to 400/s; discards almost always zero;
    PFC pause frames in half the samples, 0.1-0.5/s."""
    j = qualified(BENCH_DATABASE, SERIES_TABLE)

    def get(col: str) -> str:
        return f"joinGet('{j}', '{col}', idx)"

    step_ns = span.step_s * NS
    return f"""\
INSERT INTO {qualified(database, "link_samples")}
    (ts, device, interface, link_id, metric, qualifier, rate, interval_s)
SETTINGS min_insert_block_size_rows = {series * steps}, min_insert_block_size_bytes = 0
SELECT
    fromUnixTimestamp64Nano(toInt64({span.start_ns} + step * {step_ns} + {get("offset_ns")}),
                            'UTC') AS ts,
    {get("device")}, {get("interface")}, {get("link_id")}, {get("metric")}, {get("qualifier")},
    multiIf(
        kind = {OCTETS},
            if(util = 0, 1e5 + 2e5 * u1, {LINE_RATE_BYTES} * util * (0.85 + 0.15 * u1)),
        kind = {ERRORS}, if(bad, if(u1 < 0.3, floor(1 + 3000 * u2), 0), if(u1 < 0.0002, 0.1, 0)),
        kind = {FEC}, if(bad AND u1 < 0.3, floor(400 * u2), 0),
        kind = {DISCARDS}, if(u1 < 0.001, floor(50 * u2) / 10, 0),
        if(u1 < 0.5, 0, ceil(5 * u2) / 10)
    ) AS rate,
    {float(span.step_s)} AS interval_s
FROM (
    SELECT idx, step, kind, util, bad,
           (h % 1000003) / 1000003 AS u1, (intDiv(h, 1000003) % 1000003) / 1000003 AS u2
    FROM (
        SELECT toUInt32(intDiv(number, {steps})) AS idx,
               {first} + number % {steps} AS step,
               cityHash64(idx, step) AS h,
               {get("kind")} AS kind, {get("util")} AS util, {get("bad")} AS bad
        FROM numbers({series * steps})
    )
)"""


# -- verdicts and link events, through the store's own write path -----------------------------


def _evidence(rng: random.Random, ts: int, ref: LinkRef, n: int) -> tuple[Evidence, ...]:
    """Evidence lines shaped like the attribution's: link telemetry, then NCCL and PyTorch."""
    lines = []
    for i in range(n):
        t = ts + i * 3 * NS
        match i % 3:
            case 0:
                lines.append(
                    Evidence(
                        t,
                        "gnmi",
                        "error-burst",
                        ref.link_id,
                        f"{ref.a.device} {ref.a.interface} in_errors {rng.randrange(100, 3000)}/s",
                    )
                )
            case 1:
                lines.append(
                    Evidence(
                        t,
                        "nccl",
                        "net-error",
                        ref.b.device,
                        "NET/IB : Got completion from peer with error 12, opcode 0, "
                        f"len 0, vendor err 129 (Send) localGid ::ffff:10.{i}.0.1",
                    )
                )
            case _:
                lines.append(
                    Evidence(
                        t,
                        "pytorch",
                        "timeout",
                        f"rank {rng.randrange(512)}",
                        f"Watchdog caught collective operation timeout: "
                        f"WorkNCCL(SeqNum={rng.randrange(10**5)}, OpType=ALLREDUCE) ran for "
                        f"600{rng.randrange(100):03d} milliseconds before timing out.",
                    )
                )
    return tuple(lines)


def verdicts(fabric: Fabric, bad: list[str], count: int, span: Span, seed: int) -> list[Verdict]:
    """`count` job verdicts over the span: a fifth stalled on a link (mostly a bad one) with
    five link candidates, a node candidate and a dozen evidence lines (about the 8 kB payload
    of a real link-down verdict), the rest healthy, slow or unknown without evidence (the
    200 B payload of a healthy job)."""
    rng = random.Random(seed)
    links = sorted(fabric.links)
    hosts = fabric.hosts()
    out = []
    for i in range(count):
        job = str(5_000_000 + i)
        stalled_at = span.start_ns + rng.randrange(span.steps * span.step_s) * NS
        roll = rng.random()
        if roll < 0.2:
            lid = rng.choice(bad) if rng.random() < 0.7 else rng.choice(links)
            ref = fabric.links[lid]
            others = [fabric.links[x] for x in rng.sample(links, 4)]
            evidence = _evidence(rng, stalled_at, ref, 12)
            confidence = round(rng.uniform(0.45, 0.95), 3)
            candidates = [Candidate(CauseKind.LINK, confidence, link=ref, evidence=evidence)]
            candidates += [
                Candidate(
                    CauseKind.LINK,
                    round(rng.uniform(0.05, 0.3), 3),
                    link=o,
                    evidence=_evidence(rng, stalled_at, o, 2),
                )
                for o in others
            ]
            candidates.append(
                Candidate(
                    CauseKind.NODE,
                    0.05,
                    node=rng.choice(hosts),
                    evidence=_evidence(rng, stalled_at, ref, 1),
                )
            )
            out.append(
                Verdict(
                    job_id=job,
                    state=JobState.STALLED,
                    stalled_at_ns=stalled_at,
                    decided_at_ns=stalled_at + rng.randrange(15, 40) * NS,
                    cause_kind=CauseKind.LINK,
                    cause_link=ref,
                    cause_node=None,
                    confidence=confidence,
                    candidates=tuple(candidates),
                    evidence=evidence,
                    ranks=rng.choice((64, 128, 256, 512)),
                    hosts=rng.choice((8, 16, 32, 64)),
                )
            )
            continue
        state = (
            JobState.HEALTHY if roll < 0.9 else JobState.SLOW if roll < 0.95 else JobState.UNKNOWN
        )
        out.append(
            Verdict(
                job_id=job,
                state=state,
                stalled_at_ns=None,
                decided_at_ns=None,
                cause_kind=CauseKind.UNKNOWN,
                cause_link=None,
                cause_node=None,
                confidence=0.0,
                ranks=rng.choice((8, 64, 128, 256)),
                hosts=rng.choice((1, 8, 16, 32)),
            )
        )
    return out


def link_events(
    fabric: Fabric, bad: list[str], span: Span, per_link_hour: float, seed: int
) -> list[tuple[LinkEvent, str]]:
    """Link events over the span: error bursts and uncorrectable FEC on the bad links every few
    minutes, and elsewhere traffic drops (most common in a real capture), PFC storms and
    down/up flaps, `per_link_hour` on average, at a switch end of the link."""
    rng = random.Random(seed)
    links = sorted(fabric.links)
    seconds = span.steps * span.step_s
    out: list[tuple[LinkEvent, str]] = []

    def end_of(lid: str) -> Endpoint:
        ref = fabric.links[lid]
        return ref.a if fabric.role(ref.a.device) != Role.HOST else ref.b

    for lid in bad:
        end = end_of(lid)
        for t in range(0, seconds, 300):
            ts = span.start_ns + (t + rng.randrange(300)) * NS
            kind = (
                LinkEventKind.ERROR_BURST if rng.random() < 0.7 else LinkEventKind.FEC_UNCORRECTABLE
            )
            value = float(rng.randrange(100, 3000))
            event = LinkEvent(ts, end.device, end.interface, kind, value, f"{kind} {value:.0f}/s")
            out.append((event, lid))
    total = round(len(links) * seconds / 3600 * per_link_hour)
    for _ in range(total):
        lid = rng.choice(links)
        end = end_of(lid)
        ts = span.start_ns + rng.randrange(seconds) * NS
        roll = rng.random()
        if roll < 0.8:
            kinds = [LinkEventKind.TRAFFIC_DROP]
        elif roll < 0.9:
            kinds = [LinkEventKind.PFC_STORM]
        else:
            kinds = [LinkEventKind.DOWN, LinkEventKind.UP]
        for k, kind in enumerate(kinds):
            event = LinkEvent(
                ts + k * 4 * NS, end.device, end.interface, kind, 0.0, f"{kind} on {end.interface}"
            )
            out.append((event, lid))
    out.sort(key=lambda r: r[0].ts_ns)
    return out


def writer_rows(
    series: list[Series], rows: int, start_ns: int, step_s: int
) -> list[tuple[LinkSample, str]]:
    """`rows` (sample, link id) pairs as the sink hands them to the store: every series at one
    sampling time, then the next, with plausible values (octets near line rate, zeros)."""
    rng = random.Random(1)
    out: list[tuple[LinkSample, str]] = []
    step = 0
    while len(out) < rows:
        ts = start_ns + step * step_s * NS
        for s in series:
            rate = (
                LINE_RATE_BYTES * s.util * rng.uniform(0.85, 1.0) if "octets" in s.metric else 0.0
            )
            out.append(
                (
                    LinkSample(
                        ts + s.offset_ns,
                        s.device,
                        s.interface,
                        s.metric,
                        s.qualifier,
                        rate,
                        float(step_s),
                    ),
                    s.link_id,
                )
            )
            if len(out) == rows:
                break
        step += 1
    return out


def job_facts(nodes: int, job_ids: list[str], span: Span, seed: int) -> list[JobFact]:
    """The facts railtrace parses from the logs of real-shaped jobs, stored under `job_ids`.

    The blast radius of a link (which jobs may cross it) is rebuilt from these facts (ranks,
    NICs, ring channels), so the link endpoint does its real work only if they are there. They
    come from the simulator's own NCCL/PyTorch logs of healthy incidents (three jobs of 8-16
    nodes each per seed) through the project's log parser, each job moved to a random start in
    the span and renamed to one of `job_ids` (jobs that also have a verdict)."""
    from railtrace.simulate.logs import job_logs
    from railtrace.simulate.scenario import Fault, plan_scenario
    from railtrace.streams.logs.parser import LogParser

    rng = random.Random(seed)
    out: list[JobFact] = []
    names = iter(job_ids)
    s = 0
    while True:
        sc = plan_scenario(nodes, Fault.NONE, seed * 100_000 + s)
        logs_rng = random.Random(f"logs-{seed}-{s}")
        s += 1
        for job in sc.jobs:
            name = next(names, None)
            if name is None:
                return out
            facts: list[JobFact] = []
            for log in job_logs(sc, job, logs_rng):
                parser = LogParser(job.job_id, f"logs/{name}/{log.name}")
                for line in log.text(not log.name.endswith(".dmesg")).splitlines():
                    facts.extend(parser.feed(line))
            if not facts:
                continue
            first = min(fact.ts_ns for fact in facts)
            shift = span.start_ns + rng.randrange(max(1, span.steps * span.step_s)) * NS - first
            for fact in facts:
                moved: dict[str, Any] = {"job_id": name, "ts_ns": fact.ts_ns + shift}
                if isinstance(fact, CollectiveTimeout):
                    moved["started_ns"] = fact.started_ns + shift
                out.append(dataclasses.replace(fact, **moved))
