"""Times read from the lines themselves: every stamp style, year inference, untimed lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from logs_support import of_type, parse_text, real_lines, utc_ns

from railtrace.streams.logs import parse_lines
from railtrace.streams.logs.timestamps import Clock
from railtrace.streams.records import CollectiveTimeout, NetError, XidEvent


def _line(name: str, index: int) -> str:
    return real_lines(name)[index].decode()


# (what it shows, line, year_hint, expected ns). Lines from fixtures are real; the others are
# synthetic (SYNTHETIC in the id) where no public example of the stamp style was found.
STAMPS = [
    (
        "shipper ISO-8601 Z with 9-digit fraction wins over NCCL's local stamp",
        _line("nccl_1920_shipper_iso_and_nccl_timestamp.log", 0),
        None,
        utc_ns(2025, 11, 24, 3, 20, 21, 1_125_857),
    ),
    (
        "bracketed date-time with milliseconds (Ray prefix)",
        _line("nccl_2039_ray_prefix_nccl_timestamp.log", 0),
        None,
        utc_ns(2026, 4, 14, 21, 28, 19, 85_000_000),
    ),
    (
        "c10 prefix after torchrun [rankN]: takes year_hint, ns fraction",
        _line("llamafactory_6269_watchdog_pt24.log", 0),
        2024,
        utc_ns(2024, 12, 6, 18, 44, 12, 715_298_746),
    ),
    (
        "c10 prefix with one-digit month (E321 is March 21) behind a line counter",
        _line("llamafactory_7396_line_numbered_watchdog.log", 0),
        2024,
        utc_ns(2024, 3, 21, 2, 7, 8, 408_271_257),
    ),
    (
        "vLLM logger's month-day stamp takes year_hint",
        _line("vllm_2734_ray_pt21_vllm_info_stamp.log", 0),
        2024,
        utc_ns(2024, 2, 3, 13, 14, 4),
    ),
    (
        "vLLM logger's stamp at ERROR behind a log viewer's gutter",
        _line("vllm_6042_pipe_prefix_pt23_untimed.log", 0),
        2024,
        utc_ns(2024, 7, 1, 13, 54, 43),
    ),
    (
        "SYNTHETIC: vLLM's later [file:line] behind its worker process tag",
        "(VllmWorker rank=0 pid=2417) WARNING 05-18 16:04:46 [core.py:88] x",
        2026,
        utc_ns(2026, 5, 18, 16, 4, 46),
    ),
    (
        "c10 prefix without its bracket (W703)",
        _line("nccl_1762_ras_incomplete.log", 0),
        2025,
        utc_ns(2025, 7, 3, 0, 59, 30, 440_443_364),
    ),
    (
        "dmesg -T with a space-padded day",
        _line("akash_244_dmesg_T_xid.log", 7),
        None,
        utc_ns(2024, 8, 9, 13, 32, 56),
    ),
    (
        "dmesg --decode --time-format iso with comma fraction and +00:00",
        _line("gpud_870_dmesg_decode_iso.log", 1),
        None,
        utc_ns(2025, 5, 27, 4, 18, 56, 89_671_000),
    ),
    (
        "mpirun --timestamp-output ctime glued to [1,0]<stdout>:",
        _line("nccl_957_mpirun_ctime_prefix.log", 0),
        None,
        utc_ns(2023, 8, 11, 12, 31, 45),
    ),
    (
        "ISO-8601 Z followed by a colon and mpirun tag",
        _line("nccl_230_iso_mpirun_async_event.log", 0),
        None,
        utc_ns(2019, 6, 2, 16, 13, 44, 884_000_000),
    ),
    (
        "SYNTHETIC: NCCL default [%F %T] stamp on a WARN line",
        "[2026-05-05 06:16:47] host1:1234:1240 [0] transport/net_ib.cc:2453 NCCL WARN x",
        None,
        utc_ns(2026, 5, 5, 6, 16, 47),
    ),
    (
        "SYNTHETIC: NCCL stamp with %3f fraction behind an mpirun tag",
        "[1,0]<stdout>:[2026-05-05 06:16:47.250] host1:1234:1240 [0] NCCL INFO x",
        None,
        utc_ns(2026, 5, 5, 6, 16, 47, 250_000_000),
    ),
    (
        "SYNTHETIC: journalctl -o short-iso with +0000",
        "2026-12-06T18:44:12+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, x",
        None,
        utc_ns(2026, 12, 6, 18, 44, 12),
    ),
    (
        "SYNTHETIC: RFC 3339 with +03:00 offset is converted to UTC",
        "2026-06-01T15:55:06.218036+03:00 gpu7 kernel: NVRM: x",
        None,
        utc_ns(2026, 6, 1, 12, 55, 6, 218_036_000),
    ),
    (
        "SYNTHETIC: negative offset -0500 is added to reach UTC",
        "2026-01-31T22:30:00-0500 gpu7 kernel: NVRM: x",
        None,
        utc_ns(2026, 2, 1, 3, 30, 0),
    ),
    (
        "SYNTHETIC: classic syslog takes year_hint",
        "Dec  6 18:44:12 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, x",
        2026,
        utc_ns(2026, 12, 6, 18, 44, 12),
    ),
]


@pytest.mark.parametrize(("what", "line", "hint", "expected"), STAMPS, ids=[s[0] for s in STAMPS])
def test_stamp_styles_give_utc_nanoseconds(
    what: str, line: str, hint: int | None, expected: int
) -> None:
    ts, _ = Clock(hint).stamp(line)
    assert ts == expected, what


@pytest.mark.parametrize(
    "line",
    [
        _line("bumblebee_677_dmesg_monotonic.log", 0),  # seconds since boot
        _line("ofa_271_pt113_untimed.log", 0),  # PyTorch 1.13: "[E ProcessGroupNCCL.cpp:737]"
        "[2026-13-45 06:16:47] host1:1:1 [0] NCCL INFO impossible date",
        "iter 83594: loss 1.9491, time: 6235.95ms",
    ],
)
def test_lines_without_wall_time_have_no_stamp(line: str) -> None:
    assert Clock(2024).stamp(line)[0] is None


def test_yearless_stamp_takes_year_of_last_full_dated_line_over_hint() -> None:
    clock = Clock(2024)
    clock.stamp("[2023-12-31 23:59:50] host1:1:1 [0] NCCL INFO Using network IB")
    ts, _ = clock.stamp("[rank0]:[E1231 23:59:59.500000000 ProcessGroupNCCL.cpp:1] x")
    assert ts == utc_ns(2023, 12, 31, 23, 59, 59, 500_000_000)


def test_yearless_stamp_crossing_new_year_moves_to_next_year() -> None:
    clock = Clock(None)
    clock.stamp("[2023-12-31 23:59:50] host1:1:1 [0] NCCL INFO Using network IB")
    ts, _ = clock.stamp("[rank0]:[E101 00:00:05.000000000 ProcessGroupNCCL.cpp:1] x")
    assert ts == utc_ns(2024, 1, 1, 0, 0, 5)


def test_yearless_stamp_without_hint_uses_current_utc_year() -> None:
    ts, _ = Clock(None).stamp(_line("llamafactory_6269_watchdog_pt24.log", 0))
    year = datetime.now(UTC).year
    assert ts == utc_ns(year, 12, 6, 18, 44, 12, 715_298_746)


def test_untimed_line_takes_time_of_last_timed_line() -> None:
    lines = [
        _line("nccl_1920_shipper_iso_and_nccl_timestamp.log", 1),
        _line("nccl_tests_185_roce_socket_reset.log", 4),  # an untimed NCCL WARN
    ]
    facts, _ = parse_lines(lines, job_id="j", source="s")
    (err,) = of_type(facts, NetError)
    assert err.ts_ns == utc_ns(2025, 11, 24, 3, 20, 21, 1_128_133)
    assert err.peer == "11.1.128.128"


def test_facts_before_any_timed_line_are_emitted_with_time_zero() -> None:
    facts, _ = parse_text(_line("ofa_271_pt113_untimed.log", 0))
    (timeout,) = of_type(facts, CollectiveTimeout)
    assert (timeout.ts_ns, timeout.started_ns) == (0, 0)


def test_monotonic_dmesg_xid_takes_time_of_previous_dmesg_ctime_line() -> None:
    lines = [_line("akash_244_dmesg_T_xid.log", 5), _line("bumblebee_677_dmesg_monotonic.log", 0)]
    facts, _ = parse_lines(lines, job_id="j", source="s")
    (xid,) = of_type(facts, XidEvent)
    assert xid.ts_ns == utc_ns(2024, 8, 5, 3, 54, 13)
    assert (xid.pci, xid.xid) == ("0000:01:00", 32)


@pytest.mark.parametrize(
    "line",
    [
        "2107-03-01T00:00:00Z some line",  # past 2106: the store would file it in 1971
        "9999-12-31T23:59:59.999999999-23:59 some line",  # past int64 nanoseconds
        "1969-12-31T23:59:59Z some line",
        "[Mon Mar  1 00:00:00 2200] some line",
    ],
)
def test_a_stamp_outside_the_times_railtrace_holds_is_no_stamp(line: str) -> None:
    assert Clock(2026).stamp(line)[0] is None
