"""The Grafana dashboards in deploy/grafana run against railtrace's schema: every panel and
variable query, expanded as Grafana and its ClickHouse plugin do (tests/grafana_support.py says
how, and from which documentation), runs in chDB on a store filled by railtrace's own writers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import store_samples as s
from grafana_support import (
    _VARIABLE,
    ALL,
    BY_UID,
    DASHBOARDS,
    DATASOURCE,
    GRAFANA,
    KNOWN_MACROS,
    Grafana,
    QueryContext,
    Selection,
    annotation_queries,
    apply_conditional_all,
    apply_macros,
    apply_variables,
    load,
    panels,
    queries,
    variables,
)
from grafana_support import run_dashboard as run

from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import (
    CablingEvent,
    Candidate,
    CauseKind,
    JobState,
    LinkEvent,
    LinkEventKind,
    LinkSample,
    Metric,
    NodeEvent,
)
from railtrace.topology.ends import CablingKind, Endpoint


def test_the_four_dashboards_are_there() -> None:
    assert set(BY_UID) == {
        "railtrace-fabric",
        "railtrace-verdicts",
        "railtrace-link",
        "railtrace-nodes",
    }


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_panels_use_the_provisioned_datasource_and_a_valid_query_model(path: Path) -> None:
    dashboard = load(path)
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    titles = [p["title"] for p in panels(dashboard)]
    assert len(titles) == len(set(titles)), "panel titles repeat"
    for panel in panels(dashboard):
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for t in panel["targets"]:
            assert t["datasource"] == DATASOURCE, panel["title"]
            assert t["editorType"] == "sql"
            # sqlds formats: 0 time series, 1 table (src/data/utils.ts in the plugin)
            assert (t["format"], t["queryType"]) in {(0, "timeseries"), (1, "table")}
            assert (t["format"] == 0) == (panel["type"] == "timeseries"), panel["title"]
    for var in variables(dashboard):
        if var["type"] == "query":
            assert var["datasource"] == DATASOURCE


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_every_variable_used_is_defined_and_every_macro_known(path: Path) -> None:
    dashboard = load(path)
    defined = {v["name"] for v in variables(dashboard)}
    for where, sql in queries(dashboard):
        for m in _VARIABLE.finditer(sql):
            name = m.group(1) or m.group(3) or m.group(4)
            if name.startswith("__"):
                assert name[2:] in KNOWN_MACROS, f"{where}: unknown macro ${name}"
            else:
                assert name in defined, f"{where}: ${name} is not a dashboard variable"
                assert m.group(2) in (None, "singlequote", "raw", "csv"), where


def test_expander_matches_the_documented_examples() -> None:
    """The output examples of the plugin's macro table (query-editor docs)."""
    ctx = QueryContext(
        datetime.fromtimestamp(1415792726.123, UTC),
        datetime.fromtimestamp(1447328726.456, UTC),
        timedelta(seconds=20),
    )
    assert apply_macros("$__timeFilter(time)", ctx) == (
        "time >= toDateTime(1415792726) AND time <= toDateTime(1447328726)"
    )
    assert apply_macros("$__timeFilter_ms(time)", ctx) == (
        "time >= fromUnixTimestamp64Milli(1415792726123) AND "
        "time <= fromUnixTimestamp64Milli(1447328726456)"
    )
    assert apply_macros("$__fromTime $__toTime $__interval_s", ctx) == (
        "toDateTime(1415792726) toDateTime(1447328726) 20"
    )
    assert apply_macros("$__timeInterval(column)", ctx) == (
        "toStartOfInterval(toDateTime(column), INTERVAL 20 second)"
    )
    assert apply_macros("$__timeInterval_ms(column)", ctx) == (
        "toStartOfInterval(toDateTime64(column, 3), INTERVAL 20000 millisecond)"
    )
    cond = "$__conditionalAll(x IN (${v:singlequote}), $v)"
    assert apply_conditional_all(cond, {"v": [ALL]}) == "1=1"
    assert apply_conditional_all(cond, {"v": ""}) == "1=1"
    assert apply_conditional_all(cond, {"v": ["a"]}) == "x IN (${v:singlequote})"
    assert apply_variables(
        "x IN ($v) AND y = ${w:singlequote}", {"v": ["a", "b"], "w": "it's"}, {}
    ) == ("x IN ('a','b') AND y = 'it\\'s'")
    with pytest.raises(ValueError, match="unknown macro"):
        apply_macros("$__timeFilterr(ts)", ctx)
    with pytest.raises(KeyError):
        apply_variables("$nope", {}, {})


