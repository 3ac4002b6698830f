"""End to end on one machine: simulate an incident, replay it into a real chDB store, and check
every job's verdict against the simulator's ground truth."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest
import simulations

from railtrace.replay import CaptureError, DiscardSink, open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore
from railtrace.streams.records import CauseKind, JobState, Verdict

#: A shorter watchdog than PyTorch's 10-minute default keeps captures small; attribution does
#: not depend on it (the watchdog only dates the stall).
WATCHDOG_S = 120


def _check_against_truth(verdicts: list[Verdict], truth: dict) -> None:
    assert {v.job_id for v in verdicts} == set(truth["jobs"])
    for v in verdicts:
        want = truth["jobs"][v.job_id]
        assert v.state == want["state"], (v.job_id, v, want)
        if want["state"] == "healthy":
            assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None
            continue
        if want["cause"] == "unknown":
            # A hang from outside the fabric: seen, dated, and blamed on nothing, however
            # close in time the link that went down elsewhere.
            assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None, v
            assert v.cause_node is None, v
            assert v.stalled_at_ns is not None
            assert abs(v.stalled_at_ns - want["stalled_at_ns"]) < 60 * 10**9
            continue
        if want["cause"] == "link":
            assert v.cause_kind == CauseKind.LINK, v
            assert v.cause_link is not None and v.cause_link.link_id == want["link"]["id"], v
        else:
            assert v.cause_kind == CauseKind.NODE and v.cause_node == want["node"], v
        # A gray link on a spine competes with the job's other possible spine links when one of
        # those shows errors too: nothing tells which carried the job, so confidence is lower.
        assert (0.2 if want["state"] == "slow" else 0.3) < v.confidence <= 1.0
        assert v.stalled_at_ns is not None and v.decided_at_ns is not None
        # Never decided before the fault (within the one-second resolution of syslog stamps),
        # and never after the watchdog fired (a slowed job has none: within five minutes).
        fault_at = want["fault_at_ns"]
        latest = want["watchdog_at_ns"] or fault_at + 300 * 10**9
        assert fault_at - 10**9 <= v.decided_at_ns <= latest + 10**10
        began = want["stalled_at_ns"] or want["slow_at_ns"]
        assert abs(v.stalled_at_ns - began) < 60 * 10**9


@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("fault", list(Fault), ids=str)
def test_replay_names_the_simulated_culprit(tmp_path: Path, fault: Fault, seed: int) -> None:
    """The session's one replay of each incident into a store (tests.simulations; the API,
    incident page and streaming tests read the same): its report and what it stored."""
    truth = simulations.truth(64, fault, seed)
    store = ChdbStore(simulations.stored(tmp_path / "data", 64, fault, seed))
    try:
        report = simulations.report(64, fault, seed)
        _check_against_truth(report.verdicts, truth)
        for v in report.verdicts:
            assert store.get_verdict(v.job_id) == v
        assert store.count("link_samples") == report.samples > 100_000
        # Detectors that fire on one port at one instant are each kept: what the replay says
        # it stored is what the store holds.
        assert store.count("link_events") == report.link_events > 0
        assert sum(report.dead_letters.values()) == 0
        stalled = store.list_jobs(JobState.STALLED, limit=10, offset=0)
        assert len(stalled) == sum(j["state"] == "stalled" for j in truth["jobs"].values())
    finally:
        store.close()


def test_replaying_the_same_capture_twice_gives_identical_verdicts(tmp_path: Path) -> None:
    write_capture(tmp_path / "cap", 64, Fault.FLAP, 5, watchdog_s=WATCHDOG_S)
    first = replay(open_capture(tmp_path / "cap"), DiscardSink())
    second = replay(open_capture(tmp_path / "cap"), DiscardSink())
    assert first.verdicts == second.verdicts
    assert first.updates == second.updates


def test_damaged_inputs_are_dead_lettered_and_the_verdict_survives(tmp_path: Path) -> None:
    cap = shutil.copytree(simulations.capture(64, Fault.LINK_DOWN, 21), tmp_path / "cap")
    truth = simulations.truth(64, Fault.LINK_DOWN, 21)
    with (cap / "cables.csv").open("a") as fh:
        fh.write('garbled,"row\nnode-x,dcim.interface,mlx5_0\n')
    gnmi = sorted((cap / "gnmi").glob("*.json"))[0]
    text = gnmi.read_text()
    cut = len(text) // 2
    gnmi.write_text(text[:cut] + "\n" + text[cut + 40 :])  # a message torn in the middle
    (cap / "gnmi" / "junk.json").write_bytes(b"\x00\xff{not json at all\n[1,2\n")
    job = next(iter(truth["jobs"]))
    log = sorted((cap / "logs" / job).iterdir())[0]
    with log.open("ab") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n\x00\x00\xde\xad\xbe\xef" * 50 + b"\n")
        fh.write(b"host:1:2 [0] NCCL INFO Channel xx/0 : garbage -> [send] via NET/IB/x\n")
    report = replay(open_capture(cap), DiscardSink())
    _check_against_truth(report.verdicts, truth)
    assert report.dead_letters["gnmi"] >= 2
    assert report.plan_errors


def test_log_files_of_one_name_in_nested_host_folders_are_each_read(tmp_path: Path) -> None:
    """`logs/<job>/host-a/rank.log` and `host-b/rank.log` are two files, not one source: the
    parser keeps one position per source and drops what it has seen."""
    nested = shutil.copytree(simulations.capture(64, Fault.LINK_DOWN, 21), tmp_path / "nested")
    moved = 0
    for log in sorted((nested / "logs").glob("*/*.log")):
        (log.parent / log.stem).mkdir()
        log.rename(log.parent / log.stem / "rank.log")
        moved += 1
    want = simulations.report(64, Fault.LINK_DOWN, 21)  # the same files, unmoved
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        got = replay(open_capture(nested), store)
        assert store.count("job_facts") == got.facts
    finally:
        store.close()
    assert (got.log_lines, got.facts) == (want.log_lines, want.facts)
    assert [(v.job_id, v.state, v.ranks, v.hosts, v.cause_link) for v in got.verdicts] == [
        (v.job_id, v.state, v.ranks, v.hosts, v.cause_link) for v in want.verdicts
    ]
    capture = open_capture(nested)
    sources = [capture.log_source(p) for paths in capture.log_files.values() for p in paths]
    assert len(set(sources)) == len(sources) == capture.log_file_count
    assert sum(src.endswith("/rank.log") for src in sources) == moved > 16


_COUNTER = re.compile(rb'("SAI_PORT_STAT_[A-Z0-9_]+":")(\d+)"')


@pytest.mark.parametrize(("fault", "seed"), [(Fault.LINK_DOWN, 21), (Fault.ECMP, 3)])
def test_a_switch_whose_counters_run_backwards_is_no_evidence(
    tmp_path: Path, fault: Fault, seed: int
) -> None:
    """Every reading of every counter of one spine lower than the last: each is a counter
    reset, and none may move a verdict, however many there are."""
    clean, broken = simulations.capture(64, fault, seed), tmp_path / "broken"
    truth = simulations.truth(64, fault, seed)
    shutil.copytree(clean, broken)
    culprits = {j["link"]["id"] for j in truth["jobs"].values() if j.get("link")}
    spine = next(
        p
        for p in sorted((broken / "gnmi").glob("spine-*"))
        if not any(p.name.split(".")[0] in c for c in culprits)
    )
    text = spine.read_bytes()
    spine.write_bytes(
        _COUNTER.sub(lambda m: m.group(1) + str(2**62 - int(m.group(2))).encode() + b'"', text)
    )
    falls = _falling_readings(text)
    want = simulations.report(64, fault, seed)
    got = replay(open_capture(broken), DiscardSink())
    assert [(v.job_id, v.state, v.cause_kind, v.cause_link) for v in got.verdicts] == [
        (v.job_id, v.state, v.cause_kind, v.cause_link) for v in want.verdicts
    ]
    _check_against_truth(got.verdicts, truth)
    # One reset event per counter and quiet period, not one per reading.
    resets = got.link_events - want.link_events
    assert 0 < resets * 10 < falls, (resets, falls)


def _falling_readings(gnmi: bytes) -> int:
    """How many readings of the reversed file are below the one before of their series: the
    readings that rose in the original."""
    last: dict[tuple[bytes, bytes], int] = {}
    falls = 0
    for line in gnmi.splitlines():
        port = re.search(rb'"COUNTERS/([A-Za-z0-9]+)"', line)
        for m in _COUNTER.finditer(line):
            key = (port.group(1) if port else b"", m.group(1))
            value = int(m.group(2))
            falls += key in last and value > last[key]
            last[key] = value
    return falls


def test_every_dead_letter_of_a_replay_is_stored_and_counted(tmp_path: Path) -> None:
    cap = shutil.copytree(simulations.capture(64, Fault.LINK_DOWN, 21), tmp_path / "cap")
    truth = simulations.truth(64, Fault.LINK_DOWN, 21)
    (cap / "gnmi" / "junk.json").write_text("not gnmi at all\n" * 2500)
    job = next(iter(truth["jobs"]))
    with (sorted((cap / "logs" / job).iterdir())[0]).open("a") as fh:
        fh.write("h1:1:2 [0] NCCL WARN NET/IB : Got completion from peer\n" * 1200)
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        report = replay(open_capture(cap), store)
        assert report.dead_letters == {"gnmi": 2500, "logs": 1200}
        assert store.count("dead_letters") == 3700
    finally:
        store.close()
    _check_against_truth(report.verdicts, truth)


def test_capture_without_cabling_plan_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    with pytest.raises(CaptureError, match=r"cables\.csv"):
        open_capture(tmp_path)


def test_truth_file_is_never_read_by_replay(tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    write_capture(cap, 64, Fault.GPU_XID, 4, watchdog_s=WATCHDOG_S)
    (cap / "truth.json").write_bytes(orjson.dumps({"lies": True}))
    report = replay(open_capture(cap), DiscardSink())
    assert any(v.cause_kind == CauseKind.NODE for v in report.verdicts)


def test_a_miswired_host_is_replayed_as_cabled_and_the_cable_really_there_is_blamed(
    tmp_path: Path,
) -> None:
    """Two of a host's cables are swapped at the leaves. LLDP shows it; the replay attributes
    on the fabric as cabled, names the cable that is really on the port that went down, and
    says it is not where the plan puts it. Without LLDP the plan's cable is blamed instead."""
    cap = tmp_path / "cap"
    truth = write_capture(cap, 64, Fault.MISWIRE, 3, watchdog_s=WATCHDOG_S)
    report = replay(open_capture(cap), DiscardSink())
    assert sorted(d.kind for d in report.cabling) == ["miswired", "miswired"]
    (job,) = [j for j, t in truth["jobs"].items() if t["state"] == "stalled"]
    (v,) = [v for v in report.verdicts if v.job_id == job]
    assert v.cause_link is not None and v.cause_link.link_id == truth["fault_link"]["id"]
    assert any(e.kind == "miswired" and "the plan has" in e.detail for e in v.evidence)

    for f in (cap / "gnmi").iterdir():  # the same capture without LLDP
        lines = f.read_text().splitlines(keepends=True)
        f.write_text("".join(line for line in lines if "lldp" not in line))
    blind = replay(open_capture(cap), DiscardSink())
    assert blind.cabling == []
    (w,) = [w for w in blind.verdicts if w.job_id == job]
    assert w.cause_link is not None and w.cause_link.link_id != truth["fault_link"]["id"]


