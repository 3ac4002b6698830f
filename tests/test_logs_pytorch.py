"""PyTorch watchdog timeouts -> CollectiveTimeout, once per (rank, seq, op)."""

from __future__ import annotations

from pathlib import Path

import pytest
from logs_support import JOB, of_type, parse_real, parse_text, real_lines, utc_ns

from railtrace.streams.logs import parse_lines
from railtrace.streams.records import CollectiveTimeout, LogOrigin, NetError, WatchdogState

FUZZ = Path(__file__).parent / "fixtures" / "fuzz"

WATCHDOG = [
    # (fixture, line index, rank, seq, op, timeout_ms, ran_for_ms)
    ("llamafactory_6269_watchdog_pt24.log", 0, 0, 7753, "_REDUCE_SCATTER_BASE", 600000, 600061),
    ("basicsr_737_pg_id_guid.log", 0, 1, 808, "ALLREDUCE", 600000, 600020),
    ("ofa_271_pt113_untimed.log", 1, 3, 469508, "ALLREDUCE", 1800000, 1802211),
    ("sglang_1693_rethrow_pg3.log", 1, 5, 9141, "_ALLGATHER_BASE", 600000, 600020),
    ("megatron_935_rethrow_pg1.log", 1, 7, 199, "_REDUCE_SCATTER_BASE", 600000, 882725),
    ("catalyst_15_nccl_watchdog_rethrow.log", 1, 6, 880, "BROADCAST", 1800000, 1800902),
    ("instructlab_520_pg_id_guid_rethrow.log", 1, 3, 1, "ALLREDUCE", 1, 90),
    ("nccl_1730_ras_ok_then_watchdog.log", 23, 118, 2398459, "ALLREDUCE", 1800000, 1800068),
    ("llamafactory_7396_line_numbered_watchdog.log", 1, 4, 1580, "ALLREDUCE", 600000, 600067),
]


@pytest.mark.parametrize(
    ("name", "index", "rank", "seq", "op", "timeout_ms", "ran_for_ms"),
    WATCHDOG,
    ids=[w[0] for w in WATCHDOG],
)
def test_watchdog_timeout_variants_across_pytorch_versions(
    name: str, index: int, rank: int, seq: int, op: str, timeout_ms: int, ran_for_ms: int
) -> None:
    facts, stats = parse_text(real_lines(name)[index].decode())
    (t,) = of_type(facts, CollectiveTimeout)
    assert (t.rank, t.seq, t.op, t.timeout_ms, t.ran_for_ms) == (
        rank, seq, op, timeout_ms, ran_for_ms
    )  # fmt: skip
    assert stats.malformed == 0


def test_timeout_start_is_line_time_minus_ran_for() -> None:
    facts, _ = parse_real("llamafactory_6269_watchdog_pt24.log", year_hint=2024)
    first = of_type(facts, CollectiveTimeout)[0]
    ts = utc_ns(2024, 12, 6, 18, 44, 12, 715_298_746)
    assert (first.ts_ns, first.started_ns) == (ts, ts - 600_061 * 1_000_000)
    assert first.origin == LogOrigin("llamafactory_6269_watchdog_pt24.log", 1)


def test_each_rank_of_a_shared_seq_gets_its_own_timeout() -> None:
    facts, _ = parse_real("llamafactory_6269_watchdog_pt24.log")
    assert [(t.rank, t.seq) for t in of_type(facts, CollectiveTimeout)] == [
        (0, 7753),
        (4, 7753),
        (3, 7753),
    ]


def test_repeated_watchdog_message_is_emitted_once() -> None:
    facts, _ = parse_real("pytorch_118369_progress_bar_repeats.log")
    assert [(t.rank, t.seq) for t in of_type(facts, CollectiveTimeout)] == [
        (0, 96120),
        (0, 96117),
        (0, 96125),
        (7, 64088),
    ]


