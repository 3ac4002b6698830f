"""Kernel `NVRM: Xid` lines -> XidEvent, and NCCL RAS reports -> RasReport."""

from __future__ import annotations

import pytest
from logs_support import JOB, of_type, parse_real, parse_text, real_lines, utc_ns

from railtrace.streams.logs import parse_lines
from railtrace.streams.records import LogOrigin, RasReport, XidEvent


def test_dmesg_ctime_xid_lines_give_time_pci_code_and_detail() -> None:
    facts, stats = parse_real("akash_244_dmesg_T_xid.log")
    xids = of_type(facts, XidEvent)
    assert [(x.ts_ns, x.pci, x.xid) for x in xids] == [
        (utc_ns(2024, 7, 31, 23, 14, 18), "0000:00:05", 43),
        (utc_ns(2024, 7, 31, 23, 15, 26), "0000:00:05", 43),
        (utc_ns(2024, 8, 5, 3, 54, 13), "0000:00:07", 31),
        (utc_ns(2024, 8, 9, 13, 32, 56), "0000:00:08", 94),
    ]
    assert (
        xids[3].detail == "pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No"
    )
    assert xids[0].origin == LogOrigin("akash_244_dmesg_T_xid.log", 4)
    assert (stats.skipped, stats.malformed) == (4, 0)


@pytest.mark.parametrize(
    ("name", "index", "pci", "code", "detail_start"),
    [
        ("gpud_46_dmesg_ctime_unknown_pid.log", 1, "0000:cb:00", 13, "pid='<unknown>', name="),
        ("bumblebee_677_dmesg_monotonic.log", 1, "0000:01:00", 31, "Ch 00000003, engmask"),
        ("ogkm_1150_kernel_prefix_xid.log", 0, "0000:dc:00", 45, "pid=1818990, name=python3"),
        ("gpud_870_dmesg_decode_iso.log", 1, "0000:04:00", 79, "GPU has fallen off the bus"),
        ("gpud_1160_xid_nvlink_kmsg.log", 1, "0000:00:00", 149, "NETIR_LINK_EVT Fatal XC0"),
    ],
)
def test_xid_line_variants(name: str, index: int, pci: str, code: int, detail_start: str) -> None:
    facts, _ = parse_text(real_lines(name)[index].decode())
    (x,) = of_type(facts, XidEvent)
    assert (x.pci, x.xid) == (pci, code)
    assert x.detail.startswith(detail_start)


@pytest.mark.parametrize(
    ("line", "host", "ts"),
    [
        (  # SYNTHETIC: classic syslog (/var/log/kern.log)
            "Dec  6 18:44:12 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
            "GPU has fallen off the bus.",
            "gpu7",
            utc_ns(2026, 12, 6, 18, 44, 12),
        ),
        (  # SYNTHETIC: journalctl -o short-iso
            "2026-12-06T18:44:12+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, "
            "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            "gpu7",
            utc_ns(2026, 12, 6, 18, 44, 12),
        ),
        (  # SYNTHETIC: busybox syslog with facility and a dmesg stamp inside
            "Dec  6 18:44:12 gpu8 kern.warn kernel: [ 1843.308145] NVRM: Xid (PCI:0000:b3:00): 48, "
            "pid=77, name=python3, An uncorrectable double bit error",
            "gpu8",
            utc_ns(2026, 12, 6, 18, 44, 12),
        ),
    ],
)
def test_xid_host_comes_from_syslog_or_journal_prefix(line: str, host: str, ts: int) -> None:
    facts, _ = parse_text(line, year_hint=2026)
    (x,) = of_type(facts, XidEvent)
    assert (x.host, x.ts_ns) == (host, ts)


def test_xid_without_syslog_host_borrows_host_of_last_nccl_line() -> None:
    lines = [
        real_lines("rccl_419_net_ib_using_ib.log")[2],
        real_lines("ogkm_1150_kernel_prefix_xid.log")[0],
    ]
    facts, _ = parse_lines(lines, job_id=JOB, source="s")
    assert of_type(facts, XidEvent)[0].host == "e05r3n09"


def test_xid_without_any_host_has_empty_host() -> None:
    facts, _ = parse_real("ogkm_1150_kernel_prefix_xid.log")
    assert {x.host for x in of_type(facts, XidEvent)} == {""}


