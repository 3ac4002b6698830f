"""The Grafana dashboards on a store made by replaying simulated incidents, at every zoom.

The issue this pins down: zoomed in, the rate panels divided a 10 s sample's count by a 2 s
bucket and showed 5x the stored rate (10x at 1 s); zoomed out over a range only partly covered
by samples, they divided by the whole bucket and showed a fraction of it. Every panel and
annotation query is expanded as Grafana and the ClickHouse plugin expand it (see
grafana_support) at intervals of 1 s, 10 s, 1 min and 1 h, and run on one store holding four
replayed captures (a cable down, a GPU Xid, a miswired host, a dying optic); each rate is
checked against the rates the replay stored, and the GPU-hours panels against `incident_cost`.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import store_samples as s
from cli_support import invoke
from grafana_support import (
    ALL,
    BY_UID,
    Grafana,
    QueryContext,
    Run,
    Selection,
    load,
    panel_context,
    panels,
    run_dashboard,
)

from railtrace.store.chdb_store import ChdbStore
from railtrace.store.verdict_codec import decode_verdict
from railtrace.streams.attribution.cost import incident_cost
from railtrace.streams.records import CauseKind, JobState, Verdict

pytestmark = [pytest.mark.chdb, pytest.mark.e2e]  # simulates clusters and replays them

NS = 1_000_000_000
#: (fault, nodes, seed): small clusters, one incident each, replayed into one store; an optic
#: dying is what fills the optics panel, a miswire the cabling panels
CAPTURES = (("link-down", 4, 3), ("gpu-xid", 2, 5), ("miswire", 4, 3), ("optic", 4, 3))
ZOOMS = [timedelta(seconds=n) for n in (1, 10, 60, 3600)]


@dataclasses.dataclass(frozen=True)
class Replayed:
    data_dir: Path
    grafana: Grafana
    truth: dict[str, dict[str, Any]]  #: truth.json by fault
    time_from: datetime
    time_to: datetime

    def ctx(self, interval: timedelta) -> QueryContext:
        return QueryContext(self.time_from, self.time_to, interval)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replayed]:
    base = tmp_path_factory.mktemp("grafana-replay")
    data = base / "data"
    truth = {}
    for fault, nodes, seed in CAPTURES:
        capture = base / fault
        sim = invoke("simulate", capture, "--nodes", nodes, "--fault", fault, "--seed", seed)
        assert sim.exit_code == 0, sim.output
        result = invoke("replay", capture, "--data", data)
        assert result.exit_code == 0, result.output
        truth[fault] = json.loads((capture / "truth.json").read_text())
    store = ChdbStore(data)
    grafana = Grafana(store)
    try:
        span = grafana.select("SELECT min(ts) AS lo, max(ts) AS hi FROM link_samples").to_pylist()
        lo, hi = span[0]["lo"], span[0]["hi"]
        yield Replayed(data, grafana, truth, lo - timedelta(minutes=10), hi + timedelta(minutes=10))
    finally:
        grafana.close()
        store.close()


def _fault_link(r: Replayed, fault: str = "link-down") -> str:
    link: str = r.truth[fault]["fault_link"]["id"]
    return link


def _run(r: Replayed, uid: str, interval: timedelta, link: str | None = None) -> Run:
    selection: Selection = {
        "device": [ALL],
        "state": [ALL],
        "node": [ALL],
        "link_id": link or _fault_link(r),
    }
    return run_dashboard(r.grafana, load(BY_UID[uid]), selection, r.ctx(interval))


def _reads_node_events(panel: dict[str, Any]) -> bool:
    return any("node_events" in t["rawSql"] for t in panel["targets"])


@pytest.mark.parametrize("interval", ZOOMS, ids=lambda i: f"{int(i.total_seconds())}s")
@pytest.mark.parametrize("uid", sorted(BY_UID))
def test_every_panel_shows_the_replayed_incidents_at_every_zoom(
    replayed: Replayed, uid: str, interval: timedelta
) -> None:
    dashboard = load(BY_UID[uid])
    run = _run(replayed, uid, interval, _fault_link(replayed, "optic"))
    # the node events of a replay are pinned down by the test below
    empty = [
        p["title"]
        for p in panels(dashboard)
        if run.panels[p["title"]].num_rows == 0 and not _reads_node_events(p)
    ]
    assert not empty
    assert all(t.num_rows for t in run.annotations.values()), run.annotations


def test_the_nodes_dashboard_shows_the_replayed_xid(replayed: Replayed) -> None:
    node = replayed.truth["gpu-xid"]["fault_node"]
    run = _run(replayed, "railtrace-nodes", timedelta(seconds=60))
    for p in panels(load(BY_UID["railtrace-nodes"])):
        if _reads_node_events(p):
            assert run.panels[p["title"]].num_rows, p["title"]
    history = run.panels["Xid and quarantine history"].to_pylist()
    assert node in {h["node"] for h in history}


def test_the_nodes_dashboard_names_the_node_a_replayed_verdict_blamed(
    replayed: Replayed,
) -> None:
    truth = replayed.truth["gpu-xid"]
    run = _run(replayed, "railtrace-nodes", timedelta(seconds=60))
    named = run.panels["Jobs whose verdict named a node"].to_pylist()
    stalled = [j for j, t in truth["jobs"].items() if t["state"] == "stalled"]
    assert [(n["job_id"], n["node"]) for n in named] == [(stalled[0], truth["fault_node"])]


def test_the_cable_that_went_down_tops_the_worst_links(replayed: Replayed) -> None:
    run = _run(replayed, "railtrace-fabric", timedelta(seconds=60))
    worst = run.panels["Worst links over the range"].to_pylist()
    for fault in ("link-down", "optic"):
        row = next(w for w in worst if w["link_id"] == _fault_link(replayed, fault))
        assert row["downs"] >= 1 and row["last_down"] is not None, fault
    downs = [w["downs"] for w in worst]
    assert downs == sorted(downs, reverse=True), "links that went down rank first"


# ------------------------------------------------------------------------------------------
# Rates at every zoom
# ------------------------------------------------------------------------------------------


def _stored(r: Replayed, where: str) -> list[dict[str, Any]]:
    sql = (
        "SELECT ts, device, interface, metric, qualifier, rate, interval_s "
        f"FROM link_samples FINAL WHERE interval_s > 0 AND {where}"
    )
    stored: list[dict[str, Any]] = r.grafana.select(sql).to_pylist()
    assert stored, where
    return stored


def _bucket(ts: datetime, step: int) -> int:
    """toStartOfInterval(toDateTime(ts), INTERVAL step second), in epoch seconds."""
    seconds = int(ts.timestamp())
    return seconds - seconds % step


def _time_weighted(samples: list[dict[str, Any]]) -> float:
    """The rate over the time the samples cover: each stored rate weighted by its interval."""
    return sum(x["rate"] * x["interval_s"] for x in samples) / sum(x["interval_s"] for x in samples)


def _step(r: Replayed, uid: str, title: str, interval: timedelta) -> int:
    panel = next(p for p in panels(load(BY_UID[uid])) if p["title"] == title)
    return int(panel_context(r.ctx(interval), panel).interval.total_seconds())


def _epoch(t: datetime | int) -> int:
    """A DateTime column's value: chDB hands DateTime to arrow as epoch seconds."""
    return t if isinstance(t, int) else int(t.timestamp())