PAGES = {"job_id": "incidents", "link_id": "links", "node": "nodes"}


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_jobs_links_and_nodes_link_back_to_railtrace_pages(path: Path) -> None:
    """Every table column holding a job, a link or a node opens railtrace's page for it, under
    the base URL the dashboard's `railtrace_url` variable holds."""
    dashboard = load(path)
    url_var = next(v for v in variables(dashboard) if v["name"] == "railtrace_url")
    assert url_var["type"] == "textbox" and url_var["query"].startswith("http")
    for panel in panels(dashboard):
        if panel["type"] != "table":
            continue
        sql = panel["targets"][0]["rawSql"]
        columns = set(re.findall(r"\b(job_id|link_id|node)\b", sql.split("\nFROM")[0]))
        linked = {
            o["matcher"]["options"]: [u["url"] for pr in o["properties"] for u in pr["value"]]
            for o in panel["fieldConfig"]["overrides"]
            if o["matcher"]["id"] == "byName"
        }
        for column in columns:
            page = f"${{railtrace_url:raw}}/{PAGES[column]}/${{__value.raw:percentencode}}"
            assert page in linked.get(column, []), (panel["title"], column)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_rates_are_averaged_over_the_samples_never_divided_by_the_bucket(path: Path) -> None:
    """A 10 s sample in a 2 s bucket divided by the bucket read 5x its rate: rate panels
    weight each stored rate by its own interval and have a min interval of a sample."""
    for panel in panels(load(path)):
        sql = " ".join(t["rawSql"] for t in panel["targets"])
        assert "/ $__interval_s" not in sql, panel["title"]
        if panel["type"] == "timeseries" and "link_samples" in sql:
            assert "sum(rate * interval_s) / sum(interval_s)" in sql or "avg(rate)" in sql
            assert panel.get("interval") == "10s", panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_stalls_and_verdicts_are_annotations_and_the_range_is_a_week(path: Path) -> None:
    dashboard = load(path)
    assert {a["name"] for a in annotation_queries(dashboard)} == {"Stalls", "Verdicts"}
    for a in annotation_queries(dashboard):
        assert a["datasource"] == a["target"]["datasource"] == DATASOURCE
        assert "verdicts FINAL" in a["target"]["rawSql"]
    assert dashboard["time"] == {"from": "now-7d", "to": "now"}


def test_provisioning_points_at_the_plugin_and_the_dashboards() -> None:
    ds = (GRAFANA / "provisioning" / "datasources" / "railtrace-clickhouse.yaml").read_text()
    assert "type: grafana-clickhouse-datasource" in ds
    assert "uid: railtrace-clickhouse" in ds
    assert re.search(r"secureJsonData:\n\s+password: \$CLICKHOUSE_PASSWORD", ds)
    env = set(re.findall(r"\$([A-Z_]+)", ds))
    readme = (GRAFANA / "README.md").read_text()
    assert env and all(name in readme for name in env), env
    boards = (GRAFANA / "provisioning" / "dashboards" / "railtrace.yaml").read_text()
    assert "type: file" in boards and "path: " in boards


# ------------------------------------------------------------------------------------------
# A store with samples
# ------------------------------------------------------------------------------------------

T0 = s.T0
SEC = s.SECOND
L1 = s.LINK.link_id  # leaf03:Ethernet1/7--gpu-node-12:mlx5_3
L2 = "leaf04:Ethernet1/1--gpu-node-13:mlx5_0"
L3 = "leaf03:swp41--spine-01:Ethernet104"
CTX = QueryContext(
    datetime.fromtimestamp(T0 / 1e9 - 1800, UTC),
    datetime.fromtimestamp(T0 / 1e9 + 1800, UTC),
    timedelta(seconds=20),
)


def _sample(
    i: int, device: str, interface: str, metric: Metric, rate: float, q: str = ""
) -> LinkSample:
    return LinkSample(T0 + i * SEC, device, interface, metric, q, rate, 1.0)