def test_unreadable_xid_line_is_a_dead_letter() -> None:
    facts, stats = parse_text("[ 12.5] NVRM: Xid (PCI:0000:01", year_hint=2026)
    assert facts == []
    assert stats.dead_letters[0].extra["rule"] == "kernel-xid"


# --- RAS ----------------------------------------------------------------------------------------


def test_ras_incomplete_sections_report_missing_process_and_rank_with_node() -> None:
    facts, _ = parse_real("nccl_1762_ras_incomplete.log", year_hint=2025)
    assert [(r.host, r.detail) for r in of_type(facts, RasReport)] == [
        ("10.4.109.13", "INCOMPLETE: Process 60004 on node 10.4.109.13 managing GPU 0"),
        (
            "10.4.109.13",
            "#0-0 (b3398875b8b2a063) INCOMPLETE: "
            "Rank 1 -- GPU 0 managed by process 60004 on node 10.4.109.13",
        ),
    ]
    # Untimed report lines take the time of the c10 line above them (W703 00:59:30.44...).
    assert of_type(facts, RasReport)[0].ts_ns == utc_ns(2025, 7, 3, 0, 59, 30, 440_443_364)


def test_ras_mismatch_section_reports_named_ranks() -> None:
    facts, _ = parse_real("nccl_1911_ras_mismatch.log")
    reports = of_type(facts, RasReport)
    assert [r.detail.split(": ", 1)[1] for r in reports] == [
        "Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124",
        "Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124",
    ]
    assert {r.detail.split(": ", 1)[0] for r in reports} == {"#0-0 (fa93daea854b060b) MISMATCH"}


def test_healthy_ras_report_gives_no_report() -> None:
    facts, _ = parse_real("nccl_1730_ras_ok_then_watchdog.log")
    assert of_type(facts, RasReport) == []


def test_ras_dead_section_and_unnamed_rank_synthetic() -> None:
    # SYNTHETIC: DEAD section and "[process information not found]" of src/ras/client_support.cc.
    facts, _ = parse_text(
        "DEAD\n"
        "  1 job process is considered dead (unreachable via the RAS network)\n"
        "  Process 4242 on node gpu12 managing GPU 3\n"
        "\n"
        "#0-0 (0123456789abcdef) INCOMPLETE\n"
        "  Missing communicator data from 1 rank\n"
        "  Rank 27 -- [process information not found]\n"
        "\n"
        "  Rank 28 -- GPU 1 managed by process 1 on node outside-any-section\n"
    )
    assert [(r.host, r.detail) for r in of_type(facts, RasReport)] == [
        ("gpu12", "DEAD: Process 4242 on node gpu12 managing GPU 3"),
        (None, "#0-0 (0123456789abcdef) INCOMPLETE: Rank 27 -- [process information not found]"),
    ]


def test_ras_peer_declared_dead_info_line_synthetic() -> None:
    # SYNTHETIC: INFO of src/ras/peers.cc, printed with NCCL_DEBUG_SUBSYS including RAS.
    facts, _ = parse_text(
        "gpu1:500:510 [0] NCCL INFO RAS declaring peer 10.1.2.3<28028> as DEAD; "
        "rasDeadPeersHash 0x1f2e"
    )
    (r,) = of_type(facts, RasReport)
    assert r.host == "10.1.2.3"


def test_a_failed_firmware_command_is_not_a_dead_nic_and_carrier_lost_is_a_link_down() -> None:
    from railtrace.streams.logs.parser import parse_lines
    from railtrace.streams.records import NicEvent

    lines = [
        "May  3 10:00:01 hgx-1 kernel: mlx5_core 0000:5e:00.0: mlx5_cmd_out_err:838:(pid 1): "
        "QUERY_VPORT_COUNTER(0x770) op_mod(0x0) failed, status internal error(0x1), "
        "syndrome (0x3)",
        "May  3 10:00:02 hgx-1 kernel: mlx5_core 0000:5e:00.0 ens1f0np0: Link down, carrier lost",
    ]
    facts, stats = parse_lines(lines, job_id="j", source="k", year_hint=2026)
    nics = [f for f in facts if isinstance(f, NicEvent)]
    assert [(n.state, n.netdev) for n in nics] == [("down", "ens1f0np0")]
    assert stats.malformed == 0
