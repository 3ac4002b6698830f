"""Every store backend behaves the same: the same tests run on chDB and on a ClickHouse server.

The server runs only when RAILTRACE_TEST_CLICKHOUSE_URL is set (user and password from
RAILTRACE_TEST_CLICKHOUSE_USER / _PASSWORD); each test then gets a database of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gates
import pytest
import store_samples as s

from railtrace.store import NodeSummary, StoreError, migrations
from railtrace.store.chdb_store import ChdbStore
from railtrace.store.schema import TABLES, statements
from railtrace.store.sql_store import Store
from railtrace.streams.records import CablingEvent, JobState, LinkEventKind, NodeEvent
from railtrace.topology.ends import CablingKind, Endpoint

SERVER_URL = os.environ.get("RAILTRACE_TEST_CLICKHOUSE_URL")


def _server_store(batch_rows: int) -> Store:
    from railtrace.store.server_store import ClickHouseServerStore

    url = gates.configured("clickhouse_server", SERVER_URL, "RAILTRACE_TEST_CLICKHOUSE_URL")
    return ClickHouseServerStore(
        url,
        user=os.environ.get("RAILTRACE_TEST_CLICKHOUSE_USER", "default"),
        password=os.environ.get("RAILTRACE_TEST_CLICKHOUSE_PASSWORD", ""),
        database=f"railtrace_test_{uuid.uuid4().hex[:12]}",
        batch_rows=batch_rows,
    )


@pytest.fixture(
    params=[
        "chdb",
        pytest.param("clickhouse-server", marks=pytest.mark.clickhouse_server),
    ]
)
def open_raw(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Store]]:
    """Opens an unmigrated store of the backend under test; closes (and on a server drops)
    it after the test."""
    with contextlib.ExitStack() as cleanup:

        def open_(batch_rows: int = 50_000) -> Store:
            if request.param == "chdb":
                store: Store = ChdbStore(tmp_path / "data", batch_rows=batch_rows)
                cleanup.callback(store.close)
            else:
                store = _server_store(batch_rows)
                cleanup.callback(store.close)
                cleanup.callback(store._execute, f"DROP DATABASE IF EXISTS {store.database}")
            return store

        yield open_


@pytest.fixture
def store(open_raw: Callable[..., Store]) -> Store:
    store = open_raw()
    store.migrate()
    return store


def raw_count(store: Store, table: str) -> int:
    """Rows physically present, without FINAL: what block deduplication alone left."""
    result = store.select(f"SELECT count() AS n FROM {store.database}.{table}")
    return int(result["n"][0].as_py())


def test_migrate_is_idempotent_and_creates_every_table(store: Store) -> None:
    store.migrate()
    store.ping()
    tables = ("link_samples", "link_events", "cabling_events", "node_events", "job_facts")
    for table in (*tables, "verdicts", "dead_letters"):
        assert store.count(table) == 0


def test_ping_says_to_migrate_when_tables_are_missing(open_raw: Callable[..., Store]) -> None:
    with pytest.raises(StoreError, match="run migrate"):
        open_raw().ping()


def _select(store: Store, sql: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = store.select(sql.format(db=store.database)).to_pylist()
    return rows


def test_link_samples_round_trip(store: Store) -> None:
    sample, link_id = s.link_sample()
    store.write_link_samples([(sample, link_id), s.link_sample(1, link_id="")])
    got = _select(
        store,
        "SELECT toUnixTimestamp64Nano(ts) AS ts_ns, device, interface, link_id, metric, "
        "qualifier, rate, interval_s FROM {db}.link_samples ORDER BY ts",
    )
    assert got[0] == {
        "ts_ns": sample.ts_ns,
        "device": sample.device,
        "interface": sample.interface,
        "link_id": link_id,
        "metric": sample.metric.value,
        "qualifier": sample.qualifier,
        "rate": sample.rate,
        "interval_s": sample.interval_s,
    }
    assert got[1]["link_id"] == ""


def test_link_events_round_trip(store: Store) -> None:
    event, link_id = s.link_event()
    store.write_link_events([(event, link_id)])
    got = _select(
        store,
        "SELECT toUnixTimestamp64Nano(ts) AS ts_ns, device, interface, link_id, kind, value, "
        "detail FROM {db}.link_events FINAL",
    )
    assert got == [
        {
            "ts_ns": event.ts_ns,
            "device": event.device,
            "interface": event.interface,
            "link_id": link_id,
            "kind": event.kind.value,
            "value": event.value,
            "detail": event.detail,
        }
    ]


def test_a_rate_events_sampling_span_is_stored_and_read_back(store: Store) -> None:
    # Attribution measures a rate's anomaly from the start of its sampling interval: an
    # event read back from the store must score as it did when it was detected.
    event, link_id = s.link_event()
    burst = dataclasses.replace(event, kind=LinkEventKind.ERROR_BURST, span_s=60.0)
    store.write_link_events([(burst, link_id)])
    assert store.link_events_between([link_id], burst.ts_ns, burst.ts_ns) == [(burst, link_id)]


def test_job_facts_round_trip_with_their_origin(store: Store) -> None:
    facts = s.job_facts()
    store.write_job_facts(facts)
    got = _select(
        store,
        "SELECT kind, host, rank, comm_id, JSONExtractString(detail, 'job_id') AS job, "
        "origin_source, origin_line FROM {db}.job_facts ORDER BY origin_line",
    )
    assert [(r["kind"], r["host"], r["rank"], r["comm_id"]) for r in got] == [
        ("net-devices", "gpu-node-12", None, ""),
        ("rank-info", "gpu-node-12", 3, "0x7f3a"),
        ("channel-edge", "gpu-node-12", 3, "0x7f3a"),
        ("init-complete", "gpu-node-12", 3, "0x7f3a"),
        ("net-error", "gpu-node-12", None, ""),
        ("collective-timeout", "", 3, ""),
        ("xid", "gpu-node-12", None, ""),
        ("ras-report", "", None, ""),
        ("torch-watchdog", "", 3, ""),
    ]
    assert {r["job"] for r in got} == {"slurm-4242"}
    assert [(r["origin_source"], r["origin_line"]) for r in got] == [
        (f.origin.source, f.origin.line_no) for f in facts
    ]


def test_dead_letters_round_trip_with_raw_bytes(store: Store) -> None:
    letter = s.dead_letter()
    store.write_dead_letters([letter])
    got = _select(
        store, "SELECT source, reason, line_no, hex(raw) AS raw, extra FROM {db}.dead_letters"
    )
    assert got == [
        {
            "source": letter.source,
            "reason": letter.reason,
            "line_no": letter.line_no,
            "raw": letter.raw.hex().upper(),
            "extra": list(letter.extra.items()),
        }
    ]


RETRIES: dict[str, Callable[[Store], None]] = {
    "link_samples": lambda st: st.write_link_samples([s.link_sample(i) for i in range(5)]),
    "link_events": lambda st: st.write_link_events([s.link_event(i) for i in range(5)]),
    "job_facts": lambda st: st.write_job_facts(s.job_facts()),
    "dead_letters": lambda st: st.write_dead_letters([s.dead_letter(i) for i in range(5)]),
}


@pytest.mark.parametrize("batch_rows", [50_000, 2], ids=["one block", "blocks of 2"])
@pytest.mark.parametrize("table", RETRIES)
def test_a_retried_identical_batch_is_dropped(
    open_raw: Callable[..., Store], table: str, batch_rows: int
) -> None:
    store = open_raw(batch_rows=batch_rows)
    store.migrate()
    RETRIES[table](store)
    first = raw_count(store, table)
    RETRIES[table](store)
    assert raw_count(store, table) == first > 0


@pytest.mark.parametrize("years_ago", [1, 3])
def test_a_replayed_old_capture_survives_retention(store: Store, years_ago: int) -> None:
    sample, link_id = s.link_sample()
    old = dataclasses.replace(sample, ts_ns=sample.ts_ns - years_ago * 366 * 86_400 * s.SECOND)
    event, _ = s.link_event()
    store.write_link_samples([(old, link_id)])
    store.write_link_events([(dataclasses.replace(event, ts_ns=old.ts_ns), link_id)])
    for table in ("link_samples", "link_events"):
        store._execute(f"OPTIMIZE TABLE {store.database}.{table} FINAL")  # applies the TTL now
        assert store.count(table) == 1, f"{table} lost a row whose event time is old"


def test_a_sample_redelivered_in_a_different_batch_is_one_row(store: Store) -> None:
    store.write_link_samples([s.link_sample(0), s.link_sample(1)])
    store.write_link_samples([s.link_sample(0), s.link_sample(2)])
    assert store.count("link_samples") == 3


def test_a_link_event_seen_again_is_one_row_with_the_latest_detail(store: Store) -> None:
    store.write_link_events([s.link_event(0, detail="first look")])
    store.write_link_events([s.link_event(0, detail="second look")])
    assert store.count("link_events") == 1
    got = _select(store, "SELECT detail FROM {db}.link_events FINAL")
    assert got == [{"detail": "second look"}]


def test_two_detectors_on_one_port_at_one_instant_are_two_rows(store: Store) -> None:
    """in-errors and in-fcs-errors bursting together, or both directions' traffic dropping:
    one row per (device, interface, kind, ts) kept only one of them."""
    errors, link_id = s.link_event(0)
    errors = dataclasses.replace(
        errors, kind=LinkEventKind.ERROR_BURST, detail="in-errors at 50/s", series="in-errors"
    )
    fcs = dataclasses.replace(errors, detail="in-fcs-errors at 50/s", series="in-fcs-errors")
    store.write_link_events([(errors, link_id), (fcs, link_id)])
    assert store.count("link_events") == 2
    got = store.link_events_between([link_id], errors.ts_ns, errors.ts_ns)
    assert sorted(e.series for e, _ in got) == ["in-errors", "in-fcs-errors"]
    assert {e for e, _ in got} == {errors, fcs}


def test_verdict_round_trip_is_lossless(store: Store) -> None:
    verdict = s.verdict()
    store.write_verdicts([verdict])
    assert store.get_verdict(verdict.job_id) == verdict


def test_unknown_job_has_no_verdict(store: Store) -> None:
    store.write_verdicts([s.verdict("slurm-1")])
    assert store.get_verdict("slurm-2") is None


def test_the_latest_verdict_wins_before_any_merge(store: Store) -> None:
    stalled = s.verdict("j", JobState.STALLED)
    slow = s.verdict("j", JobState.SLOW, confidence=0.5)
    healthy = s.verdict("j", JobState.HEALTHY, confidence=0.99)
    store.write_verdicts([stalled])
    store.write_verdicts([slow, healthy])  # within one batch, the later one wins too
    # One row per insert is still there (an insert collapses its own block, merges the rest).
    assert raw_count(store, "verdicts") == 2
    assert store.get_verdict("j") == healthy
    assert [j.state for j in store.list_jobs()] == [JobState.HEALTHY]
    assert store.list_jobs(state=JobState.STALLED) == []
    assert store.count("verdicts") == 1


def _five_jobs(store: Store) -> None:
    states = [JobState.STALLED, JobState.SLOW, JobState.HEALTHY, JobState.STALLED, JobState.UNKNOWN]
    for i, state in enumerate(states):
        store.write_verdicts([s.verdict(f"job-{i}", state)])


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (None, ["job-4", "job-3", "job-2", "job-1", "job-0"]),
        (JobState.STALLED, ["job-3", "job-0"]),
        (JobState.SLOW, ["job-1"]),
        (JobState.HEALTHY, ["job-2"]),
        (JobState.UNKNOWN, ["job-4"]),
    ],
)
def test_list_jobs_filters_by_state_newest_first(
    store: Store, state: JobState | None, expected: list[str]
) -> None:
    _five_jobs(store)
    assert [j.job_id for j in store.list_jobs(state=state)] == expected


def test_list_jobs_paginates_without_gaps_or_repeats(store: Store) -> None:
    _five_jobs(store)
    pages = [store.list_jobs(limit=2, offset=o) for o in (0, 2, 4, 6)]
    assert [len(p) for p in pages] == [2, 2, 1, 0]
    assert [j.job_id for p in pages for j in p] == [j.job_id for j in store.list_jobs()]


def test_job_summary_carries_the_verdict_headline(store: Store) -> None:
    verdict = dataclasses.replace(s.verdict(), decided_at_ns=None)
    store.write_verdicts([verdict])
    (job,) = store.list_jobs()
    assert (job.job_id, job.state, job.cause_kind, job.confidence) == (
        verdict.job_id,
        verdict.state,
        verdict.cause_kind,
        verdict.confidence,
    )
    assert (job.stalled_at_ns, job.decided_at_ns) == (verdict.stalled_at_ns, None)
    assert (job.link_id, job.node) == (s.LINK.link_id, None)
    assert job.tied == ()


def test_job_summary_of_a_tie_names_every_tied_candidate(store: Store) -> None:
    tie = dataclasses.replace(s.verdict("tied"), tied=(s.LINK.link_id, "leaf04:swp9--hgx-7:mlx5_1"))
    store.write_verdicts([tie, s.verdict("sure")])
    listed = {j.job_id: j.tied for j in store.list_jobs()}
    assert listed == {"tied": tie.tied, "sure": ()}


def test_count_rejects_an_unknown_table(store: Store) -> None:
    with pytest.raises(ValueError, match="no table 'nope'"):
        store.count("nope")


def test_a_job_fact_redelivered_is_one_row(store: Store) -> None:
    facts = s.job_facts()
    store.write_job_facts(facts)
    store.write_job_facts(facts[:1])  # a different block: not dropped by its token, merged by key
    assert store.count("job_facts") == len(facts)


def _cabling(ts: int, device: str, interface: str, kind: CablingKind) -> CablingEvent:
    planned = Endpoint("hgx-01", "mlx5_0")
    seen = (
        None
        if kind in (CablingKind.MISSING, CablingKind.RESOLVED)
        else Endpoint("hgx-02", "mlx5_0")
    )
    return CablingEvent(ts, device, interface, kind, planned, seen, f"{interface} {kind}")


def test_cabling_differences_are_each_ports_latest_event_unless_resolved(store: Store) -> None:
    t = 1_780_000_000 * 10**9
    events = [
        _cabling(t, "leaf1", "swp1", CablingKind.MISWIRED),
        _cabling(t, "leaf1", "swp2", CablingKind.MISSING),
        _cabling(t + 5, "leaf1", "swp2", CablingKind.RESOLVED),
        _cabling(t + 1, "leaf2", "swp7", CablingKind.MISSING),
        _cabling(t + 9, "leaf2", "swp7", CablingKind.MISWIRED),
    ]
    store.write_cabling_events(events)
    store.write_cabling_events(events[:1])  # redelivered
    assert store.cabling_differences() == [events[0], events[4]]
    assert store.cabling_differences(device="leaf2") == [events[4]]
    assert store.cabling_differences(limit=1, offset=1) == [events[4]]
    assert store.cabling_differences(device="leaf9") == []


def _node_event(
    ts: int, node: str, xid: int | None, quarantined: bool, action: str = "", sdc: bool = False
) -> NodeEvent:
    return NodeEvent(
        ts_ns=ts,
        node=node,
        kind="xid" if xid is not None else "release",
        xid=xid,
        pci="0000:3b:00" if xid is not None else "",
        detail=f"Xid {xid}" if xid is not None else "",
        quarantined=quarantined,
        action=action,
        reason=f"{action} at {ts}" if action else "",
        sdc=sdc,
        line=f"NVRM: Xid (PCI:0000:3b:00): {xid}" if xid is not None else "",
        source="journalctl -k",
    )


def test_node_state_is_what_its_newest_event_left_with_the_last_decision(store: Store) -> None:
    t = 1_780_000_000 * 10**9
    gpu1 = [
        _node_event(t, "gpu1", 13, False),
        _node_event(t + 1, "gpu1", 79, True, "quarantine", sdc=True),
        _node_event(t + 2, "gpu1", 13, True),
    ]
    gpu2 = [
        _node_event(t, "gpu2", 48, True, "quarantine"),
        _node_event(t + 5, "gpu2", None, False, "release"),
    ]
    gpu3 = [_node_event(t + 3, "gpu3", 31, False)]
    store.write_node_events([*gpu1, *gpu2, *gpu3])
    store.write_node_events(gpu1)  # redelivered
    assert store.list_nodes() == [
        NodeSummary("gpu1", True, True, f"quarantine at {t + 1}", t + 1, 3, t + 2),
        NodeSummary("gpu2", False, False, f"release at {t + 5}", t + 5, 1, t + 5),
        NodeSummary("gpu3", False, False, None, None, 1, t + 3),
    ]
    assert [n.node for n in store.list_nodes(quarantined=True)] == ["gpu1"]
    assert [n.node for n in store.list_nodes(quarantined=False, limit=1, offset=1)] == ["gpu3"]
    assert store.node_summary("gpu2") == store.list_nodes()[1]
    assert store.node_summary("gpu9") is None
    assert store.node_events("gpu1") == gpu1[::-1]
    assert store.node_events("gpu1", limit=1, offset=1) == [gpu1[1]]


def test_migrate_records_every_version_once_and_a_second_run_applies_nothing(
    open_raw: Callable[..., Store],
) -> None:
    store = open_raw()
    assert [m.version for m in store.migrate()] == [m.version for m in migrations.MIGRATIONS]
    assert store.migrate() == []
    assert all(s.applied_at is not None for s in store.migration_status())
    store.ping()


def test_a_database_from_before_the_ledger_is_adopted_without_losing_rows(
    open_raw: Callable[..., Store],
) -> None:
    store = open_raw()
    for sql in statements(store.database):  # how railtrace made its schema before migrations
        store._execute(sql)
    store.write_verdicts([s.verdict("slurm-1", JobState.STALLED)])
    assert len(store.migrate()) == len(migrations.MIGRATIONS)
    assert store.get_verdict("slurm-1") is not None


def test_a_database_at_version_1_gets_the_later_tables(open_raw: Callable[..., Store]) -> None:
    store = open_raw()
    first = migrations.MIGRATIONS[0]
    store._execute(f"CREATE DATABASE IF NOT EXISTS {store.database}")
    store._execute(migrations.ledger_sql(store.database))
    for sql in first.statements(store.database):
        store._execute(sql)
    store._execute(
        f"INSERT INTO {store.database}.{migrations.LEDGER} (version, name) VALUES (1, 'v1')"
    )
    with pytest.raises(StoreError, match="run migrate"):
        store.ping()
    assert [s.applied_at is not None for s in store.migration_status()] == [
        True,
        *[False] * (len(migrations.MIGRATIONS) - 1),
    ]
    assert [m.version for m in store.migrate()] == [m.version for m in migrations.MIGRATIONS[1:]]
    store.ping()
    assert store.count("node_events") == 0


def test_queries_from_many_threads_at_once_each_get_their_own_answer(store: Store) -> None:
    """The API serves from a thread pool; chDB mixed up concurrent statements' parameters."""
    store.write_verdicts([s.verdict(f"job-{i}", JobState.STALLED) for i in range(8)])

    def ask(i: int) -> list[str]:
        return [
            store.select("SELECT {job:String} AS j", {"job": f"job-{i}-{n}"}).column(0)[0].as_py()
            for n in range(25)
        ] + [v.job_id for v in [store.get_verdict(f"job-{i}")] if v is not None]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, range(8)))
    for i, got in enumerate(answers):
        assert got == [f"job-{i}-{n}" for n in range(25)] + [f"job-{i}"]


