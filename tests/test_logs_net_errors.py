"""Transport failures -> NetError: IB completions, socket errors, async events, remote errors."""

from __future__ import annotations

import pytest
from logs_support import JOB, of_type, parse_real, parse_text, real_lines

from railtrace.streams.logs import parse_lines
from railtrace.streams.records import LogOrigin, NetError


def _real(name: str, index: int) -> str:
    return real_lines(name)[index].decode()


NCCL_WARNS = [
    # (fixture, line index, host, pid, kind, peer)
    ("nccl_1814_ibext_init_channels_completion.log", 10, "hostname-test", 984, "ib-completion",
     "172.36.143.59"),
    ("nccl_1405_completion_ipv6_gid.log", 0, "kp-ddp-worker-0", 3468, "ib-completion",
     "10.216.210.236"),
    ("nccl_tests_252_cumem_completion_error4.log", 2, "kolyoz2", 25146, "ib-completion",
     "10.0.35.1"),
    ("nccl_928_old_completion_ipv6.log", 0, "H100-2", 19989, "ib-completion",
     "fe80::966d:ae03:8b:df78"),
    ("nccl_tests_166_socket_closed.log", 0, "gpu004", 2200689, "socket",
     "gpu004.ds-a4-r02.abc.com"),
    ("nccl_tests_166_socket_closed.log", 5, "ubuntu", 39964, "socket", "10.0.0.2"),
    ("nccl_tests_185_roce_socket_reset.log", 4, "dgxh100-4", 460770, "socket", "11.1.128.128"),
    ("nccl_963_net_call_recv_connect.log", 0, "9306dc444753", 248281, "socket", "172.17.0.2"),
    ("nccl_963_net_call_recv_connect.log", 3, "9306dc444753", 248281, "socket", "172.17.0.2"),
    ("nccl_795_broken_pipe_closed.log", 0, "a100-st-p4d24xlarge-22", 183006, "socket",
     "10.200.84.247"),
    ("nccl_1920_shipper_iso_and_nccl_timestamp.log", 0, "gpu-server320", 0, "socket",
     "10.44.137.149"),
    ("lit_llama_380_port_error.log", 1, "...-48", 34050, "ib-async-event", None),
    ("nccl_230_iso_mpirun_async_event.log", 0, "container-e275-1553839402050-12124-01-000057",
     815, "ib-async-event", None),
    ("nccl_230_iso_mpirun_async_event.log", 2, "container-e275-1553839402050-12124-01-000057",
     815, "ib-verbs", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "index", "host", "pid", "kind", "peer"),
    NCCL_WARNS,
    ids=[f"{w[0]}:{w[1] + 1}" for w in NCCL_WARNS],
)
def test_nccl_warn_transport_failures_name_kind_and_peer_without_port(
    name: str, index: int, host: str, pid: int, kind: str, peer: str | None
) -> None:
    line = _real(name, index)
    facts, _ = parse_text(line)
    (err,) = of_type(facts, NetError)
    assert (err.host, err.pid, err.kind, err.peer) == (host, pid, kind, peer)
    assert err.detail == line[line.index("NCCL WARN ") + len("NCCL WARN ") :]


def test_completion_error_in_current_format_synthetic() -> None:
    # SYNTHETIC: format of NCCL master src/transport/net_ib/p2p.cc (status name and number).
    facts, _ = parse_text(
        "[2026-05-05 06:16:47] gpu3:2211:2290 [1] transport/net_ib/p2p.cc:688 (ncclIbLog) "
        "NCCL WARN NET/IB: Got completion from peer 10.0.0.5<37262> "
        "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  "
        "localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.5 hca mlx5_3"
    )
    (err,) = of_type(facts, NetError)
    assert (err.host, err.pid, err.kind, err.peer) == ("gpu3", 2211, "ib-completion", "10.0.0.5")


def test_info_lines_mentioning_connect_are_not_errors() -> None:
    facts, stats = parse_real("nccl_1038_roce_ro_init_start.log")
    assert of_type(facts, NetError) == []
    assert stats.malformed == 0


def test_warn_lines_that_are_not_transport_failures_are_skipped() -> None:
    facts, stats = parse_real("nccl_957_mpirun_ctime_prefix.log")
    assert facts == []
    assert stats.skipped == 2


def test_completion_line_without_readable_peer_is_a_dead_letter() -> None:
    facts, stats = parse_text("h1:1:2 [0] NCCL WARN NET/IB : Got completion from peer")
    assert facts == []
    assert stats.dead_letters[0].extra["rule"] == "net-error"


# --- PyTorch-side echoes of NCCL error codes ---------------------------------------------------


def test_remote_error_and_its_last_error_line_give_two_facts_once_each() -> None:
    facts, _ = parse_real("nccl_2076_remote_error_last_error.log")
    assert [(e.kind, e.peer, e.origin.line_no) for e in of_type(facts, NetError)] == [
        ("remote-error", None, 1),
        ("socket", "172....", 4),
    ]


def test_remote_error_with_torchrun_prefix_and_ofi_last_error() -> None:
    facts, _ = parse_real("nccl_1928_remote_error_rank_prefix_ofi.log")
    errors = of_type(facts, NetError)
    assert [(e.kind, e.peer) for e in errors] == [("remote-error", None), ("ofi-completion", None)]
    assert errors[1].detail.startswith("NET/OFI Request 0x7f14cc5b60c0 completed with error.")


def test_one_line_remote_error_takes_peer_from_inline_last_error() -> None:
    facts, _ = parse_real("stanford_alpaca_207_one_line_remote_error.log")
    (err,) = of_type(facts, NetError)
    assert (err.kind, err.peer) == ("remote-error", "11.214.147.122")


def test_remote_error_borrows_host_and_pid_of_last_nccl_line() -> None:
    lines = real_lines("nccl_tests_185_roce_socket_reset.log")[:2] + real_lines(
        "nccl_934_remote_error_no_last_error.log"
    )
    facts, _ = parse_lines(lines, job_id=JOB, source="mixed")
    remote = [e for e in of_type(facts, NetError) if e.kind == "remote-error"]
    assert [(e.host, e.pid, e.origin) for e in remote] == [
        ("dgxh100-4", 460770, LogOrigin("mixed", 3))
    ]


def test_system_error_line_is_a_system_error_synthetic() -> None:
    # SYNTHETIC: the ncclSystemError text of NCCL's ncclGetErrorString-based messages.
    facts, _ = parse_text(
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
    )
    assert [(e.kind, e.peer) for e in of_type(facts, NetError)] == [("system-error", None)]


def test_gloo_transport_retry_counter_exceeded_is_reported() -> None:
    facts, _ = parse_real("pytorch_10936_gloo_retry_counter.log")
    (err,) = of_type(facts, NetError)
    assert (err.kind, err.peer, err.host, err.pid) == ("ib-retry-exceeded", None, "", 0)