def _shown(table: pa.Table, key: str, value: str) -> dict[tuple[int, str], float]:
    return {(_epoch(row["time"]), row[key]): row[value] for row in table.to_pylist()}


# (panel, column of the rate, metrics and series label, scale to the panel's unit, unit)
LINK_RATE_PANELS = [
    ("Throughput (bit/s)", "bits_per_s", ("in_octets", "out_octets"), 8, "bps"),
    (
        "Errors, discards and FEC (per second)",
        "per_second",
        ("in_errors", "in_fcs_errors", "symbol_errors", "fec_uncorrectable", "in_discards"),
        1,
        "cps",
    ),
]


@pytest.mark.parametrize("interval", ZOOMS, ids=lambda i: f"{int(i.total_seconds())}s")
def test_a_link_rate_at_any_zoom_is_the_stored_rate(
    replayed: Replayed, interval: timedelta
) -> None:
    link = _fault_link(replayed)
    run = _run(replayed, "railtrace-link", interval)
    dashboard = load(BY_UID["railtrace-link"])
    for title, column, metrics, scale, unit in LINK_RATE_PANELS:
        panel = next(p for p in panels(dashboard) if p["title"] == title)
        assert panel["fieldConfig"]["defaults"]["unit"] == unit, title
        step = _step(replayed, "railtrace-link", title, interval)
        assert step >= 10, "no bucket smaller than the 10 s the replay samples at"
        listed = ", ".join(f"'{m}'" for m in metrics)
        stored = _stored(replayed, f"link_id = '{link}' AND metric IN ({listed})")
        by_bucket: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
        for x in stored:
            by_bucket[
                (_bucket(x["ts"], step), f"{x['device']}:{x['interface']} {x['metric']}")
            ].append(x)
        shown = _shown(run.panels[title], "series", column)
        expected = {k: _time_weighted(v) * scale for k, v in by_bucket.items()}
        assert set(shown) >= set(expected), title
        for k, rate in expected.items():
            assert shown[k] == pytest.approx(rate, rel=1e-9, abs=1e-9), (title, k)