@pytest.mark.clickhouse_server
def test_the_api_will_not_start_on_a_server_database_that_lacks_migrations() -> None:
    """A server's schema changes only through `railtrace db migrate`, so the API and sink can
    run as users without CREATE."""
    from cli_support import invoke

    url = gates.configured("clickhouse_server", SERVER_URL, "RAILTRACE_TEST_CLICKHOUSE_URL")
    env = {
        "RAILTRACE_STORE__CLICKHOUSE_URL": url,
        "RAILTRACE_STORE__CLICKHOUSE_USER": os.environ.get(
            "RAILTRACE_TEST_CLICKHOUSE_USER", "default"
        ),
        "RAILTRACE_STORE__CLICKHOUSE_PASSWORD": os.environ.get(
            "RAILTRACE_TEST_CLICKHOUSE_PASSWORD", ""
        ),
        "RAILTRACE_STORE__DATABASE": f"railtrace_test_{uuid.uuid4().hex[:12]}",
    }
    done = invoke("serve", env=env)
    assert done.exit_code == 1
    assert "railtrace db migrate" in done.output


def _fault_samples(errors: list[float], link_id: str = s.LINK.link_id) -> list[Any]:
    """One in_errors sample a second (rate, 1 s interval) and one zero-rate octet sample."""
    from railtrace.streams.records import LinkSample, Metric

    rows = []
    for i, rate in enumerate(errors):
        for metric, value in ((Metric.IN_ERRORS, rate), (Metric.IN_OCTETS, 0.0)):
            sample = LinkSample(
                s.T0 + i * s.SECOND, "leaf03", "Ethernet1/7", metric, "", value, 1.0
            )
            rows.append((sample, link_id))
    return rows


