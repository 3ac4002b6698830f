"""The public excerpts added for issue 17, each pinned to the facts the parser rightly gives.

One table row per excerpt: every fact it yields, in order, reduced to the fields that say what
happened (`summary`). Excerpts where the parser today misses or misreads something the lines
plainly say are not pinned, so that no test here holds a gap in place; and some are read on
purpose as nothing:

- `nccl_952_redacted_host_socket_channels.txt`, `nccl_2094_rank_tag_without_host_init_complete.txt`:
  the host is hidden (`<cluster_name>`) or replaced by a launcher's `[3] ` tag, so the lines can
  be placed nowhere: counted dead letters, not facts on a guessed host.
- not pinned: three excerpts whose only content may deserve a fact (`nccl_tests_244`'s rank
  table, `ogkm_1230`'s GSP timeout, `pytorch_128680`'s store connection reset).
"""

from __future__ import annotations

from typing import Any

import pytest
from logs_support import parse_real, utc_ns

from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    InitComplete,
    JobFact,
    NetDevices,
    NetError,
    NicEvent,
    Progress,
    RankInfo,
    RasReport,
    WatchdogState,
    XidEvent,
)


def summary(fact: JobFact) -> tuple[Any, ...]:
    """The line and the fields of a fact that say what happened where (not job, source, time)."""
    line = fact.origin.line_no
    if isinstance(fact, NetDevices):
        devices = tuple(f"{d.index}:{d.name}:{d.port}/{d.link_layer}" for d in fact.devices)
        return (line, "devices", fact.host, fact.pid, devices)
    if isinstance(fact, RankInfo | InitComplete):
        kind = "rank" if isinstance(fact, RankInfo) else "init-complete"
        return (line, kind, fact.host, fact.pid, fact.comm_id, fact.rank, fact.nranks)
    if isinstance(fact, ChannelEdge):
        hop = (fact.channel, fact.src_rank, fact.dst_rank, fact.direction, fact.transport)
        return (line, "channel", fact.host, fact.pid, *hop, fact.net_dev)
    if isinstance(fact, NetError):
        return (line, "net-error", fact.host, fact.pid, fact.kind, fact.peer)
    if isinstance(fact, CollectiveTimeout):
        work = (fact.rank, fact.seq, fact.op, fact.timeout_ms, fact.ran_for_ms)
        return (line, "timeout", fact.host, *work)
    if isinstance(fact, XidEvent):
        return (line, "xid", fact.host, fact.pci, fact.xid)
    if isinstance(fact, NicEvent):
        return (line, "nic", fact.host, fact.pci, fact.netdev, fact.state)
    if isinstance(fact, RasReport):
        return (line, "ras", fact.host, fact.detail)
    if isinstance(fact, Progress):
        pace = (fact.step, fact.step_ms, fact.tokens_per_s, fact.total_steps)
        return (line, "progress", fact.host, *pace)
    if isinstance(fact, WatchdogState):
        work = (fact.seq, fact.last_enqueued, fact.last_completed, fact.stuck_s)
        return (line, fact.kind, fact.pg, fact.rank, *work)
    raise AssertionError(f"no summary for {type(fact).__name__}")


T = "timeout"
P2P = "P2P/IPC/read"
RAS_MISMATCH = "#0-0 (27a079b828ff1a75) MISMATCH: Rank {} -- GPU {} managed by process {} on node "
FINALIZE = "#0-0 (9e17999afaa87dbb) MISMATCH: Rank {} -- GPU {} managed by process {} on node {}"
SUMMARY = (
    "RAS summary group #{}: {} communicator(s) of {} ranks on {} node(s) ({} per node): "
    "status {}, errors {}"
)
#: The process the RAS page stops, first missing, then declared dead.
STOPPED = "Process 3487984 on node 172.16.64.213 managing GPU 5"
BONDS = tuple(f"{i}:mlx5_bond_{i}:1/RoCE" for i in range(9))