def test_a_seed_gives_the_same_capture_in_every_process(tmp_path: Path) -> None:
    """Set order changes with Python's hash seed: nothing the simulator draws may follow it,
    or `railtrace simulate --seed N` and the accuracy benchmark's incidents are not
    reproducible."""
    script = (
        "import sys; from pathlib import Path; from railtrace.simulate import Fault, write_capture;"
        " write_capture(Path(sys.argv[1]), 64, Fault.PFC_STORM, 3, watchdog_s=120)"
    )
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / hash_seed)], env=env, check=True
        )
    files = sorted(
        p.relative_to(tmp_path / "1") for p in (tmp_path / "1").rglob("*") if p.is_file()
    )
    assert files
    assert files == sorted(
        p.relative_to(tmp_path / "2") for p in (tmp_path / "2").rglob("*") if p.is_file()
    )
    different = [
        f for f in files if (tmp_path / "1" / f).read_bytes() != (tmp_path / "2" / f).read_bytes()
    ]
    assert different == []


@pytest.mark.parametrize("level", ["WARN", "unset"])
@pytest.mark.parametrize("fault", [Fault.LINK_DOWN, Fault.CRC_BURST, Fault.APP_HANG], ids=str)
def test_without_nccl_info_lines_the_scheduler_placement_names_the_same_culprit(
    fault: Fault, level: str
) -> None:
    truth = simulations.truth(64, fault, 11, nccl_debug=level)
    cap = simulations.capture(64, fault, 11, nccl_debug=level)
    logs = "".join(p.read_text() for p in (cap / "logs").rglob("*") if p.is_file())
    assert " NCCL INFO " not in logs  # nothing of the channels or NICs is printed
    report = simulations.report(64, fault, 11, nccl_debug=level)
    assert report.placements == len(truth["jobs"])
    _check_against_truth(report.verdicts, truth)


