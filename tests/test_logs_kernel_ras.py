"""Kernel `NVRM: Xid` lines -> XidEvent, and NCCL RAS reports -> RasReport."""

from __future__ import annotations

import pytest
from logs_support import JOB, of_type, parse_real, parse_text, real_lines, utc_ns

from railtrace.streams.logs import parse_lines
from railtrace.streams.records import JobFact, LogOrigin, NicEvent, RasReport, XidEvent


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


def sections(facts: list[JobFact]) -> list[RasReport]:
    """The RAS reports of a report's sections (not its summary table's rows)."""
    return [r for r in of_type(facts, RasReport) if r.section != "summary"]


def test_ras_incomplete_sections_report_missing_process_and_rank_with_node() -> None:
    facts, _ = parse_real("nccl_1762_ras_incomplete.log", year_hint=2025)
    assert [(r.host, r.detail) for r in sections(facts)] == [
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
    reports = sections(facts)
    assert [r.detail.split(": ", 1)[1] for r in reports] == [
        "Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124",
        "Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124",
    ]
    assert {r.detail.split(": ", 1)[0] for r in reports} == {"#0-0 (fa93daea854b060b) MISMATCH"}


def test_healthy_ras_report_gives_one_summary_row_and_no_trouble() -> None:
    facts, _ = parse_real("nccl_1730_ras_ok_then_watchdog.log")
    (row,) = of_type(facts, RasReport)
    assert (row.section, row.comm, row.status, row.errors) == ("summary", "#0", "RUNNING", "OK")
    assert not row.trouble


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


# --- Xid details and the GPU lost without an Xid ------------------------------------------------


def test_fallen_off_the_bus_without_an_xid_over_three_lines_is_an_xid_79() -> None:
    """NVIDIA/NVSentinel#155: the driver's message spans three dmesg lines, the GPU named on the
    first and the loss on the last; no `Xid` appears anywhere."""
    lines = [
        real_lines("akash_244_dmesg_T_xid.log")[0],
        *real_lines("nvsentinel_155_fallen_off_bus_without_xid.log"),
    ]
    facts, stats = parse_lines(lines, job_id=JOB, source="dmesg.log")
    (lost,) = of_type(facts, XidEvent)
    assert (lost.xid, lost.pci, lost.origin.line_no) == (79, "0000:b3:00", 4)
    assert "fallen off the bus" in lost.detail
    # The continuation lines carry no time: the fact takes the `dmesg -T` line's and says so.
    assert lost.ts_ns == utc_ns(2024, 7, 28, 9, 15, 27)
    assert lost.origin.dated_by == "line 1"
    assert stats.malformed == 0


def test_a_fallen_off_message_interleaved_with_other_writers_lines_is_still_one_loss() -> None:
    """A journal or a shared file puts other lines between the driver's; only the driver's
    own lines count toward the message's end (the fuzz run found the loss dropped)."""
    first, *rest = real_lines("nvsentinel_155_fallen_off_bus_without_xid.log")
    other = b"host-2:38610:38610 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0\n"
    lines = [real_lines("akash_244_dmesg_T_xid.log")[0], first]
    for line in rest:
        lines += [other, other, line]
    facts, _ = parse_lines(lines, job_id=JOB, source="dmesg.log")
    (lost,) = of_type(facts, XidEvent)
    assert (lost.xid, lost.pci) == (79, "0000:b3:00")


def test_an_xid_79_and_the_drivers_own_fallen_off_line_are_one_loss() -> None:
    """NVIDIA/open-gpu-kernel-modules#1151: `Xid ... 79, GPU has fallen off the bus.` and then
    `GPU 0000:2b:00.0: GPU has fallen off the bus.` in the same second: one GPU lost once."""
    facts, _ = parse_real("ogkm_1151_xid79_then_fallen_line.log")
    (lost,) = of_type(facts, XidEvent)
    assert (lost.xid, lost.pci, lost.origin.line_no) == (79, "0000:2b:00", 2)


def test_xid_keeps_the_process_it_names_and_unknown_is_none() -> None:
    facts, _ = parse_real("akash_244_dmesg_T_xid.log")
    xids = of_type(facts, XidEvent)
    assert [(x.pid, x.process) for x in xids] == [
        (1045242, "pt_main_thread"),
        (1084984, "pt_main_thread"),
        (2512125, "python3.10"),
        (None, ""),
    ]


def test_caused_by_previous_xid_is_kept() -> None:
    """NVIDIA/open-gpu-kernel-modules#1150: Xid 45 on four GPUs after NVLink Xids 149 and 145."""
    facts, _ = parse_real("ogkm_1150_kernel_prefix_xid.log")
    assert [(x.pci, x.xid, x.caused_by, x.pid) for x in of_type(facts, XidEvent)] == [
        ("0000:dc:00", 45, 149, 1818990),
        ("0000:ed:00", 45, 145, 1818992),
        ("0000:ba:00", 45, 145, 1818989),
        ("0000:97:00", 45, 145, 1818987),
    ]


def test_nvlink_xids_keep_their_severity_and_link() -> None:
    facts, _ = parse_real("gpud_1160_xid_nvlink_kmsg.log")
    assert [(x.xid, x.severity, x.link) for x in of_type(facts, XidEvent)] == [
        (144, "nonfatal", 0),
        (149, "fatal", 0),
    ]


def test_nvlink_xid_before_r575_keeps_severity_and_link_synthetic() -> None:
    # SYNTHETIC: the pre-R575 form `XC 1 i 2 Link 01 [...]` as NVIDIA's parsers quote it.
    facts, _ = parse_text(
        "NVRM: Xid (PCI:0000:00:1e): 149, NETIR_LINK_EVT Fatal XC 1 i 2 Link 01 [0x0000000a]"
    )
    (x,) = of_type(facts, XidEvent)
    assert (x.severity, x.link) == ("fatal", 1)


# --- mlx5 port state --------------------------------------------------------------------------


def test_mlx5_port_state_lines_give_the_rdma_device_its_port_and_state() -> None:
    """leptonai/gpud#1209: the RDMA core's `mlx5_5: Port: 1 Link INIT`, then `ACTIVE`."""
    facts, stats = parse_real("gpud_1209_journalctl_k_mlx5_ib_port_states.log", year_hint=2026)
    assert [(n.host, n.pci, n.netdev, n.port, n.state) for n in of_type(facts, NicEvent)] == [
        ("000-000-00000-1-gpu-1", "0000:ab:00.0", "mlx5_5", 1, "init"),
        ("000-000-00000-1-gpu-1", "0000:ab:00.0", "mlx5_5", 1, "up"),
    ]
    assert stats.malformed == 0


def test_mlx5_port_down_names_the_port_synthetic() -> None:
    # SYNTHETIC: the example the kernel's commit adding these lines quotes (IB/cache).
    facts, _ = parse_text("[  309.261822] mlx5_core 0000:0a:00.0 mlx5_0: Port: 1 Link DOWN")
    (n,) = of_type(facts, NicEvent)
    assert (n.netdev, n.port, n.state) == ("mlx5_0", 1, "down")


# --- RAS: the summary table and who is ahead or behind ----------------------------------------


def test_ras_summary_rows_give_each_groups_status_and_errors() -> None:
    facts, _ = parse_real("nccl_1762_ras_incomplete.log", year_hint=2025)
    rows = [r for r in of_type(facts, RasReport) if r.section == "summary"]
    assert [(r.comm, r.status, r.errors, r.trouble) for r in rows] == [
        ("#0", "RUNNING", "INCOMPLETE", True),
        ("#1", "RUNNING", "MISMATCH", False),
        ("#2", "NOCOMM", "INCOMPLETE,MISMATCH", True),
    ]


def test_ras_summary_rows_after_a_stray_blank_or_foreign_line_are_still_read() -> None:
    """A CRLF file read twice (`\\r\\r\\n`) adds blank lines, a shared file other writers'
    lines: the rows after them were lost until the table stayed open to its next section."""
    lines = real_lines("nccl_1762_ras_incomplete.log")
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith(b"Group"))
    stray = [b"\n", b"[4] NCCL INFO INIT TIMINGS - N\n", b"1e309\n"]
    mixed = [*lines[: head + 2], *stray, *lines[head + 2 :]]
    facts, _ = parse_lines(mixed, job_id=JOB, source="ras.log", year_hint=2025)
    rows = [r for r in of_type(facts, RasReport) if r.section == "summary"]
    assert [r.comm for r in rows] == ["#0", "#1", "#2"]


