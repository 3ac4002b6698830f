"""NCCL INFO lines: network devices, communicator ranks, init completion and channel edges."""

from __future__ import annotations

import pytest
from logs_support import JOB, of_type, parse_real, parse_text, real_lines

from railtrace.streams.logs import parse_lines
from railtrace.streams.records import (
    ChannelEdge,
    InitComplete,
    LogOrigin,
    NetDevice,
    NetDevices,
    RankInfo,
)

# --- NET/IB : Using ... -> NetDevices ------------------------------------------------------

DEVICES = [
    (
        "rccl_419_net_ib_using_ib.log",
        ("e05r3n09", 929, 3),
        (("mlx5_3", 0, "IB"), ("mlx5_2", 1, "IB"), ("mlx5_1", 2, "IB"), ("mlx5_0", 3, "IB")),
    ),
    (
        "nccl_tests_185_roce_socket_reset.log",
        ("dgxh100-4", 460770, 2),
        (("mlx5_10", 0, "RoCE"), ("mlx5_11", 1, "RoCE")),
    ),
    ("nccl_1038_roce_ro_init_start.log", ("host-2", 38610, 4), (("mlx5_0", 0, "RoCE"),)),
    (
        "nccl_1029_pdsh_prefix_sharp.log",
        ("rdma-gpu-train-worker-0", 19488, 2),
        (("mlx5_9", 0, "IB"),),
    ),
    (
        "nccl_tests_373_vdev_init_channels.log",
        ("bigo", 1884, 5),
        (
            ("mlx5_2", 0, "RoCE"),
            ("mlx5_3", 0, "RoCE"),
            ("mlx5_0", 1, "RoCE"),
            ("mlx5_1", 1, "RoCE"),
        ),
    ),
]


@pytest.mark.parametrize(("name", "where", "devices"), DEVICES, ids=[d[0] for d in DEVICES])
def test_net_ib_using_line_lists_devices_by_channel_index(
    name: str, where: tuple[str, int, int], devices: tuple[tuple[str, int, str], ...]
) -> None:
    facts, stats = parse_real(name)
    (found,) = of_type(facts, NetDevices)
    assert (found.host, found.pid, found.origin) == (where[0], where[1], LogOrigin(name, where[2]))
    assert found.devices == tuple(NetDevice(i, n, 1, link) for n, i, link in devices)
    assert stats.malformed == 0


def test_mpirun_tagged_using_lines_of_two_hosts_give_two_device_lists() -> None:
    facts, _ = parse_real("horovod_3751_mpirun_tag_roce_bond.log")
    found = of_type(facts, NetDevices)
    assert [(d.host, d.pid, d.devices) for d in found] == [
        ("j66d10267", 290, (NetDevice(0, "mlx5_bond_0", 1, "RoCE"),)),
        ("j63g01247", 65, (NetDevice(0, "mlx5_bond_0", 1, "RoCE"),)),
    ]


def test_using_line_without_device_entries_is_a_dead_letter() -> None:
    facts, stats = parse_text("h1:1:2 [0] NCCL INFO NET/IB : Using [0]; OOB eth0:10.0.0.1<0>")
    assert facts == []
    assert stats.malformed == 1
    assert stats.dead_letters[0].extra["rule"] == "nccl-net-devices"


# --- communicator lines -> RankInfo / InitComplete ------------------------------------------


def test_init_start_gives_rank_info_under_shared_comm_id_hash() -> None:
    facts, _ = parse_real("deepep_143_init_start.log")
    assert of_type(facts, RankInfo)[0] == RankInfo(
        0, JOB, "msm-h200-2", 4012, "0x982b74f14551db09", 11, 16, 3, "67000",
        LogOrigin("deepep_143_init_start.log", 1),
    )  # fmt: skip
    assert {r.comm_id for r in of_type(facts, RankInfo)} == {"0x982b74f14551db09"}
    assert of_type(facts, InitComplete) == []


def test_init_complete_with_comm_id_gives_rank_info_and_init_complete() -> None:
    facts, _ = parse_real("nccl_1814_ibext_init_channels_completion.log")
    done = of_type(facts, InitComplete)
    assert [(d.host, d.pid, d.rank, d.nranks) for d in done] == [
        ("hostname-test", 984, 36, 64),
        ("hostname-test", 982, 34, 64),
        ("hostname-test", 980, 32, 64),
        ("hostname-test", 983, 35, 64),
    ]
    assert {d.comm_id for d in done} == {"0x5ae77eb5ea4ec1ee"}
    assert of_type(facts, RankInfo)[0].bus_id == "9b000"