@pytest.mark.parametrize("interval", ZOOMS, ids=lambda i: f"{int(i.total_seconds())}s")
def test_a_switch_throughput_at_any_zoom_is_the_sum_of_its_ports_stored_rates(
    replayed: Replayed, interval: timedelta
) -> None:
    title = "Throughput per switch (bit/s)"
    run = _run(replayed, "railtrace-fabric", interval)
    step = _step(replayed, "railtrace-fabric", title, interval)
    stored = _stored(replayed, "metric = 'in_octets'")
    ports: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for x in stored:
        ports[(_bucket(x["ts"], step), x["device"], x["interface"])].append(x)
    expected: dict[tuple[int, str], float] = defaultdict(float)
    for (bucket, device, _), samples in ports.items():
        expected[(bucket, device)] += _time_weighted(samples) * 8
    shown = _shown(run.panels[title], "device", "rx_bps")
    assert set(shown) == set(expected)
    for k, bps in expected.items():
        assert shown[k] == pytest.approx(bps, rel=1e-9), k


# ------------------------------------------------------------------------------------------
# Annotations, GPU-hours
# ------------------------------------------------------------------------------------------


def _stalled(r: Replayed) -> list[Verdict]:
    rows = r.grafana.select("SELECT payload FROM verdicts FINAL").to_pylist()
    return [
        v for v in (decode_verdict(row["payload"]) for row in rows) if v.state is JobState.STALLED
    ]


@pytest.mark.parametrize("uid", sorted(BY_UID))
def test_stalls_and_verdicts_are_annotated_at_their_times(replayed: Replayed, uid: str) -> None:
    run = _run(replayed, uid, timedelta(seconds=60))
    stalls = run.annotations["Stalls"].to_pylist()
    verdicts = run.annotations["Verdicts"].to_pylist()
    stalled = _stalled(replayed)
    assert len(stalled) == len(CAPTURES)
    ms = {v.job_id: v for v in stalled}

    def at_ms(t: datetime) -> int:
        return int(t.timestamp() * 1000)

    assert {a["text"]: at_ms(a["time"]) for a in stalls} == {
        f"job {j} stalled": (v.stalled_at_ns or 0) // 1_000_000 for j, v in ms.items()
    }
    assert sorted(at_ms(a["time"]) for a in verdicts) == sorted(
        (v.decided_at_ns or 0) // 1_000_000 for v in stalled
    )
    link = _fault_link(replayed)
    assert any(link in a["text"] and "verdict" in a["tags"] for a in verdicts)


