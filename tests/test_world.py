"""The randomized world that grades railtrace: its fabrics, routing and counters behave as the
switches it models do, it is reproducible from a seed, it shares no code with what it grades,
and what it writes is read by railtrace as real captures are (nothing unknown or dead-lettered).
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.streams.logs.parser import parse_lines
from railtrace.streams.records import Progress
from railtrace.world.capture import hostlist, write_world
from railtrace.world.dimensions import DIMENSION_NAMES, draw
from railtrace.world.incident import NS, plan
from railtrace.world.routing import Router
from railtrace.world.shape import RAILS, build
from railtrace.world.traffic import JobClock, Telemetry

WORLD = Path(__file__).resolve().parents[1] / "railtrace" / "world"


def _cluster(seed: int = 1, **fixed):
    dims = draw(seed, 32, **fixed)
    return dims, build(dims, random.Random(seed))


def test_the_world_imports_nothing_of_what_it_grades():
    """Its paths, health rules and log formats must be its own, or it grades railtrace by
    railtrace's own assumptions."""
    for path in sorted(WORLD.glob("*.py")):
        tree = ast.parse(path.read_text())
        names = {
            n.module if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [n])
            if not isinstance(n, ast.ImportFrom) or n.module
        }
        ours = sorted(
            n
            for n in names
            if n and n.startswith("railtrace") and not n.startswith("railtrace.world")
        )
        assert not ours, f"{path.name} imports {ours}"


def test_a_seed_names_a_world_and_a_fixed_dimension_leaves_the_others_drawn_as_they_were():
    assert draw(7, 64) == draw(7, 64)
    spray = draw(7, 64, routing="spray")
    assert spray.routing == "spray"
    assert {k: v for k, v in spray.as_json().items() if k != "routing"} == {
        k: v for k, v in draw(7, 64).as_json().items() if k != "routing"
    }
    with pytest.raises(ValueError, match="no such dimension"):
        draw(7, 64, colour="blue")


def test_many_draws_cover_every_value_of_the_dimensions_the_tables_cut_by():
    seen: dict[str, set[str]] = {name: set() for name in DIMENSION_NAMES}
    for seed in range(400):
        for name, value in draw(seed).buckets().items():
            seen[name].add(value)
    assert seen["routing"] == {"ecmp", "ecmp-polarised", "spray", "ib"}
    assert seen["planes"] == {"1x800G", "2x400G"}
    assert seen["tiers"] == {"2-tier", "3-tier"}
    assert {"megatron", "torchtitan", "nemo", "deepspeed", "silent"} <= seen["trainer"]
    assert {"INFO", "WARN", "unset"} == seen["nccl_debug"]
    assert len(seen["sampling"]) >= 4 and len(seen["cadence"]) >= 4


def test_two_planes_put_each_nics_two_ports_on_leaves_of_different_planes():
    dims, cluster = _cluster(planes=2)
    host = cluster.hosts[0]
    for rail in range(RAILS):
        a, b = cluster.nic[(host, rail, 0)], cluster.nic[(host, rail, 1)]
        assert cluster.at[a].b.device != cluster.at[b].b.device
    assert len({p for (h, _, _), p in cluster.nic.items() if h == host}) == 2 * RAILS
    assert dims.planes == 2