def test_watchdog_line_then_rethrow_of_same_work_is_one_timeout() -> None:
    lines = [
        real_lines("basicsr_737_pg_id_guid.log")[0].decode(),
        real_lines("basicsr_737_pg_id_guid.log")[1].decode(),
        # SYNTHETIC rethrow of the same work, in the real format of instructlab#520:
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread "
        "terminated with exception: [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
        "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
    ]
    facts, _ = parse_lines(lines, job_id=JOB, source="s", year_hint=2025)
    (t,) = of_type(facts, CollectiveTimeout)
    assert (t.rank, t.seq, t.origin.line_no) == (1, 808, 1)


def test_followup_lines_of_a_timeout_are_one_teardown_of_the_rank() -> None:
    facts, stats = parse_real("llamafactory_8261_some_ops_failed_rethrow.log")
    (down,) = facts
    assert isinstance(down, WatchdogState)
    assert (down.kind, down.rank, down.origin.line_no) == ("teardown", 4, 3)
    assert stats.skipped == 2


def test_timeout_host_is_that_of_last_nccl_line_else_none() -> None:
    nccl = real_lines("nccl_1038_roce_ro_init_start.log")[3]
    timeout = real_lines("basicsr_737_pg_id_guid.log")[0]
    with_host, _ = parse_lines([nccl, timeout], job_id=JOB, source="s")
    without, _ = parse_lines([timeout], job_id=JOB, source="s")
    assert of_type(with_host, CollectiveTimeout)[0].host == "host-2"
    assert of_type(without, CollectiveTimeout)[0].host is None


def test_line_wrapped_timeout_keeps_what_it_can_read() -> None:
    facts, stats = parse_real("open_r1_620_wrapped_lines.log")
    (t,) = of_type(facts, CollectiveTimeout)
    assert (t.rank, t.seq, t.op, t.timeout_ms, t.ran_for_ms) == (
        None,
        4,
        "BROADCAST",
        1800000,
        1800011,
    )
    assert stats.malformed == 0


def test_watchdog_line_without_work_fields_is_a_dead_letter() -> None:
    facts, stats = parse_text(
        "[rank2]:[E626 06:24:44.1 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(garbled"
    )
    assert facts == []
    assert stats.dead_letters[0].extra["rule"] == "torch-watchdog"


def test_a_stray_last_error_line_does_not_swallow_the_watchdog_line_after_it() -> None:
    """Found by the fuzzer: a line ending `Last error:` made the next line its continuation,
    whatever it was, and a watchdog timeout right after it was lost."""
    watchdog = real_lines("llamafactory_6269_watchdog_pt24.log")[0]
    alone, _ = parse_lines([watchdog], job_id=JOB, source="inline", year_hint=2024)
    after, _ = parse_lines(
        ["[rank0]: something failed. Last error:", watchdog],
        job_id=JOB,
        source="inline",
        year_hint=2024,
    )
    assert len(of_type(alone, CollectiveTimeout)) == 1
    assert [(t.seq, t.op) for t in of_type(after, CollectiveTimeout)] == [
        (t.seq, t.op) for t in of_type(alone, CollectiveTimeout)
    ]


def test_an_error_line_after_a_stray_last_error_is_its_own_error() -> None:
    """Reduced by the fuzzer (tests/fixtures/fuzz): the remote-error line was read as the
    stray `Last error:`'s text and came out as an ib-completion error."""
    lines = (FUZZ / "stray-last-error-then-remote-error.log").read_bytes().splitlines()
    alone, _ = parse_lines(lines[1:], job_id=JOB, source="inline", year_hint=2024)
    after, _ = parse_lines(lines, job_id=JOB, source="inline", year_hint=2024)
    assert [(e.kind, e.peer) for e in of_type(after, NetError)] == [
        (e.kind, e.peer) for e in of_type(alone, NetError)
    ]
    assert [e.kind for e in of_type(alone, NetError)] == ["remote-error"]


# --- what the watchdog says besides the timeout -----------------------------------------------