def test_ras_mismatch_ranks_listed_after_a_higher_count_are_ahead() -> None:
    """NVIDIA/nccl#1911: 30 ranks launched up to AllGather 640, the 2 listed (12, 13) to 641."""
    facts, _ = parse_real("nccl_1911_ras_mismatch.log")
    listed = sections(facts)
    assert [
        (r.rank, r.host, r.operation, r.op_count, r.peer_count, r.standing) for r in listed
    ] == [
        (12, "10.137.190.124", "AllGather", 641, 640, "ahead"),
        (13, "10.137.190.124", "AllGather", 641, 640, "ahead"),
    ]
    assert {(r.section, r.comm) for r in listed} == {("MISMATCH", "#0-0 (fa93daea854b060b)")}


def test_ras_mismatch_ranks_listed_after_a_lower_count_are_behind() -> None:
    """NCCL's RAS documentation: 26 ranks at operation 6650, the 6 listed at 6649 (NCCL before
    2.26 compares `collective` operation counts as a whole)."""
    facts, _ = parse_real("nccl_docs_ras_mismatch_op_counts.log")
    counts = [r for r in sections(facts) if r.op_count is not None]
    assert [r.rank for r in counts] == [0, 2, 3, 4, 5, 7]
    assert {(r.operation, r.op_count, r.peer_count, r.standing) for r in counts} == {
        ("collective", 6649, 6650, "behind")
    }