def test_old_init_complete_without_comm_id_falls_back_to_host_pid_pointer() -> None:
    facts, _ = parse_real("nccl_629_old_init_complete.log")
    first = of_type(facts, InitComplete)[0]
    assert first.comm_id == "A03-R28-I49-3-9000018:193027:0x7fdf08000d00"
    assert (first.rank, first.nranks) == (15, 16)
    assert of_type(facts, RankInfo)[0].cuda_dev == 7


def test_nranks_nnodes_line_gives_rank_info_without_device() -> None:
    facts, _ = parse_real("nccl_1519_mnnvl_line_rings.log")
    assert facts == [
        RankInfo(
            0, JOB, "nathan-h100-1", 11902, "nathan-h100-1:11902:0x562d61d79a30", 7, 16, None,
            None, LogOrigin("nccl_1519_mnnvl_line_rings.log", 1),
        )
    ]  # fmt: skip


def test_comm_id_learned_from_init_start_is_carried_to_later_lines_of_same_pointer() -> None:
    facts, _ = parse_real("nccl_tests_373_vdev_init_channels.log")
    ranks = of_type(facts, RankInfo)
    assert len(ranks) == 1  # the nRanks line repeats rank 2 of the same communicator
    assert ranks[0].comm_id == "0x9ca74fa6e40df7f4"
    assert {e.comm_id for e in of_type(facts, ChannelEdge)} == {"0x9ca74fa6e40df7f4"}


def test_destroy_complete_is_not_an_init_complete() -> None:
    facts, stats = parse_text(real_lines("nccl_1189_gdrdma_cumem_destroy.log")[4].decode())
    assert facts == []
    assert stats.skipped == 1


def test_newest_init_lines_rank_tag_and_split_parent_are_understood() -> None:
    # SYNTHETIC: formats of NCCL master src/init.cc; no public log sample was found.
    facts, _ = parse_text(
        "g1:10:11 [0] NCCL INFO [Rank 0] ncclCommInitRankConfig comm 0x55aa rank 0 nranks 16 "
        "cudaDev 0 nvmlDev 0 busId 18000 commId 0xabcdef0123456789 - Init START\n"
        "g1:10:11 [0] NCCL INFO ncclCommInitRankConfig comm 0x55aa rank 0 nranks 16 cudaDev 0 "
        "nvmlDev 0 busId 18000 commId 0xabcdef0123456789 - Init COMPLETE\n"
        "g1:10:12 [0] NCCL INFO ncclCommSplit comm 0x66bb rank 0 nranks 8 cudaDev 0 nvmlDev 0 "
        "busId 18000 parent 0x55aa childCount 1 color 0 key 0- Init START\n"
        "g1:10:12 [0] NCCL INFO ncclCommSplit comm 0x66bb rank 0 nranks 8 cudaDev 0 nvmlDev 0 "
        "busId 18000 parent 0x55aa childCount 1 color 0 key 0 - Init COMPLETE"
    )
    done = of_type(facts, InitComplete)
    assert [(d.comm_id, d.nranks) for d in done] == [
        ("0xabcdef0123456789", 16),
        ("g1:10:0x66bb", 8),
    ]
    assert len(of_type(facts, RankInfo)) == 2


# --- Channel lines -> ChannelEdge --------------------------------------------------------------