# fmt: off
STATES = [
    # (fixture, line index, kind, pg, rank, seq, last enqueued, last completed, stuck s)
    # 2.4: "Exception (either an error or timeout) detected by watchdog at work: N, ..."
    ("llamafactory_6269_watchdog_pt24.log", 1, "failure", "1", 0, 7753, 7755, 7752, None),
    # 2.5: the same under `[PG ID 0 PG GUID 0(default_pg) Rank 1]`
    ("basicsr_737_pg_id_guid.log", 1, "failure", "0(default_pg)", 1, 808, 811, 807, None),
    # 2.4: "Timeout at NCCL work: N, ..."
    ("llamafactory_6269_timeout_at_work_teardown.log", 1,
     "failure", "1", 0, 7753, 7755, 7752, None),
    # 2.5: a work that never completed anything (-1)
    ("nccl_1504_timeout_at_work_never_completed.log", 0,
     "failure", "0(default_pg)", 1, 1, 1, -1, None),
    # 2.6: the launcher's global rank 12 is rank 0 of process group 143
    ("nccl_1610_group_rank_behind_global_rank.log", 0, "failure", "143", 12, 87, 87, 86, None),
    # 2.7: "failure detected by watchdog at work sequence id: N PG status: ..."
    ("nccl_1730_ras_ok_then_watchdog.log", 24,
     "failure", "0(default_pg)", 118, 2398459, 2398578, 2398458, None),
    ("openrlhf_1126_dump_signal_from_rank6.log", 3,
     "failure", "0(default_pg)", 7, 460631, 460631, 460630, None),
    # a rank told to dump because rank 6 timed out
    ("openrlhf_1126_dump_signal_from_rank6.log", 0,
     "dump", "0(default_pg)", 2, None, 460631, 460630, None),
    # the heartbeat monitor: 2.3 without time, 2.6 with a named process group
    ("llamafactory_6953_heartbeat_monitor_pt23.log", 2,
     "heartbeat", "0", 144, None, None, None, 600),
    ("ms_swift_7992_heartbeat_pg_guid_name.log", 0,
     "heartbeat", "99(EXPERT_MODEL_PARALLEL_GROUP)", 4, None, None, None, 480),
    # the process taken down
    ("llamafactory_8261_some_ops_failed_rethrow.log", 2,
     "teardown", "", 4, None, None, None, None),
]
# fmt: on


@pytest.mark.parametrize(
    ("name", "index", "kind", "pg", "rank", "seq", "enqueued", "completed", "stuck"),
    STATES,
    ids=[f"{s[0]}:{s[1]}" for s in STATES],
)
def test_watchdog_progress_abort_and_teardown_wordings_from_pytorch_2_3_to_2_7(
    name: str,
    index: int,
    kind: str,
    pg: str,
    rank: int,
    seq: int | None,
    enqueued: int | None,
    completed: int | None,
    stuck: int | None,
) -> None:
    facts, stats = parse_text(real_lines(name)[index].decode())
    (s,) = of_type(facts, WatchdogState)
    assert (s.kind, s.pg, s.rank, s.seq, s.last_enqueued, s.last_completed, s.stuck_s) == (
        kind, pg, rank, seq, enqueued, completed, stuck
    )  # fmt: skip
    assert stats.malformed == 0


def test_each_rank_says_how_far_it_got_once_and_is_taken_down_once() -> None:
    """PyTorch 2.4 prints `Exception ... detected by watchdog at work: 7753` and `Timeout at
    NCCL work: 7753` for the same work of rank 0: one report; then every rank's teardown."""
    facts, _ = parse_real("llamafactory_6269_timeout_at_work_teardown.log")
    assert [(s.kind, s.rank, s.last_completed) for s in of_type(facts, WatchdogState)] == [
        ("failure", 0, 7752),
        ("teardown", 0, None),
        ("failure", 2, 7752),
        ("teardown", 2, None),
        ("failure", 6, 7752),
    ]


def test_heartbeat_abort_is_one_fact_from_the_line_that_says_how_long() -> None:
    facts, _ = parse_real("llamafactory_6953_heartbeat_monitor_pt23.log")
    (s,) = of_type(facts, WatchdogState)
    assert (s.kind, s.stuck_s, s.origin.line_no) == ("heartbeat", 600, 3)