EXACT: dict[str, list[tuple[Any, ...]]] = {
    # -- NCCL INFO: devices, communicators, channels (2.7 to 2.27) --
    "nccl_743_channels_no_conn_index.log": [
        (n, "channel", "task272117-mq5ss", pid, c, s, d, "", P2P, None)
        for n, pid, c, s, d in [
            (1, 1902, 0, 3, 2),
            (2, 1901, 1, 2, 1),
            (3, 1902, 2, 3, 2),
            (4, 1901, 2, 2, 1),
            (5, 1901, 3, 2, 1),
            (6, 1900, 1, 1, 0),
            (8, 1900, 3, 1, 0),
            (10, 1899, 0, 0, 1),
        ]
    ],
    "megatron_516_channels_busid_container_host.log": [
        (n, "channel", "09677202c889", pid, c, s, d, "", P2P, None)
        for n, pid, c, s, d in [
            (1, 5278, 12, 3, 2),
            (2, 5280, 12, 5, 4),
            (3, 5279, 14, 4, 3),
            (4, 5276, 11, 1, 0),
            (5, 5277, 11, 2, 1),
            (6, 5281, 14, 6, 5),
        ]
    ],
    "tinygrad_okm_22_p2p_direct_pointer.log": [
        (n, "channel", "myles-MC62-G40-00", 6742, c, s, d, "", "P2P/direct pointer", None)
        for n, c, s, d in [(2, 0, 3, 2), (6, 1, 3, 2), (7, 0, 2, 1), (8, 0, 1, 0)]
    ],
    "easydistill_4_python_logging_prefix_split.log": [
        (n, "channel", "g340-cd51-4900-b72a-d104-a9bf-df48", pid, c, s, 0, "", "P2P/IPC", None)
        for n, pid, c, s in [(1, 4450, 31, 5), (3, 4447, 27, 2), (4, 4447, 28, 2), (6, 4452, 26, 7)]
    ],
    "nccl_tests_360_v2251_cumem_proxy_connections.log": [
        (2, "channel", "node-0", 5124, 14, 7, 6, "", "P2P/CUMEM", None),
        (5, "channel", "node-0", 5124, 15, 7, 6, "", "P2P/CUMEM", None),
    ],
    "pytorch_68893_v278_ray_reset_prefix_socket.log": [
        (10, "channel", "ip-172-31-0-137", 14605, 0, 1, 0, "receive", "NET/Socket/0", 0),
    ],
    "nccl_997_nine_roce_bonds_short_host.log": [
        (1, "devices", "64", 215, BONDS),
        (3, "devices", "64", 216, BONDS),
    ],
    "nccl_834_v2103_ib_init_pt111.log": [
        (4, "devices", "SH-IDC1-10-142-5-42", 40544, ("0:mlx5_0:1/IB",)),
    ],
    "nccl_tests_291_v2251_socket_init_ras_listen.log": [
        (12, "rank", "node", 12225, "0x1c3170e2c1182784", 0, 1),
    ],
    # Ring orders, Trees, proxy threads, plugin lines and a result table are no facts.
    "nccl_1538_v2223_k8s_worker_ring_order.log": [],
    "nccl_1713_v227_mpirun_proxy_service.log": [],
    "nccl_tests_78_v284_perf_table.log": [],
    # -- NCCL WARN: transport failures --
    "nccl_1905_shipper_stamp_qp_fatal_hca.log": [
        (2, "net-error", "h100-28", 238, "ib-async-event", None),
        (3, "net-error", "h100-28", 238, "ib-completion", "172.16.12.34"),
    ],
    "nccl_1919_v2251_async_fatal_qp.log": [
        (1, "net-error", "node-0", 139577, "ib-async-event", None),
    ],
    "nccl_975_bootstrap_ipv6_zone_connect_abort.log": [
        (8, "net-error", "n122-246-085", 12251, "socket", "fe80::966d:ae03:a2:8cf0"),
    ],
    # -- PyTorch: watchdog timeouts, 1.12 and 2.1 to 2.8+ --
    # PyTorch 1.12's Python exception carries the watchdog's words after `Original reason`.
    "nccl_1438_pt112_communicator_aborted_watchdog.log": [
        (2, T, None, 0, 35582, "ALLREDUCE", 1800000, 1800366),
    ],
    "pytorch_118369_pt21_broadcast_after_cpu_adam.log": [
        (n, T, None, rank, 880, "BROADCAST", 1800000, ran)
        for n, rank, ran in [(3, 2, 1800648), (4, 4, 1800798), (5, 6, 1800799), (6, 3, 1800782)]
    ],
    "vllm_2734_ray_pt21_vllm_info_stamp.log": [
        (3, T, None, 4, 20518, "ALLREDUCE", 1800000, 1800270),
    ],
    "vllm_6042_ray_color_prefix_gather.log": [
        (1, T, None, 1, 158046, "GATHER", 600000, 600027),
        (2, "failure", "1", 1, 158046, 158046, 158045, None),
        (4, "teardown", "", 1, None, None, None, None),
    ],
    "vllm_6042_pipe_prefix_pt23_untimed.log": [
        (3, T, None, 0, 2, "ALLREDUCE", 600000, 600059),
        (4, "failure", "2", 0, 2, 2, 1, None),
        (6, "teardown", "", 0, None, None, None, None),
    ],
    "vllm_5360_pt23_what_pg0_rethrow.log": [(2, T, None, 0, 1, "ALLREDUCE", 600000, 600091)],
    "vllm_8978_init_complete_then_pt24_default_pg.log": [
        (1, "rank", "cuda0003", 2949601, "0x795520212f433144", 0, 4),
        (1, "init-complete", "cuda0003", 2949601, "0x795520212f433144", 0, 4),
        (2, T, "cuda0003", 2, 1, "ALLREDUCE", 600000, 600009),
        (3, "failure", "0(default_pg)", 2, 1, 1, -1, None),
        (4, T, "cuda0003", 0, 1, "ALLREDUCE", 600000, 600012),
        (5, "failure", "0(default_pg)", 0, 1, 1, -1, None),
        (6, T, "cuda0003", 1, 1, "ALLREDUCE", 600000, 600019),
    ],
    "diffsynth_458_pg_guid_9_coalesced.log": [
        (1, T, None, 4, 610, "COALESCED", 600000, 600086),
        # `Exception ... detected by watchdog at work: 610` and `Timeout at NCCL work: 610`
        (2, "failure", "9", 4, 610, 616, 609, None),
        (5, "teardown", "", 4, None, None, None, None),
        (6, T, None, 6, 610, "COALESCED", 600000, 600087),
    ],
    "openrlhf_1126_dump_signal_from_rank6.log": [
        (1, "dump", "0(default_pg)", 2, None, 460631, 460630, None),
        (3, T, None, 7, 460631, "ALLREDUCE", 600000, 600020),
        (4, "failure", "0(default_pg)", 7, 460631, 460631, 460630, None),
    ],
    # Rank 3 completed one work less than rank 0 of the same process group: it was behind.
    "vllm_23448_two_ranks_pg_guid_first_to_dump.log": [
        (1, T, None, 0, 5730, "BROADCAST", 600000, 600009),
        (2, "failure", "67", 0, 5730, 6464, 5729, None),
        (5, T, None, 3, 5729, "BROADCAST", 600000, 600008),
        (6, "failure", "67", 3, 5729, 6464, 5728, None),
    ],
    "llamafactory_6953_heartbeat_monitor_pt23.log": [
        (3, "heartbeat", "0", 144, None, None, None, 600),
    ],
    "vllm_omni_2928_watchdog_runloop_rethrow.log": [
        (1, T, None, 1, 5524, "ALLREDUCE", 600000, 600066),
    ],
    # -- PyTorch: NCCL error codes rethrown --
    "hkproj_1_system_error_last_error_no_route.log": [
        (1, "net-error", "", 0, "system-error", None),
        (4, "net-error", "", 0, "socket", "192.168.19.14"),
    ],
    "awsome_distributed_192_srun_label_one_line_system_error.log": [
        (1, "net-error", "", 0, "system-error", "127.0.0.1"),
    ],
    "nccl_875_pt113_runtime_error_v2103.log": [(4, "net-error", "", 0, "system-error", None)],
    # -- NCCL RAS --
    "nccl_docs_ras_mismatch_op_counts.log": [
        (6, "ras", None, SUMMARY.format(0, 1, 32, 4, 8, "RUNNING", "MISMATCH")),
        *(
            (15 + i, "ras", "172.16.64.210", RAS_MISMATCH.format(r, r, pid) + "172.16.64.210")
            for i, (r, pid) in enumerate(
                [(0, 483072), (2, 483074), (3, 483075), (4, 483076), (5, 483077), (7, 483079)]
            )
        ),
    ],
    "nccl_docs_ras_finalize_status_mismatch.log": [
        (3, "ras", None, SUMMARY.format(0, 1, 32, 4, "1-2", "FINALIZE", "MISMATCH")),
        (4, "ras", None, SUMMARY.format(1, 7, 4, 4, 1, "RUNNING", "OK")),
        (5, "ras", None, SUMMARY.format(2, 1, 4, 4, 1, "INIT", "OK")),
        *(
            (n, "ras", node, FINALIZE.format(rank, gpu, pid, node))
            for n, rank, gpu, pid, node in [
                (13, 0, 0, 507285, "172.16.64.210"),
                (14, 8, 0, 1598388, "172.16.64.212"),
                (15, 16, 0, 3500071, "172.16.64.213"),
                (16, 24, 0, 2405067, "172.16.64.222"),
                (18, 4, 4, 507289, "172.16.64.210"),
                (19, 20, 4, 3500075, "172.16.64.213"),
            ]
        ),
    ],
    "nccl_docs_ras_incomplete_missing_rank_timeout.log": [
        (6, "ras", None, SUMMARY.format(0, 1, 32, 4, "7-8", "RUNNING", "INCOMPLETE")),
        (13, "ras", "172.16.64.213", f"INCOMPLETE: {STOPPED}"),
        (17, "ras", None, "#0-0 (cf264af53edbe986) INCOMPLETE: The missing rank: 21"),
    ],
    # NCCL 2.29's monitor mode names the process the RAS network gave up on, on its own line.
    "nccl_docs_ras_dead_then_monitor_peer_dead.log": [
        (6, "ras", "172.16.64.213", f"DEAD: {STOPPED}"),
        (10, "ras", None, "#0-0 (cf264af53edbe986) INCOMPLETE: The missing rank: 21"),
        (
            14,
            "ras",
            "172.16.64.245",
            "PEER_DEAD: Process 1524345 on node 172.16.64.245 managing GPU 1",
        ),
    ],
    # -- kernel: Xid and mlx5 --
    "gpu_operator_1146_syslog_dmesg_stamp_xid48_64.log": [
        (4, "xid", "worker4", "0000:07:00", 48),
        (5, "xid", "worker4", "0000:07:00", 64),
    ],
    "gpud_1174_kmsg_nvlink_145_149_xid94.log": [
        (1, "xid", "", "0019:01:00", 149),
        (2, "xid", "", "0000:00:00", 149),
        (3, "xid", "", "0018:01:00", 145),
        (4, "xid", "", "0000:9b:00", 94),
    ],
    "gpud_500_scan_output_xid119_gsp.log": [(n, "xid", "", "0000:9b:00", 119) for n in (2, 3, 4)],
    # The driver's three lines of a GPU fallen off the bus, without an Xid: an Xid 79.
    "nvsentinel_155_fallen_off_bus_without_xid.log": [(3, "xid", "", "0000:b3:00", 79)],
    "gpud_1209_journalctl_k_mlx5_ib_port_states.log": [
        (2, "nic", "000-000-00000-1-gpu-1", "0000:ab:00.0", "mlx5_5", "init"),
        (5, "nic", "000-000-00000-1-gpu-1", "0000:ab:00.0", "mlx5_5", "up"),
    ],
    "cubecos_733_journal_mlx5_link_up_repeats.log": [
        (n, "nic", "cc1", "0000:01:00.1", "eth1", "up") for n in (1, 3, 5, 7)
    ],
    "arm_nas_16_dmesg_mlx5_probe_module_event.log": [],
    # A port going down as its driver is unloaded; the E-Switch teardown after it is no fact.
    "netdev_netkit_dmesg_mlx5_port_link_down.log": [
        (1, "nic", "", "0000:0a:00.0", "mlx5_0", "down"),
    ],
    # An NVLink discovery failure in journald's form: an NVRM line, but no Xid.
    "gpud_1271_journal_nvrm_nvlink_postrx_mask.log": [],
    # -- trainers' step reports --
    "torchtitan_2389_eight_ranks_same_step.log": [
        (1, "progress", None, 4, None, 10050.0, None),
        (2, "progress", None, 4, None, 10050.0, None),
        (3, "progress", None, 4, None, 10049.0, None),
        (4, "progress", None, 5, None, 10007.0, None),
    ],
    "megatron_756_stamped_iterations_tflops.log": [
        (1, "progress", None, 71, 5361.6, None, 100),
        (2, "progress", None, 72, 5470.7, None, 100),
        (3, "progress", None, 73, 5829.9, None, 100),
    ],
    "megatron_llm_11_unstamped_iterations.log": [
        (1, "progress", None, 122, 86545.2, None, 250000),
        (2, "progress", None, 123, 87871.6, None, 250000),
        (3, "progress", None, 124, 89474.8, None, 250000),
    ],
    "nanogpt_110_iter_loss_time.log": [
        (3, "progress", None, 1631, 561.94, None, None),
        (4, "progress", None, 1632, 563.15, None, None),
        (5, "progress", None, 1633, 562.11, None, None),
    ],
    "lit_llama_380_port_error.log": [
        (1, "progress", None, 83594, 6235.95, 1771.0, None),
        (2, "net-error", "...-48", 34050, "ib-async-event", None),
        (4, "net-error", "...-48", 34052, "ib-async-event", None),
    ],
    # nanochat counts from 0: the last of its 21400 steps is 21399.
    "nanochat_147_step_dt_tok_per_sec.log": [
        (1, "progress", None, 4, 989.44, 529882.0, 21399),
        (2, "progress", None, 5, 991.09, 529000.0, 21399),
        (3, "progress", None, 6, 992.91, 528029.0, 21399),
    ],
    "llamafactory_8261_line_numbered_hf_bars.log": [
        (1, "progress", None, 10, 2830.0, None, 1752),
        (2, "progress", None, 11, 2820.0, None, 1752),
        (3, "progress", None, 12, 2790.0, None, 1752),
        (5, "progress", None, 20, 2860.0, None, 1752),
    ],
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_real_excerpt_yields_exactly_its_facts(name: str) -> None:
    facts, stats = parse_real(name)
    assert [summary(f) for f in facts] == EXACT[name]
    assert stats.malformed == 0


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("nccl_952_redacted_host_socket_channels.txt", [1, 2, 3, 4, 5]),
        # A launcher's `[3] ` tag where NCCL's host:pid:tid belongs: the ranks' Init COMPLETE
        # lines name no host; the `Init timings` lines say nothing railtrace reads.
        ("nccl_2094_rank_tag_without_host_init_complete.txt", [1, 3]),
    ],
)
def test_hostless_nccl_info_lines_are_dead_letters_not_facts_on_a_guessed_host(
    name: str, lines: list[int]
) -> None:
    facts, stats = parse_real(name)
    assert facts == []
    assert [(d.line_no, d.reason) for d in stats.dead_letters] == [
        (n, "NCCL INFO line without a readable host:pid:tid prefix") for n in lines
    ]