def test_net_channel_edges_carry_direction_device_and_communicator() -> None:
    facts, _ = parse_real("nccl_tests_373_vdev_init_channels.log")
    edges = of_type(facts, ChannelEdge)
    seen = [(e.channel, e.src_rank, e.dst_rank, e.direction, e.transport, e.net_dev) for e in edges]
    assert seen == [
        (0, 1, 2, "receive", "NET/IBext_v8/1", 1),
        (1, 1, 2, "receive", "NET/IBext_v8/1", 1),
        (0, 2, 0, "send", "NET/IBext_v8/1", 1),
    ]
    assert edges[0].origin == LogOrigin("nccl_tests_373_vdev_init_channels.log", 14)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (  # real, nccl#707: NCCL 2.7 prints busIds in the brackets and no "/connIndex"
            real_lines("nccl_707_busid_channels.log")[1].decode(),
            (1, 3, 2, "send", "NET/IB/2/GDRDMA", 2),
        ),
        (  # real, nccl#1189
            real_lines("nccl_1189_gdrdma_cumem_destroy.log")[3].decode(),
            (0, 3, 2, "", "P2P/CUMEM", None),
        ),
        (  # real, nccl#1232 (mpirun --tag-output "[2] " in front)
            real_lines("nccl_1232_mpi_tag_socket_shm.log")[4].decode(),
            (0, 2, 0, "", "SHM/direct/direct", None),
        ),
        (  # real, nccl#1232
            real_lines("nccl_1232_mpi_tag_socket_shm.log")[0].decode(),
            (0, 0, 1, "send", "NET/Socket/0", 0),
        ),
        (  # SYNTHETIC: PXN form of src/transport/net.cc (proxy rank in parentheses)
            "h1:7:8 [3] NCCL INFO Channel 00/0 : 3[3] -> 8[0] [send] via NET/IB/0(1)/GDRDMA",
            (0, 3, 8, "send", "NET/IB/0(1)/GDRDMA", 0),
        ),
        (  # SYNTHETIC: GDR over PCI, shared buffers
            "h1:7:8 [3] NCCL INFO Channel 02/1 : 3[3] -> 11[3] [send] "
            "via NET/IB/5/GDRDMA(PCI)/Shared",
            (2, 3, 11, "send", "NET/IB/5/GDRDMA(PCI)/Shared", 5),
        ),
        (  # SYNTHETIC: P2P over IPC with read
            "h1:7:8 [3] NCCL INFO Channel 01/0 : 3[3] -> 4[4] via P2P/IPC/read",
            (1, 3, 4, "", "P2P/IPC/read", None),
        ),
    ],
)
def test_channel_line_forms(line: str, expected: tuple[object, ...]) -> None:
    facts, stats = parse_text(line)
    (edge,) = of_type(facts, ChannelEdge)
    assert (edge.channel, edge.src_rank, edge.dst_rank, edge.direction) == expected[:4]
    assert (edge.transport, edge.net_dev) == expected[4:]
    assert stats.malformed == 0


def test_channel_line_is_attributed_to_comm_started_by_same_thread() -> None:
    # SYNTHETIC: two communicators initialised concurrently by two threads of one process.
    facts, _ = parse_text(
        "h1:100:201 [0] NCCL INFO comm 0xa1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
        "commId 0x1111111111111111 - Init START\n"
        "h1:100:202 [0] NCCL INFO comm 0xb2 rank 3 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 "
        "commId 0x2222222222222222 - Init START\n"
        "h1:100:201 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0\n"
        "h1:100:202 [0] NCCL INFO Channel 00/0 : 3[0] -> 0[0] [send] via NET/IB/0\n"
        "h1:100:299 [0] NCCL INFO Channel 01/0 : 3[0] -> 1[0] [send] via NET/IB/1"
    )
    edges = of_type(facts, ChannelEdge)
    assert [(e.comm_id, e.src_rank) for e in edges] == [
        ("0x1111111111111111", 8),
        ("0x2222222222222222", 3),
        ("0x2222222222222222", 3),  # unknown thread: the process's latest communicator
    ]


def test_channel_line_before_any_init_is_kept_under_unknown_communicator() -> None:
    facts, _ = parse_real("nccl_707_busid_channels.log")
    assert {e.comm_id for e in of_type(facts, ChannelEdge)} == {"10-90-43-152:120890:unknown"}


def test_ring_order_trees_and_ring_lines_are_skipped_not_malformed() -> None:
    facts, stats = parse_real("nccl_1412_trees_ring_order.log")
    assert of_type(facts, ChannelEdge) == []
    assert (stats.malformed, stats.skipped) == (0, 4)


def test_unreadable_channel_line_is_a_dead_letter_and_later_lines_still_parse() -> None:
    lines = [
        b"h1:7:8 [3] NCCL INFO Channel 00/0 : 3[3] -> ?? via NET/IB/0",
        b"h1:7:8 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] [send] via NET/IB/oops",
        real_lines("nccl_707_busid_channels.log")[0],
    ]
    facts, stats = parse_lines(lines, job_id=JOB, source="mixed")
    assert [d.line_no for d in stats.dead_letters] == [1, 2]
    assert "Channel NN/N" in stats.dead_letters[0].reason
    assert "device index" in stats.dead_letters[1].reason
    assert len(of_type(facts, ChannelEdge)) == 1