def _link_samples() -> list[tuple[LinkSample, str]]:
    rows: list[tuple[LinkSample, str]] = []
    for i in range(60):
        rows += [
            (_sample(i, "leaf03", "Ethernet1/7", Metric.IN_OCTETS, 1.25e9), L1),
            (_sample(i, "leaf03", "Ethernet1/7", Metric.OUT_OCTETS, 6.25e8), L1),
            (_sample(i, "leaf03", "Ethernet1/7", Metric.PFC_RX_PAUSE, 100.0, "3"), L1),
            (_sample(i, "leaf03", "Ethernet1/7", Metric.RX_POWER_DBM, -3.5, "1"), L1),
            (_sample(i, "leaf04", "Ethernet1/1", Metric.IN_OCTETS, 2.5e8), L2),
            (_sample(i, "leaf04", "Ethernet1/1", Metric.OUT_OCTETS, 2.5e8), L2),
            (_sample(i, "spine-01", "Ethernet104", Metric.IN_OCTETS, 1e8), L3),
        ]
    rows += [
        (_sample(i, "leaf03", "Ethernet1/7", Metric.IN_ERRORS, 2.0), L1) for i in range(10, 20)
    ]
    rows += [
        (_sample(i, "leaf03", "Ethernet1/7", Metric.FEC_UNCORRECTABLE, 1.0), L1)
        for i in range(10, 15)
    ]
    rows += [(_sample(i, "spine-01", "Ethernet104", Metric.IN_ERRORS, 1.0), L3) for i in range(5)]
    return rows


def _node_event(
    i: int, node: str, xid: int | None, q: bool, action: str, sdc: bool = False
) -> NodeEvent:
    kind = "xid" if xid is not None else "release"
    detail = f"Xid {xid}" if xid is not None else "released by operator"
    return NodeEvent(
        T0 + i * SEC,
        node,
        kind,
        xid,
        "0000:1a:00.0" if xid else "",
        detail,
        q,
        action,
        f"{kind} {xid}" if action else "",
        sdc,
        f"NVRM: Xid (PCI:0000:1a:00): {xid}",
        "kern.log",
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grafana]:
    store = ChdbStore(tmp_path_factory.mktemp("grafana") / "data")
    try:
        store.migrate()
        samples = _link_samples()
        store.write_link_samples(samples)
        # The at-least-once path delivering the error samples again in another block: only
        # FINAL keeps the counts right.
        store.write_link_samples([r for r in samples if r[0].metric is Metric.IN_ERRORS][:5])
        store.write_link_events(
            [
                s.link_event(0),
                (
                    LinkEvent(T0 + 30 * SEC, "leaf03", "Ethernet1/7", LinkEventKind.UP, 1.0, "up"),
                    L1,
                ),
                (
                    LinkEvent(
                        T0 + 5 * SEC, "leaf04", "Ethernet1/1", LinkEventKind.FLAP, 3.0, "3 flaps"
                    ),
                    L2,
                ),
            ]
        )
        store.write_cabling_events(
            [
                CablingEvent(
                    T0,
                    "leaf04",
                    "Ethernet1/2",
                    CablingKind.MISWIRED,
                    Endpoint("gpu-node-13", "mlx5_1"),
                    Endpoint("gpu-node-14", "mlx5_1"),
                ),
                CablingEvent(
                    T0,
                    "leaf03",
                    "Ethernet1/9",
                    CablingKind.MISSING,
                    Endpoint("gpu-node-12", "mlx5_5"),
                    None,
                ),
                CablingEvent(
                    T0 + 10 * SEC,
                    "leaf03",
                    "Ethernet1/9",
                    CablingKind.RESOLVED,
                    Endpoint("gpu-node-12", "mlx5_5"),
                    None,
                ),
            ]
        )
        link_stall = s.verdict()
        node_stall = dataclasses.replace(
            link_stall,
            job_id="slurm-6161",
            stalled_at_ns=T0 + 60 * SEC,
            decided_at_ns=T0 + 90 * SEC,
            cause_kind=CauseKind.NODE,
            cause_link=None,
            cause_node="gpu-node-12",
            confidence=0.7,
            candidates=(Candidate(CauseKind.NODE, 0.7, node="gpu-node-12"),),
        )
        healthy = dataclasses.replace(
            link_stall,
            job_id="slurm-5151",
            state=JobState.HEALTHY,
            stalled_at_ns=None,
            decided_at_ns=None,
            cause_kind=CauseKind.UNKNOWN,
            cause_link=None,
            confidence=0.0,
            candidates=(),
            evidence=(),
        )
        recovered = dataclasses.replace(healthy, job_id="slurm-7171")
        store.write_verdicts(
            [link_stall, dataclasses.replace(link_stall, job_id="slurm-7171"), node_stall, healthy],
            versions=[1, 1, 1, 1],
        )
        # newer versions: a higher confidence for slurm-4242, slurm-7171 healthy again
        store.write_verdicts(
            [
                dataclasses.replace(
                    link_stall,
                    confidence=0.91,
                    candidates=(Candidate(CauseKind.LINK, 0.91, link=s.LINK),),
                ),
                recovered,
            ],
            versions=[2, 2],
        )
        store.write_node_events(
            [
                _node_event(1, "gpu-node-12", 79, True, "quarantine"),
                _node_event(2, "gpu-node-13", 13, False, ""),
                _node_event(3, "gpu-node-14", 48, True, "quarantine", sdc=True),
                _node_event(20, "gpu-node-14", None, False, "release"),
                _node_event(4, "gpu-node-16", 95, True, "quarantine", sdc=True),
            ]
        )
        grafana = Grafana(store)
        try:
            yield grafana
        finally:
            grafana.close()
    finally:
        store.close()


