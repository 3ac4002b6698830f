"""A LogParser saved and resumed mid-stream, and lines delivered twice, change nothing.

Streaming workers keep one parser per (job, source file) in a changelogged table and may be
restarted or rebalanced at any line; at-least-once delivery then replays the lines after the
last committed offset. These tests cut real captures at every line, push the state through
JSON, and check that the facts are exactly those of one uninterrupted run.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from logs_support import JOB, REAL, real_lines, utc_ns

from railtrace.streams.logs import SNAPSHOT_VERSION, LogParser
from railtrace.streams.logs.envdump import MAX_NAMES, MAX_OPEN, MAX_SEEN, MAX_VALUE
from railtrace.streams.logs.envplace import READ
from railtrace.streams.logs.nccl import MAX_COMMUNICATORS
from railtrace.streams.logs.pytorch import (
    MAX_ERRORS_SEEN,
    MAX_TIMEOUT_RANKS,
    MAX_TIMEOUTS_PER_RANK,
)
from railtrace.streams.records import CollectiveTimeout, JobFact

FIXTURES = sorted(p.name for p in REAL.glob("*.log"))
WATCHDOG = (
    "[rank{rank}]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog "
    "caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8, "
    "NumelOut=8, Timeout(ms)=600000) ran for 600068 milliseconds before timing out."
)


def through_json(parser: LogParser) -> LogParser:
    """What a worker gets back from its table: the snapshot serialized and parsed again."""
    return LogParser.restore(orjson.loads(orjson.dumps(parser.snapshot())))


def run(
    lines: list[bytes], source: str, year_hint: int | None = 2024
) -> tuple[list[JobFact], LogParser]:
    parser = LogParser(JOB, source, year_hint)
    facts = [fact for line in lines for fact in parser.feed(line)]
    return facts, parser


def assert_plain_json(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str)
            assert_plain_json(item)
    elif isinstance(value, list):
        for item in value:
            assert_plain_json(item)
    else:
        assert value is None or isinstance(value, str | int | float | bool), type(value)


@pytest.mark.parametrize("name", FIXTURES)
def test_cut_at_every_line_and_resumed_from_json_gives_the_uninterrupted_facts(name: str) -> None:
    lines = real_lines(name)
    expected, whole = run(lines, name)
    for cut in range(len(lines) + 1):
        head, parser = run(lines[:cut], name)
        resumed = through_json(parser)
        tail = [fact for line in lines[cut:] for fact in resumed.feed(line)]
        assert head + tail == expected, f"cut after line {cut}"
        assert resumed.snapshot() == whole.snapshot(), f"cut after line {cut}"


def test_two_threads_keep_their_own_communicators_across_a_restore() -> None:
    init = "h:7:{tid} [0] NCCL INFO comm {ptr} rank {rank} nranks 2 commId {cid} - Init START"
    channel = "h:7:{tid} [0] NCCL INFO Channel 00/0 : {rank}[0] -> 9[1] via NET/IB/0"
    lines = [
        init.format(tid=11, ptr="0xa", rank=0, cid="0x1111"),
        init.format(tid=12, ptr="0xb", rank=1, cid="0x2222"),
        channel.format(tid=11, rank=0),
        channel.format(tid=12, rank=1),
    ]
    raw = [line.encode() for line in lines]
    expected, _ = run(raw, "s")
    assert [getattr(f, "comm_id", None) for f in expected[2:]] == ["0x1111", "0x2222"]
    for cut in range(len(raw) + 1):
        head, parser = run(raw[:cut], "s")
        resumed = through_json(parser)
        assert head + [f for line in raw[cut:] for f in resumed.feed(line)] == expected


def test_all_captures_as_one_stream_restored_after_every_line_gives_the_same_facts() -> None:
    lines = [line for name in FIXTURES for line in real_lines(name)]
    expected, whole = run(lines, "all", year_hint=None)
    parser = LogParser(JOB, "all", None)
    facts: list[JobFact] = []
    for line in lines:
        facts.extend(parser.feed(line))
        parser = through_json(parser)
    assert facts == expected
    assert parser.snapshot() == whole.snapshot()
    assert parser.stats.lines == len(lines)


def test_snapshot_holds_only_plain_json_values_and_survives_orjson_unchanged() -> None:
    lines = [line for name in FIXTURES for line in real_lines(name)]
    _, parser = run(lines, "all")
    snap = parser.snapshot()
    assert_plain_json(snap)
    assert orjson.loads(orjson.dumps(snap)) == snap
    assert snap["v"] == SNAPSHOT_VERSION
    assert (snap["job_id"], snap["source"], snap["year_hint"]) == (JOB, "all", 2024)
    assert snap["position"] == len(lines)


def test_snapshot_keeps_counters_but_not_dead_letters() -> None:
    _, parser = run(
        [b"h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 2[0] via NET/IB/x", b"plain"], "s"
    )
    resumed = through_json(parser)
    assert (resumed.stats.lines, resumed.stats.malformed, resumed.stats.skipped) == (2, 1, 1)
    assert resumed.stats.dead_letters == []
    assert parser.stats.dead_letters[0].line_no == 1


def test_restored_parser_without_year_hint_keeps_the_year_it_started_with() -> None:
    parser = LogParser(JOB, "s")
    snap = orjson.loads(orjson.dumps(parser.snapshot()))
    assert snap["year_hint"] is None
    snap["clock"]["year"] = 1999  # as if saved in 1999 and resumed today
    (timeout,) = LogParser.restore(snap).feed(WATCHDOG.format(rank=1, seq=5))
    assert isinstance(timeout, CollectiveTimeout)
    assert timeout.ts_ns == utc_ns(1999, 6, 3, 17, 48, 1, 5271823)


@pytest.mark.parametrize(
    "name", ["nccl_1762_ras_incomplete.log", "nccl_tests_373_vdev_init_channels.log"]
)
def test_lines_replayed_after_a_restore_are_ignored_and_counted(name: str) -> None:
    lines = real_lines(name)
    expected, _ = run(lines, name)
    numbered = list(enumerate(lines, start=1))
    for committed, saved in itertools.combinations(range(len(lines) + 1), 2):
        # State saved after line `saved`, offsets committed only up to line `committed`: the
        # worker that takes over gets lines committed+1.. again.
        parser = LogParser(JOB, name, 2024)
        head = [fact for no, line in numbered[:saved] for fact in parser.feed(line, no)]
        resumed = through_json(parser)
        tail = [fact for no, line in numbered[committed:] for fact in resumed.feed(line, no)]
        assert head + tail == expected, (committed, saved)
        assert resumed.stats.redelivered == saved - committed
        assert resumed.stats.lines == len(lines)


def test_redelivered_lines_yield_no_facts_and_leave_the_state_alone() -> None:
    lines = real_lines("nccl_1730_ras_ok_then_watchdog.log")
    parser = LogParser(JOB, "s", 2024)
    facts = [fact for no, line in enumerate(lines, start=1) for fact in parser.feed(line, no)]
    assert facts
    resumed = through_json(parser)
    before = resumed.snapshot()
    for no, line in enumerate(lines, start=1):
        assert resumed.feed(line, no) == []
    after = resumed.snapshot()
    assert after["stats"].pop("redelivered") == len(lines)
    before["stats"].pop("redelivered")
    assert after == before


def test_line_numbers_given_by_the_caller_become_origins_and_may_skip_ahead() -> None:
    devices = real_lines("rccl_419_net_ib_using_ib.log")[2]
    parser = LogParser(JOB, "s")
    (first,) = parser.feed(devices, 7)
    (second,) = parser.feed(devices, 20)
    (third,) = parser.feed(devices)  # no position: the line after the last one
    assert [f.origin.line_no for f in (first, second, third)] == [7, 20, 21]
    assert parser.feed(devices, 20) == []
    assert (parser.position, parser.stats.lines, parser.stats.redelivered) == (21, 3, 1)


def test_watchdog_dedup_memory_stays_bounded_on_a_long_stream() -> None:
    parser = LogParser(JOB, "long", 2024)
    reported = 0
    for seq in range(500):
        for rank in range(4):
            line = WATCHDOG.format(rank=rank, seq=seq)
            reported += len(parser.feed(line))
            assert parser.feed(line) == []  # the repeat right after is still recognised
    assert reported == 4 * 500
    seen = parser.snapshot()["torch"]["timeouts_seen"]
    recent = [[seq, "ALLREDUCE"] for seq in range(500 - MAX_TIMEOUTS_PER_RANK, 500)]
    assert seen == [[rank, recent] for rank in range(4)]

    ranks = MAX_TIMEOUT_RANKS + 200
    for rank in range(ranks):
        assert len(parser.feed(WATCHDOG.format(rank=rank + 10, seq=1))) == 1
    seen = parser.snapshot()["torch"]["timeouts_seen"]
    assert [rank for rank, _ in seen] == list(range(ranks + 10 - MAX_TIMEOUT_RANKS, ranks + 10))


def test_watchdog_repeat_beyond_the_per_rank_bound_is_reported_again() -> None:
    parser = LogParser(JOB, "s", 2024)
    for seq in range(MAX_TIMEOUTS_PER_RANK + 1):
        parser.feed(WATCHDOG.format(rank=3, seq=seq))
    assert parser.feed(WATCHDOG.format(rank=3, seq=1)) == []
    assert len(parser.feed(WATCHDOG.format(rank=3, seq=0))) == 1


def test_error_and_communicator_memory_stay_bounded_on_a_long_stream() -> None:
    parser = LogParser(JOB, "long", 2024)
    for i in range(MAX_COMMUNICATORS + 500):
        host, pid, ptr = f"node{i % 97}", 1000 + i, f"0x{i:x}"
        parser.feed(
            f"{host}:{pid}:{pid + 1} [0] NCCL INFO ncclCommInitRank comm {ptr} rank 0 nranks 8 "
            f"cudaDev 0 busId 18000 commId 0x{i:016x} - Init START"
        )
    for second in range(MAX_ERRORS_SEEN * 3):
        stamp = f"2024-06-03T17:{second // 60 % 60:02d}:{second % 60:02d}Z"
        facts = parser.feed(f"{stamp} ncclRemoteError: remote process exited or there was a")
        assert len(facts) == 1
    nccl = parser.snapshot()["nccl"]
    assert {table: len(rows) for table, rows in nccl.items()} == dict.fromkeys(
        ("thread_comm", "process_comm", "comm_ids", "ranks_seen"), MAX_COMMUNICATORS
    )
    last = MAX_COMMUNICATORS + 499
    assert nccl["comm_ids"][-1][2:] == [f"0x{last:x}", f"0x{last:016x}"]
    assert len(parser.snapshot()["torch"]["errors_seen"]) == MAX_ERRORS_SEEN


def test_snapshot_with_every_table_full_fits_in_a_default_kafka_message() -> None:
    # The table's changelog carries the whole snapshot as one record; Kafka refuses records
    # over 1 MB unless the topic and producer are configured otherwise.
    parser = LogParser(JOB, "logs/job-1/whole-job.log", 2024)
    for i in range(MAX_COMMUNICATORS):
        host, pid = f"gpu-node-{i // 8:04d}.cluster.internal", 100_000 + i
        parser.feed(
            f"{host}:{pid}:{pid + 500} [{i % 8}] NCCL INFO ncclCommInitRank comm 0x55d1c{i:07x} "
            f"rank {i} nranks 4096 cudaDev 3 busId 5d000 commId 0x{i:016x} - Init START"
        )
    for rank in range(MAX_TIMEOUT_RANKS):
        for seq in range(MAX_TIMEOUTS_PER_RANK):
            parser.feed(WATCHDOG.format(rank=rank, seq=2_398_459 + seq))
    for second in range(MAX_ERRORS_SEEN):
        stamp = f"2024-06-03T17:{second // 60:02d}:{second % 60:02d}.123456Z"
        parser.feed(
            f"{stamp} ncclRemoteError: remote process exited or there was a network error. "
            f"Last error: NET/IB : Got completion from peer 10.1.{second}.3<44206> with status=12"
        )
    for n in range(MAX_SEEN):  # the node lists of as many job steps
        parser.feed(f"SLURM_JOB_NODELIST=gpu-node-[{n:04d}-{n + 4000:04d}]")
    for task in range(MAX_OPEN):  # srun -l: as many tasks' env dumps open at once, all full
        for k in range(MAX_NAMES - len(READ)):
            parser.feed(f"{task}: MODULE_ENVIRONMENT_VARIABLE_{k:05d}=x")
        for name in sorted(READ):
            parser.feed(f"{task}: {name}=" + "9" * MAX_VALUE)
    snap = parser.snapshot()
    assert [len(d["names"]) for _, d in snap["env"]["open"]] == [MAX_NAMES] * MAX_OPEN
    assert len(snap["nccl"]["comm_ids"]) == MAX_COMMUNICATORS
    assert sum(len(pairs) for _, pairs in snap["torch"]["timeouts_seen"]) == (
        MAX_TIMEOUT_RANKS * MAX_TIMEOUTS_PER_RANK
    )
    assert len(snap["torch"]["errors_seen"]) == MAX_ERRORS_SEEN
    assert len(orjson.dumps(snap)) < 1_000_000


@pytest.mark.parametrize("version", [None, 0, 2, "1", True, 1.0])
def test_snapshot_of_another_version_is_refused(version: object) -> None:
    snap = LogParser(JOB, "s", 2024).snapshot()
    snap["v"] = version
    with pytest.raises(ValueError, match="version"):
        LogParser.restore(snap)


def test_snapshot_without_version_is_refused() -> None:
    snap = LogParser(JOB, "s", 2024).snapshot()
    del snap["v"]
    with pytest.raises(ValueError, match="version None"):
        LogParser.restore(snap)


@pytest.mark.parametrize("damage", ["nccl", "clock", "where", "stats"])
def test_damaged_snapshot_is_refused_with_a_value_error(damage: str) -> None:
    snap = LogParser(JOB, "s", 2024).snapshot()
    snap[damage] = {"thread_comm": [["h", "not a pid", 1, "0x1"]]} if damage == "nccl" else [1]
    with pytest.raises(ValueError, match="unreadable LogParser snapshot"):
        LogParser.restore(snap)