def test_scheduler_input_that_cannot_be_used_is_dead_lettered_and_stored(tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    truth = write_capture(cap, 64, Fault.LINK_DOWN, 21, watchdog_s=WATCHDOG_S, nccl_debug="WARN")
    (cap / "scheduler" / "squeue.json").write_bytes(
        orjson.dumps(
            {
                "jobs": [
                    {"job_id": 77, "job_state": "RUNNING", "nodes": "gpu[1-", "start_time": 1},
                    {"job_id": 78, "job_state": "RUNNING", "nodes": "elsewhere[1-2]"},
                ]
            }
        )
    )
    store = ChdbStore(tmp_path / "data")
    try:
        store.migrate()
        report = replay(open_capture(cap), store)
        assert report.dead_letters["scheduler"] == 1  # the hostlist cut off
        assert report.dead_letters["placement"] == 1  # hosts cables.csv does not hold
        assert store.count("dead_letters") == 2
        reasons = " | ".join(
            store.select(f"SELECT reason FROM {store._name('dead_letters')}").column(0).to_pylist()
        )
        assert "job 77: nodes '[' not closed" in reasons
        assert "job 78: 2 of its 2 hosts are not in cables.csv (elsewhere1, elsewhere2)" in reasons
        placed = store.job_facts_of("78", ("placement",))
        assert [h.name for f in placed for h in f.hosts] == ["elsewhere1", "elsewhere2"]
        _check_against_truth([v for v in report.verdicts if v.job_id in truth["jobs"]], truth)
    finally:
        store.close()


@pytest.mark.parametrize(
    "name", ["dmesg-{host}.txt", "{host}/dmesg.log", "{host}.dmesg"], ids=["prefix", "dir", "stem"]
)
def test_an_xid_in_a_dmesg_file_that_names_no_host_is_given_the_host_its_file_name_says(
    tmp_path: Path, name: str
) -> None:
    """`dmesg -T` lines carry no host name (the lines of tests/fixtures/logs/real/
    akash_244_dmesg_T_xid.log, re-dated into the job's run): the node is the host the file is
    named for, never the empty name a verdict once carried."""
    cap = tmp_path / "cap"
    truth = write_capture(cap, 4, Fault.NONE, 5, watchdog_s=WATCHDOG_S)
    job = sorted(truth["jobs"])[0]
    host_log = sorted((cap / "logs" / job).glob("*.log"))[0]
    host = host_log.stem
    last = host_log.read_text().splitlines()[-1].split()[0]  # 2026-05-10T16:58:01.123456Z
    stamp = datetime.strptime(last[:19], "%Y-%m-%dT%H:%M:%S") - timedelta(seconds=60)
    dmesg = cap / "logs" / job / name.format(host=host)
    dmesg.parent.mkdir(parents=True, exist_ok=True)
    when = stamp.strftime("%a %b %e %H:%M:%S %Y")
    dmesg.write_text(
        f"[{when}] NVRM: GPU at PCI:0000:00:05: GPU-efbdfde9-5798-a6e7-4c46-12518fa15375\n"
        f"[{when}] NVRM: Xid (PCI:0000:00:05): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.\n"
    )
    report = replay(open_capture(cap), DiscardSink())
    (v,) = [v for v in report.verdicts if v.job_id == job]
    assert v.state == JobState.STALLED, v
    assert v.cause_kind == CauseKind.NODE and v.cause_node == host, v


#: Every stamp form the simulator writes, as (pattern, strptime format of its group "t"); a
#: shipper's ISO stamp also ends with its zone, which a local clock does not print.
_STAMPS = [
    (re.compile(rb"^(?P<t>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?P<f>\.\d+)?Z"), "%Y-%m-%dT%H:%M:%S"),
    (re.compile(rb"\[(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(rb"\[[IWEF](?P<t>\d{4} \d\d:\d\d:\d\d)"), "%m%d %H:%M:%S"),
    (re.compile(rb"^(?P<t>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)"), "%b %d %H:%M:%S"),
    # scontrol's SubmitTime=, StartTime=, EndTime= ...
    (re.compile(rb"Time=(?P<t>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"), "%Y-%m-%dT%H:%M:%S"),
]


def _to_local(line: bytes, zone: ZoneInfo, year: int) -> bytes:
    """`line` with every stamp the simulator wrote in UTC rewritten to `zone`'s wall clock,
    without a zone, as a host logging in local time prints it."""
    for pattern, fmt in _STAMPS:
        dated = "%Y" in fmt

        def local(m: re.Match[bytes], fmt: str = fmt, dated: bool = dated) -> bytes:
            text = m["t"].decode()
            at = datetime.strptime(
                text if dated else f"{year} {text}", fmt if dated else f"%Y {fmt}"
            )
            shown = at.replace(tzinfo=UTC).astimezone(zone).strftime(fmt)
            if fmt.startswith("%b") and shown[4] == "0":
                shown = shown[:4] + " " + shown[5:]  # syslog pads the day with a space
            whole = m[0]
            head = whole[: m.start("t") - m.start()]
            tail = whole[m.end("t") - m.start() :]
            if tail.endswith(b"Z"):
                tail = tail[:-1]
            return head + shown.encode() + tail

        line = pattern.sub(local, line)
    return line


def test_logs_stamped_in_local_time_without_a_zone_are_judged_in_the_site_zone(
    tmp_path: Path,
) -> None:
    """The capture's log lines rewritten to Chicago wall-clock time without a zone, as a host
    in local time prints them: read as UTC they sit five hours from the switches' telemetry
    and the culprit is lost; with `site.timezone` they give the verdicts of the UTC logs."""
    cap = tmp_path / "cap"
    write_capture(cap, 8, Fault.LINK_DOWN, 33, watchdog_s=WATCHDOG_S)
    original = {v.job_id: v for v in replay(open_capture(cap), DiscardSink()).verdicts}
    (stalled,) = [j for j, v in original.items() if v.state == JobState.STALLED]
    assert original[stalled].cause_kind == CauseKind.LINK
    chicago = ZoneInfo("America/Chicago")
    year = datetime.fromtimestamp(original[stalled].stalled_at_ns / 1e9, UTC).year
    rewritten = 0
    for path in (cap / "logs").rglob("*"):
        if not path.is_file():
            continue
        lines = path.read_bytes().splitlines(keepends=True)
        out = [_to_local(line, chicago, year) for line in lines]
        rewritten += sum(a != b for a, b in zip(lines, out, strict=True))
        path.write_bytes(b"".join(out))
    assert rewritten > 100
    as_utc = {v.job_id: v for v in replay(open_capture(cap), DiscardSink()).verdicts}
    assert as_utc[stalled] != original[stalled]
    assert as_utc[stalled].cause_kind != CauseKind.LINK, as_utc[stalled]
    in_zone = {
        v.job_id: v for v in replay(open_capture(cap), DiscardSink(), local=chicago).verdicts
    }
    assert in_zone == original