def test_the_worst_links_come_from_a_rollup_that_a_retried_batch_does_not_double(
    store: Store,
) -> None:
    batch = _fault_samples([0.0, 5.0, 7.0])
    store.write_link_samples(batch)
    store.write_link_samples(batch)  # the sink retried an identical batch
    store.write_link_samples(_fault_samples([1.0], "other--link"))
    until = s.T0 + 3600 * s.SECOND
    worst = store.worst_links("in_errors", s.T0, until, limit=5)
    assert [(w.link_id, w.total, w.peak_rate, w.samples) for w in worst] == [
        (s.LINK.link_id, 12.0, 7.0, 2),
        ("other--link", 1.0, 1.0, 1),
    ]
    assert store.worst_links("in_octets", s.T0, until) == [], "not a fault counter"
    assert store.worst_links("in_errors", until, until + 60 * s.SECOND) == []


def test_migrating_to_the_rollup_counts_the_samples_already_stored_once(
    open_raw: Callable[..., Store],
) -> None:
    store = open_raw()
    store._execute(f"CREATE DATABASE IF NOT EXISTS {store.database}")
    store._execute(migrations.ledger_sql(store.database))
    for m in migrations.MIGRATIONS[:2]:
        for sql in m.statements(store.database):
            store._execute(sql)
        store._execute(
            f"INSERT INTO {store.database}.{migrations.LEDGER} (version, name) "
            f"VALUES ({m.version}, 'v{m.version}')"
        )
    store.write_link_samples(_fault_samples([2.0, 3.0]))
    assert [m.version for m in store.migrate()] == [m.version for m in migrations.MIGRATIONS[2:]]
    for sql in migrations.MIGRATIONS[2].statements(store.database):  # applied again
        store._execute(sql)
    (worst,) = store.worst_links("in_errors", s.T0, s.T0 + 3600 * s.SECOND)
    assert (worst.total, worst.samples) == (5.0, 2)


