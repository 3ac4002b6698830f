"""Lines without a time of their own: dated by an earlier line of their file, by the shipper's
stamp, or by their job's first time (what says where the job runs), and said so; an event that
none of these dates is a counted dead letter. Nothing is ever placed at the epoch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from logs_support import JOB, of_type, real_lines, utc_ns

from railtrace.replay import open_capture, replay
from railtrace.streams import wire
from railtrace.streams.logs import LogParser, parse_lines
from railtrace.streams.logs.undated import JobClock
from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    DeadLetter,
    InitComplete,
    JobFact,
    NetDevices,
    RankInfo,
    WatchdogState,
)

UNTIMED_WATCHDOG = "ofa_271_pt113_untimed.log"  # PyTorch 1.13: no time on the line
STAMPED = "llamafactory_6269_watchdog_pt24.log"  # c10 stamps, December 6
NCCL_INFO = "nccl_1814_ibext_init_channels_completion.log"  # INFO lines carry no time
SETUP = (NetDevices, RankInfo, InitComplete, ChannelEdge)
SHIPPED_NS = utc_ns(2022, 11, 3, 8, 30, 0)


def _setup(source: str) -> list[JobFact]:
    """The facts of NCCL_INFO that say where the job runs (it also has two untimed errors)."""
    facts, _ = parse_lines(real_lines(NCCL_INFO), job_id=JOB, source=source)
    return [f for f in facts if isinstance(f, SETUP)]


def _feed(parser: LogParser, lines: list[bytes]) -> list[JobFact]:
    return [f for line in lines for f in parser.feed(line)]


def test_an_untimed_line_after_a_stamped_one_takes_its_time_and_says_so() -> None:
    lines = [real_lines(STAMPED)[0], real_lines(UNTIMED_WATCHDOG)[0]]
    facts, _ = parse_lines(lines, job_id=JOB, source="rank.log", year_hint=2024)
    stamped, borrowed = of_type(facts, CollectiveTimeout)
    assert borrowed.ts_ns == stamped.ts_ns == utc_ns(2024, 12, 6, 18, 44, 12, 715_298_746)
    assert (stamped.origin.dated_by, borrowed.origin.dated_by) == ("", "line 1")


def test_before_the_files_first_stamp_the_shippers_stamp_dates_a_line() -> None:
    parser = LogParser(JOB, "rank.log", 2022)
    parser.shipped(SHIPPED_NS)
    (timeout, _) = of_type(_feed(parser, real_lines(UNTIMED_WATCHDOG)), CollectiveTimeout)
    assert (timeout.ts_ns, timeout.origin.dated_by) == (SHIPPED_NS, "shipper")
    assert timeout.started_ns == SHIPPED_NS - 1_802_212 * 1_000_000


def test_a_stamp_earlier_in_the_file_is_preferred_to_the_shippers() -> None:
    parser = LogParser(JOB, "rank.log", 2024)
    parser.shipped(SHIPPED_NS)
    facts = _feed(parser, [real_lines(STAMPED)[0], real_lines(UNTIMED_WATCHDOG)[0]])
    assert [t.origin.dated_by for t in of_type(facts, CollectiveTimeout)] == ["", "line 1"]


def test_an_undated_event_is_a_dead_letter_never_a_fact_at_the_epoch() -> None:
    facts, _ = parse_lines(real_lines(UNTIMED_WATCHDOG), job_id=JOB, source="rank.log")
    assert {f.ts_ns for f in facts} == {0}  # the parser's word: no time for these
    dated, dead = JobClock().date(facts)
    assert dated == []
    assert [(d.source, d.line_no, d.extra["rule"]) for d in dead] == [
        ("rank.log", 1, "untimed"),
        ("rank.log", 2, "untimed"),
    ]
    assert dead[0].reason.startswith("CollectiveTimeout: no time on its line")


def test_where_a_job_runs_is_dated_by_its_first_stamped_line_in_any_file() -> None:
    """The NCCL INFO setup of one rank's file carries no time; the job's next file does: the
    setup is held, then dated by that line and says which."""
    clock = JobClock()
    setup = _setup("host-a.log")
    held, dead = clock.date(setup)
    assert (held, dead) == ([], [])
    stamped, _ = parse_lines(real_lines(STAMPED), job_id=JOB, source="host-b.log", year_hint=2024)
    out, dead = clock.date(stamped)
    structure = [f for f in out if isinstance(f, SETUP)]
    assert len(structure) == len(setup) and dead == []
    first = utc_ns(2024, 12, 6, 18, 44, 12, 715_298_746)
    assert {(f.ts_ns, f.origin.dated_by) for f in structure} == {(first, "host-b.log line 1")}
    # Held facts come out first, then the line that dated them, in the order they were read.
    assert out[: len(structure)] == structure
    assert out[len(structure) :] == stamped
    # Later undated setup is dated at once by the same first time.
    again, _ = clock.date(setup)
    assert {f.ts_ns for f in again} == {first}


def test_a_job_whose_logs_show_no_time_leaves_its_setup_as_dead_letters() -> None:
    clock = JobClock()
    setup = _setup("host-a.log")
    clock.date(setup)
    dead = clock.leftover()
    assert len(dead) == len(setup) > 0
    assert {d.reason.split(": ", 1)[1] for d in dead} == {
        "no line of the job's logs carried a time"
    }
    assert clock.held == []


def test_the_job_clock_survives_a_snapshot() -> None:
    clock = JobClock()
    clock.date(_setup("host-a.log"))
    restored = JobClock.restore(orjson.loads(orjson.dumps(clock.snapshot())))
    stamped, _ = parse_lines(real_lines(STAMPED), job_id=JOB, source="host-b.log", year_hint=2024)
    assert restored.date(stamped) == clock.date(stamped)


def test_the_shippers_stamp_travels_with_a_log_message_and_is_checked() -> None:
    batch = wire.LogBatch(JOB, "logs/job-1/gpu7:/x.log", 1, ("a",), 2026, SHIPPED_NS)
    assert wire.decode_log_batch(wire.encode_log_batch(batch)) == batch
    old = b'{"job_id": "j", "source": "s", "line_no": 1, "line": "a"}'
    assert wire.decode_log_batch(old).read_ns is None
    with pytest.raises(wire.WireError, match="read_ns"):
        wire.decode_log_batch(
            b'{"job_id": "j", "source": "s", "line_no": 1, "line": "a", "read_ns": -5}'
        )


class _Recorded:
    """A replay sink that keeps the facts and dead letters it is given."""

    def __init__(self) -> None:
        self.facts: list[JobFact] = []
        self.dead: list[DeadLetter] = []

    def write_job_facts(self, rows: Any) -> None:
        self.facts.extend(rows)

    def write_dead_letters(self, rows: Any) -> None:
        self.dead.extend(rows)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_a_replay_places_no_fact_at_the_epoch_and_counts_what_it_could_not_date(
    tmp_path: Path,
) -> None:
    cap = tmp_path / "cap"
    (cap / "logs" / "7").mkdir(parents=True)
    (cap / "cables.csv").write_text(
        "side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name\n"
        "gpu1,dcim.interface,mlx5_0,leaf1,dcim.interface,swp1\n"
    )
    # One file with the NCCL setup and PyTorch 1.13's untimed watchdog lines, one with stamps.
    (cap / "logs" / "7" / "a.log").write_bytes(
        b"\n".join(real_lines(NCCL_INFO) + real_lines(UNTIMED_WATCHDOG)) + b"\n"
    )
    (cap / "logs" / "7" / "b.log").write_bytes(b"\n".join(real_lines(STAMPED)) + b"\n")
    sink = _Recorded()
    report = replay(open_capture(cap), sink)  # type: ignore[arg-type]
    assert sink.facts and all(f.ts_ns > 0 for f in sink.facts)
    # a.log's events before any stamp: its two NCCL errors and the two untimed timeouts.
    untimed = sorted(d.line_no for d in sink.dead if d.extra.get("rule") == "untimed")
    assert report.dead_letters["untimed"] == len(untimed) == 4
    n = len(real_lines(NCCL_INFO))
    assert untimed[2:] == [n + 1, n + 2]
    setup = [f for f in sink.facts if isinstance(f, SETUP)]
    assert setup and {f.origin.dated_by for f in setup} == {"logs/7/b.log line 1"}


def test_a_watchdog_line_without_time_after_a_stamped_one_is_kept() -> None:
    """`llamafactory_6953`: PyTorch 2.3's `[E ProcessGroupNCCL.cpp:1316]` lines carry no
    time; in a file with an earlier stamp they are dated by it, and the heartbeat abort is
    kept."""
    lines = [real_lines(STAMPED)[0], *real_lines("llamafactory_6953_heartbeat_monitor_pt23.log")]
    facts, _ = parse_lines(lines, job_id=JOB, source="rank.log", year_hint=2024)
    (abort,) = [s for s in of_type(facts, WatchdogState) if s.kind == "heartbeat"]
    assert (abort.ts_ns > 0, abort.origin.dated_by) == (True, "line 1")