SCENARIOS: dict[str, Selection] = {
    "all": {"device": [ALL], "state": [ALL], "node": [ALL], "link_id": L1},
    "one": {"device": ["leaf04"], "state": ["stalled"], "node": ["gpu-node-13"], "link_id": L2},
}


def run_dashboard(store: Grafana, uid: str, scenario: str) -> dict[str, pa.Table]:
    """Every variable, panel and annotation query of a dashboard; the panels' results by
    title."""
    return run(store, load(BY_UID[uid]), SCENARIOS[scenario], CTX).panels


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("uid", sorted(BY_UID))
def test_every_query_runs_against_the_schema(store: Grafana, uid: str, scenario: str) -> None:
    assert run_dashboard(store, uid, scenario)


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def scalar(table: pa.Table) -> Any:
    assert table.num_rows == 1
    return table.column(0)[0].as_py()


def test_fabric_health(store: Grafana) -> None:
    r = run_dashboard(store, "railtrace-fabric", "all")
    worst = rows(r["Worst links over the range"])
    # a link that went down or flapped ranks above one that only counted errors
    got = [
        (w["device"], w["link_id"], w["downs"], w["flaps"], w["errors"], w["fec_uncorrectable"])
        for w in worst
    ]
    assert got == [
        ("leaf03", L1, 1, 0, 20.0, 5.0),
        ("leaf04", L2, 0, 1, 0.0, 0.0),
        ("spine-01", L3, 0, 0, 5.0, 0.0),
    ]
    assert worst[0]["pfc_pause_frames"] == 6000.0
    assert scalar(r["Links with errors or FEC uncorrectable"]) == 2
    assert scalar(r["Link events"]) == 3
    assert scalar(r["Ports cabled differently now"]) == 1
    assert scalar(r["Switches reporting"]) == 3
    diffs = rows(r["Cabling differences now"])
    assert [(d["device"], d["interface"], d["kind"]) for d in diffs] == [
        ("leaf04", "Ethernet1/2", "miswired")
    ]
    assert diffs[0]["planned"] == "gpu-node-13:mlx5_1"
    throughput = rows(r["Throughput per switch (bit/s)"])
    assert {t["device"] for t in throughput} == {"leaf03", "leaf04", "spine-01"}
    assert max(t["rx_bps"] for t in throughput if t["device"] == "leaf03") == pytest.approx(1e10)
    assert {e["kind"] for e in rows(r["Link events by kind"])} == {"down", "up", "flap"}
    per_switch = {(e["device"], e["kind"]): e["events"] for e in rows(r["Link events per switch"])}
    assert per_switch == {("leaf03", "down"): 1, ("leaf03", "up"): 1, ("leaf04", "flap"): 1}
    assert rows(r["Errors per switch (per second)"])
    assert {p["device"] for p in rows(r["PFC pause frames per switch (per second)"])} == {"leaf03"}

    one = run_dashboard(store, "railtrace-fabric", "one")  # device = leaf04
    one_worst = rows(one["Worst links over the range"])
    assert [(w["link_id"], w["flaps"], w["last_down"]) for w in one_worst] == [(L2, 1, None)]
    assert scalar(one["Link events"]) == 1
    assert {t["device"] for t in rows(one["Throughput per switch (bit/s)"])} == {"leaf04"}