def test_reads_from_many_threads_see_what_another_thread_writes_meanwhile(
    store: Store,
) -> None:
    written = threading.Event()

    def write() -> None:
        for i in range(20):
            store.write_verdicts([s.verdict(f"w-{i}", JobState.STALLED)])
        written.set()

    def read(_: int) -> int:
        seen = 0
        while not written.is_set():
            seen = max(seen, len(store.list_jobs(limit=100)))
        return max(seen, len(store.list_jobs(limit=100)))

    with ThreadPoolExecutor(max_workers=5) as pool:
        readers = [pool.submit(read, i) for i in range(4)]
        pool.submit(write).result()
        assert [r.result() for r in readers] == [20] * 4


PAST_SCHEMAS = Path(__file__).parent / "fixtures" / "store"


def _past_store(open_raw: Callable[..., Store], version: int, ledger: bool = True) -> Store:
    """A store exactly as the release whose newest migration was `version` made it: that
    release's rendered DDL, and its ledger (without: a release before the ledger)."""
    store = open_raw()
    text = (PAST_SCHEMAS / f"schema-v{version}.sql").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    body = re.sub(r"\brailtrace\.", f"{store.database}.", body)
    body = body.replace(
        "DATABASE IF NOT EXISTS railtrace;", f"DATABASE IF NOT EXISTS {store.database};"
    )
    for sql in (part.strip() for part in body.split(";\n")):
        if sql:
            store._execute(sql)
    if not ledger:
        return store
    store._execute(migrations.ledger_sql(store.database))
    for m in migrations.MIGRATIONS[:version]:
        store._execute(
            f"INSERT INTO {store.database}.{migrations.LEDGER} (version, name) "
            f"VALUES ({m.version}, 'v{m.version}')"
        )
    return store