def test_ras_status_mismatch_gives_each_listed_ranks_status() -> None:
    facts, _ = parse_real("nccl_docs_ras_finalize_status_mismatch.log")
    statuses = [(r.rank, r.status) for r in sections(facts) if r.status]
    assert statuses == [
        (0, "RUNNING"),
        (8, "RUNNING"),
        (16, "RUNNING"),
        (24, "RUNNING"),
        (4, "FINALIZE"),
        (20, "FINALIZE"),
    ]
    rows = [r for r in of_type(facts, RasReport) if r.section == "summary"]
    assert [(r.comm, r.status, r.errors) for r in rows] == [
        ("#0", "FINALIZE", "MISMATCH"),
        ("#1", "RUNNING", "OK"),
        ("#2", "INIT", "OK"),
    ]


def test_ras_missing_rank_and_process_are_read_and_the_timeout_warning_is_not() -> None:
    facts, _ = parse_real("nccl_docs_ras_incomplete_missing_rank_timeout.log")
    assert [(r.section, r.rank, r.host, r.errors) for r in of_type(facts, RasReport)] == [
        ("summary", None, None, "INCOMPLETE"),
        ("INCOMPLETE", None, "172.16.64.213", ""),
        ("INCOMPLETE", 21, None, ""),
    ]


def test_ras_monitor_peer_dead_is_trouble_on_the_dead_peers_node_at_its_own_stamp() -> None:
    """NCCL 2.29's `ncclras -m` line, from the user guide: the dead process's node, the time
    the monitor printed, trouble like the report's own DEAD section."""
    facts, _ = parse_real("nccl_docs_ras_dead_then_monitor_peer_dead.log", year_hint=2025)
    event = of_type(facts, RasReport)[-1]
    assert (event.origin.line_no, event.section, event.host, event.rank) == (
        14,
        "PEER_DEAD",
        "172.16.64.245",
        None,
    )
    assert event.detail == "PEER_DEAD: Process 1524345 on node 172.16.64.245 managing GPU 1"
    assert event.ts_ns == utc_ns(2025, 12, 19, 13, 7, 7)
    assert event.trouble


def test_ras_monitor_peer_dead_known_only_by_address_and_peer_new_synthetic() -> None:
    # SYNTHETIC, in the format of src/ras/client_support.cc and peers.cc (2.29+): a peer RAS
    # had no process record of is named by its address; a peer joining is no event to read.
    facts, _ = parse_text(
        "[2025-12-19 13:05:00] PEER_NEW: Process 77 on node 10.0.0.4 managing GPU 0 \n"
        "[2025-12-19 13:07:07] PEER_DEAD: 10.0.0.5<41233> \n"
    )
    assert [(r.origin.line_no, r.host, r.section) for r in of_type(facts, RasReport)] == [
        (2, "10.0.0.5", "PEER_DEAD")
    ]


def test_ras_mismatch_goes_on_after_the_blank_line_that_ends_an_operations_block_synthetic() -> (
    None
):
    # SYNTHETIC, in the format of src/ras/client_support.cc (NCCL 2.26+): each operation's
    # block of a MISMATCH section ends with a blank line, the next block follows it.
    facts, _ = parse_text(
        "#0-0 (fa93daea854b060b) MISMATCH\n"
        "  Communicator ranks have different AllGather operation counts\n"
        "  30 ranks have launched up to operation 640\n"
        "  Rank 12 has launched up to operation 641 -- GPU 4 managed by process 3 on node n1\n"
        "\n"
        "  Communicator ranks have different AllReduce operation counts\n"
        "  31 ranks have launched up to operation 20\n"
        "  Rank 13 has not launched any operations -- GPU 5 managed by process 4 on node n1\n"
        "\n"
        "  Rank 14 -- GPU 6 managed by process 5 on node outside-any-section\n"
    )
    assert [(r.rank, r.operation, r.op_count, r.standing) for r in sections(facts)] == [
        (12, "AllGather", 641, "ahead"),
        (13, "AllReduce", 0, "behind"),
    ]