def test_verdicts(store: Grafana) -> None:
    r = run_dashboard(store, "railtrace-verdicts", "all")
    assert scalar(r["Stalled jobs now"]) == 2
    assert scalar(r["Stalls in range"]) == 2
    assert scalar(r["Worst time to verdict"]) == pytest.approx(600.0)
    assert 30.0 <= scalar(r["Median time to verdict"]) <= 600.0
    current = {v["job_id"]: v for v in rows(r["Current verdicts"])}
    assert set(current) == {"slurm-4242", "slurm-5151", "slurm-6161", "slurm-7171"}
    assert current["slurm-4242"]["confidence"] == pytest.approx(0.91)
    assert current["slurm-4242"]["link_id"] == L1
    assert current["slurm-4242"]["time_to_verdict_s"] == pytest.approx(600.0)
    assert current["slurm-7171"]["state"] == "healthy"
    assert current["slurm-6161"]["node"] == "gpu-node-12"
    assert rows(r["Time to verdict"])
    causes = {
        (c["cause_kind"], c["culprit"]): c["jobs"] for c in rows(r["Causes of stalls in range"])
    }
    assert causes == {("link", L1): 1, ("node", "gpu-node-12"): 1}

    one = run_dashboard(store, "railtrace-verdicts", "one")  # state = stalled
    assert {v["job_id"] for v in rows(one["Current verdicts"])} == {"slurm-4242", "slurm-6161"}


def test_link_drilldown(store: Grafana) -> None:
    r = run_dashboard(store, "railtrace-link", "all")  # link_id = L1
    series = {t["series"] for t in rows(r["Throughput (bit/s)"])}
    assert series == {"leaf03:Ethernet1/7 in_octets", "leaf03:Ethernet1/7 out_octets"}
    errors = {t["series"] for t in rows(r["Errors, discards and FEC (per second)"])}
    assert errors == {"leaf03:Ethernet1/7 in_errors", "leaf03:Ethernet1/7 fec_uncorrectable"}
    pfc = {t["series"] for t in rows(r["PFC pause frames (per second, by priority)"])}
    assert pfc == {"leaf03:Ethernet1/7 pfc_rx_pause prio 3"}
    optics = rows(r["Optics and temperature"])
    assert {o["series"] for o in optics} == {"leaf03:Ethernet1/7 rx_power_dbm lane 1"}
    assert all(o["reading"] == pytest.approx(-3.5) for o in optics)
    assert [e["kind"] for e in rows(r["Events on this link"])] == ["up", "down"]
    named = rows(r["Jobs whose verdict named this link"])
    assert [(j["job_id"], j["confidence"]) for j in named] == [("slurm-4242", pytest.approx(0.91))]
    candidates = rows(r["Jobs listing it as a candidate"])
    assert [(c["job_id"], c["score"]) for c in candidates] == [("slurm-4242", pytest.approx(0.91))]

    one = run_dashboard(store, "railtrace-link", "one")  # link_id = L2
    assert [e["kind"] for e in rows(one["Events on this link"])] == ["flap"]
    assert one["Jobs whose verdict named this link"].num_rows == 0


def test_nodes(store: Grafana) -> None:
    r = run_dashboard(store, "railtrace-nodes", "all")
    assert scalar(r["Nodes quarantined now"]) == 2
    assert scalar(r["Xids in range"]) == 4
    assert scalar(r["SDC suspects quarantined"]) == 1
    assert scalar(r["Nodes with Xids in range"]) == 4
    quarantined = {q["node"]: q for q in rows(r["Quarantined nodes now"])}
    assert set(quarantined) == {"gpu-node-12", "gpu-node-16"}
    assert quarantined["gpu-node-16"]["sdc_suspect"] is True
    assert quarantined["gpu-node-12"]["last_xid"] == 79
    codes = {x["code"] for x in rows(r["Xids over time by code"])}
    assert codes == {"Xid 79", "Xid 13", "Xid 48", "Xid 95"}
    assert len(rows(r["Xids per node and code"])) == 4
    history = rows(r["Xid and quarantine history"])
    assert len(history) == 5
    assert history[0]["action"] == "release" and history[0]["node"] == "gpu-node-14"

    one = run_dashboard(store, "railtrace-nodes", "one")  # node = gpu-node-13
    assert scalar(one["Xids in range"]) == 1
    assert [h["node"] for h in rows(one["Xid and quarantine history"])] == ["gpu-node-13"]