@pytest.mark.parametrize(
    ("name", "year", "index", "ts"),
    [
        # A Python logger's stamp in front of the NCCL prefix (no zone: the site's, UTC here).
        ("easydistill_4_python_logging_prefix_split.log", 2024, 0,
         utc_ns(2025, 11, 12, 20, 42, 20, 261_000_000)),
        # A shipper's stamp with an offset wins over NCCL's own (second-resolution) stamp.
        ("nccl_1905_shipper_stamp_qp_fatal_hca.log", 2024, 0,
         utc_ns(2025, 11, 9, 7, 39, 31, 43_000_000)),
        # c10's month-day stamp takes the year from the hint.
        ("vllm_23448_two_ranks_pg_guid_first_to_dump.log", 2025, 2,
         utc_ns(2025, 8, 22, 16, 31, 16, 135_435_629)),
        ("vllm_8978_init_complete_then_pt24_default_pg.log", 2024, 2,
         utc_ns(2024, 10, 1, 16, 6, 4, 537_131_842)),
        ("diffsynth_458_pg_guid_9_coalesced.log", 2025, 0,
         utc_ns(2025, 3, 18, 7, 39, 53, 792_630_246)),
        ("openrlhf_1126_dump_signal_from_rank6.log", 2025, 1,
         utc_ns(2025, 9, 1, 5, 20, 3, 123_992_144)),
        # Classic syslog: the syslog stamp, not the kernel's seconds since boot inside it.
        ("gpu_operator_1146_syslog_dmesg_stamp_xid48_64.log", 2024, 0,
         utc_ns(2024, 12, 2, 11, 38, 47)),
        ("cubecos_733_journal_mlx5_link_up_repeats.log", 2026, 3,
         utc_ns(2026, 3, 27, 15, 38, 19)),
        ("torchtitan_2389_eight_ranks_same_step.log", 2024, 3,
         utc_ns(2026, 2, 24, 19, 46, 19, 145_000_000)),
        ("megatron_756_stamped_iterations_tflops.log", 2024, 2, utc_ns(2024, 4, 6, 3, 2, 24)),
        # An untimed watchdog line takes the time of vLLM's month-day stamp before it.
        ("vllm_2734_ray_pt21_vllm_info_stamp.log", 2024, 0, utc_ns(2024, 2, 3, 13, 18, 39)),
        ("vllm_6042_pipe_prefix_pt23_untimed.log", 2024, 0, utc_ns(2024, 7, 1, 13, 54, 43)),
    ],
)  # fmt: skip
def test_real_excerpt_fact_time(name: str, year: int, index: int, ts: int) -> None:
    facts, _ = parse_real(name, year_hint=year)
    assert facts[index].ts_ns == ts


def test_timeout_start_is_its_line_time_minus_ran_for_on_pytorch_2_4() -> None:
    facts, _ = parse_real("vllm_8978_init_complete_then_pt24_default_pg.log")
    first = facts[2]
    assert isinstance(first, CollectiveTimeout)
    assert first.started_ns == first.ts_ns - 600_009 * 1_000_000


def test_untimed_excerpts_give_time_zero_not_a_guess() -> None:
    for name in ("gpud_1174_kmsg_nvlink_145_149_xid94.log", "vllm_5360_pt23_what_pg0_rethrow.log"):
        facts, _ = parse_real(name)
        assert {f.ts_ns for f in facts} == {0}, name