def _live_shape(store: Store, table: str) -> tuple[list[tuple[str, str]], str]:
    """A table's (column, type) list in order and its sorting key, as the database has them."""
    cols = store.select(
        "SELECT name, type FROM system.columns WHERE database = {db:String} "
        "AND table = {t:String} ORDER BY position",
        {"db": store.database, "t": table},
    ).to_pylist()
    (key,) = store.select(
        "SELECT sorting_key FROM system.tables WHERE database = {db:String} AND name = {t:String}",
        {"db": store.database, "t": table},
    ).to_pylist()
    # A one-column key reads back in parentheses: `(job_id)`.
    return [(c["name"], c["type"]) for c in cols], key["sorting_key"].strip("()")


def _engine(store: Store, table: str) -> str:
    (row,) = store.select(
        "SELECT engine FROM system.tables WHERE database = {db:String} AND name = {t:String}",
        {"db": store.database, "t": table},
    ).to_pylist()
    return str(row["engine"])


@pytest.mark.parametrize(
    ("version", "ledger"),
    [(2, False), (2, True), (3, True), (4, True)],
    ids=["v2-before-the-ledger", "v2", "v3", "v4"],
)
def test_a_store_made_by_an_older_release_migrates_to_the_declared_schema_with_its_rows(
    open_raw: Callable[..., Store], version: int, ledger: bool
) -> None:
    store = _past_store(open_raw, version, ledger)
    event, link_id = s.link_event(0)
    store._execute(  # a row as that release wrote it: no series column
        f"INSERT INTO {store.database}.link_events "
        "(ts, device, interface, link_id, kind, value, detail) VALUES "
        f"(fromUnixTimestamp64Nano(toInt64({event.ts_ns})), '{event.device}', "
        f"'{event.interface}', '{link_id}', '{event.kind.value}', 0, '{event.detail}')"
    )
    store.write_verdicts([s.verdict("slurm-1", JobState.STALLED)])
    applied = [m.version for m in store.migrate()]
    assert applied == [m.version for m in migrations.MIGRATIONS[version if ledger else 0 :]]
    assert store.migrate() == []
    store.ping()
    for table in TABLES:
        declared = [(c.name, c.ch_type) for c in table.columns]
        assert _live_shape(store, table.name) == (declared, ", ".join(table.order_by)), table.name
        assert _engine(store, table.name) == table.engine.split("(")[0], table.name
    assert store.link_events_between([link_id], event.ts_ns, event.ts_ns) == [(event, link_id)]
    assert store.get_verdict("slurm-1") is not None