def _week(ns: int) -> int:
    day = datetime.fromtimestamp(ns / NS, UTC).date()
    monday = day - timedelta(days=day.weekday())
    return int(datetime(monday.year, monday.month, monday.day, tzinfo=UTC).timestamp())


def _check_gpu_hours(grafana: Grafana, verdicts: list[Verdict], ctx: QueryContext) -> None:
    dashboard = load(BY_UID["railtrace-verdicts"])
    selection: Selection = {"state": [ALL]}
    run = run_dashboard(grafana, dashboard, selection, ctx)
    costs = {v.job_id: (v, incident_cost(v)) for v in verdicts}
    per_stall = {r["job_id"]: r for r in run.panels["GPU-hours per stall"].to_pylist()}
    assert set(per_stall) == {j for j, (_, c) in costs.items() if c is not None}
    weeks: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for job, row in per_stall.items():
        v, cost = costs[job]
        assert cost is not None
        assert row["gpus"] == cost.gpus
        assert row["lost_gpu_hours"] == pytest.approx(cost.lost_gpu_hours, rel=1e-12)
        assert row["watchdog_gpu_hours"] == pytest.approx(cost.watchdog_gpu_hours, rel=1e-12)
        assert row["saved_gpu_hours"] == pytest.approx(cost.saved_gpu_hours, rel=1e-12, abs=0)
        week = weeks[_week(v.stalled_at_ns or 0)]
        week[0] += cost.lost_gpu_hours
        week[1] += cost.saved_gpu_hours
    shown = {
        _epoch(r["time"]): [r["lost_gpu_hours"], r["saved_gpu_hours"]]
        for r in run.panels["GPU-hours lost and saved per week"].to_pylist()
    }
    assert shown.keys() == weeks.keys()
    for week, (lost, saved) in weeks.items():
        assert shown[week] == [pytest.approx(lost), pytest.approx(saved)]


def test_gpu_hours_lost_and_saved_are_incident_cost_of_the_replayed_stalls(
    replayed: Replayed,
) -> None:
    stalled = _stalled(replayed)
    assert all(incident_cost(v) for v in stalled)
    _check_gpu_hours(replayed.grafana, stalled, replayed.ctx(timedelta(hours=1)))


def test_gpu_hours_follow_incident_cost_when_unanswered_late_or_uncounted(
    replayed: Replayed,
) -> None:
    """The rules of cost.py a replay does not reach: a verdict naming no cause lost the time
    to the watchdog, an answer after the watchdog saved nothing, no GPUs or no watchdog
    counts nothing, and stalls weeks apart land in their weeks."""
    base = s.verdict()
    assert base.stalled_at_ns is not None
    week = 7 * 86400 * NS
    verdicts = [
        dataclasses.replace(base, job_id="answered"),
        dataclasses.replace(
            base, job_id="unknown", cause_kind=CauseKind.UNKNOWN, cause_link=None, gpus=8
        ),
        dataclasses.replace(
            base,
            job_id="late",
            stalled_at_ns=base.stalled_at_ns + week,
            decided_at_ns=base.stalled_at_ns + week + 900 * NS,
            watchdog_at_ns=base.stalled_at_ns + week + 600 * NS,
        ),
        dataclasses.replace(base, job_id="no-gpus", gpus=0),
        dataclasses.replace(base, job_id="no-watchdog", watchdog_at_ns=None),
        s.verdict("healthy", JobState.HEALTHY),
    ]
    assert [incident_cost(v) is None for v in verdicts] == [False] * 3 + [True] * 3
    # a database of its own beside the replay's: chDB opens one data directory a process
    store = ChdbStore(replayed.data_dir, database="grafana_cost_rules")
    try:
        store.migrate()
        store.write_verdicts(verdicts, versions=[1] * len(verdicts))
        grafana = Grafana(store)
        try:
            t0 = datetime.fromtimestamp(base.stalled_at_ns / NS, UTC)
            ctx = QueryContext(t0 - timedelta(days=1), t0 + timedelta(days=30), timedelta(hours=1))
            _check_gpu_hours(grafana, verdicts, ctx)
        finally:
            grafana.close()
    finally:
        store.close()