def test_every_leaf_has_its_uplinks_spread_over_all_the_spines_of_its_plane():
    dims, cluster = _cluster(spines=4, oversubscription=1, su_nodes=16)
    for leaf in cluster.leaf.values():
        ups = Counter(c.b.device for c in cluster.up[leaf])
        assert len(ups) == 4 and set(ups.values()) == {16 // 4}
    assert dims.tiers == 2


def _cross_leaf_pair(cluster):
    """Two NICs of one rail on different leaves (different scalable units)."""
    a = cluster.nic[(cluster.hosts[0], 0, 0)]
    b = next(
        cluster.nic[(h, 0, 0)]
        for h in cluster.hosts
        if cluster.at[cluster.nic[(h, 0, 0)]].b.device != cluster.at[a].b.device
    )
    return a, b


def test_spraying_sends_every_flow_over_every_uplink_of_its_leaf_in_equal_shares():
    _, cluster = _cluster(routing="spray", su_nodes=8, spines=4)
    src, dst = _cross_leaf_pair(cluster)
    route = Router(cluster, "spray").route(src, dst, 50_000)
    leaf = cluster.at[src].b.device
    ups = {c: share for (c, up), share in route.items() if up and c.a.device == leaf}
    assert set(ups) == set(cluster.up[leaf])
    assert sum(ups.values()) == pytest.approx(1.0)
    assert len(set(round(v, 9) for v in ups.values())) == 1


def test_ecmp_hashes_each_flow_onto_one_uplink_and_different_flows_onto_several():
    _, cluster = _cluster(routing="ecmp", su_nodes=8, spines=4)
    src, dst = _cross_leaf_pair(cluster)
    router = Router(cluster, "ecmp")
    leaf = cluster.at[src].b.device
    chosen = set()
    for sport in range(49152, 49152 + 64):
        route = router.route(src, dst, sport)
        ups = [c for (c, up), _ in route.items() if up and c.a.device == leaf]
        assert len(ups) == 1
        assert sum(s for (c, up), s in route.items() if not up and c.a == dst) == 1.0
        chosen.add(ups[0])
    assert len(chosen) > 1


def test_infiniband_routes_depend_on_the_destination_only():
    _, cluster = _cluster(routing="ib", su_nodes=8, spines=4)
    src, dst = _cross_leaf_pair(cluster)
    router = Router(cluster, "ib")
    assert router.route(src, dst, 1) == router.route(src, dst, 60_000)


def test_a_route_avoids_a_dead_uplink_when_its_leaf_has_another():
    _, cluster = _cluster(routing="ecmp", su_nodes=8, spines=4)
    src, dst = _cross_leaf_pair(cluster)
    first = Router(cluster, "ecmp").route(src, dst, 50_001)
    dead = next(c for (c, up), _ in first.items() if up and c.tier == "uplink")
    again = Router(cluster, "ecmp", down={dead}).route(src, dst, 50_001)
    assert all(c != dead for c, _ in again)


def test_a_jobs_bytes_and_steps_never_run_backwards_and_stop_when_it_stalls():
    dims = draw(3, 32, fault="link-down", place="host")
    cluster = build(dims, random.Random(3))
    inc = plan(dims, cluster, 3)
    job = inc.jobs[0]
    assert job.stalled_ns is not None
    clock = JobClock.of(job, inc.end_ns)
    times = range(job.started_ns, inc.end_ns, NS // 3)
    moved = [clock.bytes(t) for t in times]
    steps = [clock.steps(t) for t in times]
    assert moved == sorted(moved) and steps == sorted(steps)
    assert clock.bytes(job.stalled_ns + NS) == clock.bytes(inc.end_ns)


def test_port_counters_only_grow_and_errors_appear_only_on_the_faulty_cable():
    dims = draw(5, 16, fault="errors", error_ratio=1e-5, place="host")
    cluster = build(dims, random.Random(5))
    inc = plan(dims, cluster, 5)
    tel = Telemetry(inc, random.Random(5))
    (fault,) = [
        f for f in inc.link_faults if f.kind == "errors" and f.cable == inc.strikes[0].cable
    ]
    switch_end = fault.cable.b
    times = range(inc.start_ns, inc.telemetry_end_ns, 10 * NS)
    for port in [switch_end, *(c.b for c in cluster.cables[:40])]:
        series = [tel.counters(port, t) for t in times]
        for name in series[0]:
            values = [s[name] for s in series]
            assert values == sorted(values), (port, name)
    assert tel.counters(switch_end, inc.telemetry_end_ns)["in_fcs_errors"] > 0
    quiet = next(c.b for c in cluster.cables if c not in {f.cable for f in inc.link_faults})
    assert tel.counters(quiet, inc.telemetry_end_ns)["in_fcs_errors"] == 0
    # Healthy PAM4 links still show pre-FEC symbol errors.
    assert tel.counters(quiet, inc.telemetry_end_ns)["symbol_errors"] > 0


@pytest.mark.parametrize(
    ("hosts", "want"),
    [
        (["gpu0001", "gpu0002", "gpu0003", "gpu0007"], "gpu[0001-0003,0007]"),
        (["r01-n01", "r01-n02", "r02-n01"], "r01-n[01-02],r02-n01"),
        (["b300n009", "b300n010"], "b300n[009-010]"),
    ],
)
def test_node_lists_are_folded_as_slurm_prints_them(hosts, want):
    assert hostlist(hosts) == want


def test_a_seed_writes_the_same_capture_twice(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    write_world(first, 11, 8)
    write_world(second, 11, 8)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


@pytest.mark.parametrize(
    "fixed",
    [
        {"vendor": "cumulus", "gnmic_format": "json", "stamp": "utc-shipper"},
        {"vendor": "cumulus", "gnmic_format": "event", "stamp": "journald", "planes": 2},
        {"vendor": "sonic", "stamp": "local-naive", "srun_label": True, "trainer": "nemo"},
        {"vendor": "eos", "gnmic_format": "event", "stamp": "local-offset", "trainer": "deepspeed"},
        {"vendor": "nxos", "gnmic_format": "json", "routing": "ib", "trainer": "torchtitan"},
        {"vendor": "cumulus", "gnmic_format": "json", "stamp": "local-offset", "trainer": "hf"},
    ],
    ids=lambda f: "-".join(str(v) for v in f.values()),
)
def test_railtrace_reads_everything_a_world_writes(tmp_path, fixed):
    """Every switch file, log line and scheduler record of a world is in a format railtrace
    reads: nothing unknown, nothing dead-lettered, every job placed and judged."""
    truth = write_world(tmp_path, 2, 16, sample_s=30, nccl_debug="INFO", fault="link-down", **fixed)
    report = replay(open_capture(tmp_path), DiscardSink(), local=ZoneInfo(truth["site_zone"]))
    assert report.telemetry_values > 0 and report.samples > 0
    assert report.unknown_paths == 0 and report.unknown_interfaces == 0
    assert not report.dead_letters, report.dead_letters
    assert not report.plan_errors and not report.skipped
    assert report.placements == len(truth["jobs"])
    assert {v.job_id for v in report.verdicts} == set(truth["jobs"])
    stored = orjson.loads((tmp_path / "truth.json").read_bytes())
    assert stored == truth


def test_the_hf_trainers_bar_is_read_as_one_report_per_log_dict_before_the_stall(tmp_path):
    """The HF Trainer's tqdm bar redraws after a carriage return every step and ends its line
    only with the log dict: each such line is one report, at the step that crossed the
    cadence, and a stalled job's last one comes before its stall."""
    truth = write_world(
        tmp_path,
        3,
        16,
        sample_s=30,
        trainer="hf",
        report_every=10,
        stamp="utc-shipper",
        fault="link-down",
    )
    stalled = 0
    for job_id, job in truth["jobs"].items():
        lines = [
            line
            for log in sorted((tmp_path / "logs" / job_id).iterdir())
            if log.suffix != ".dmesg"
            for line in log.read_bytes().decode().split("\n")
        ]
        facts, stats = parse_lines(lines, job_id=job_id, source=job_id)
        assert stats.malformed == 0
        reports = [f for f in facts if isinstance(f, Progress)]
        assert len(reports) == sum("'loss'" in line for line in lines) > 10, job_id
        assert all(r.step_ms and r.step_ms > 0 for r in reports)
        crossings = [r.step // 10 for r in reports]
        assert crossings == sorted(set(crossings)), job_id
        if job["stalled_at_ns"] is not None:
            stalled += 1
            assert reports[-1].ts_ns < job["stalled_at_ns"] + 10**9 * 10
    assert stalled
