"""What a transport failure says beyond its kind: the completion status and its side, vendor
error, opcode, length, request direction, GIDs and HCA of a completion error; the event, HCA
and port of an async event; the CUDA device of the prefix. Old and stripped shapes too."""

from __future__ import annotations

import pytest
from logs_support import of_type, parse_real, parse_text, real_lines

from railtrace.streams.records import AsyncEvent, Completion, ErrorSide, NetError

FABRIC, HOST, CONSEQUENCE = ErrorSide.FABRIC, ErrorSide.HOST, ErrorSide.CONSEQUENCE


def _error_at(name: str, index: int) -> NetError:
    facts, _ = parse_text(real_lines(name)[index].decode())
    (err,) = of_type(facts, NetError)
    return err


COMPLETIONS = [
    # (fixture, line index, host, peer, cuda_dev, completion)
    ("nccl_1405_completion_ipv6_gid.log", 0, "kp-ddp-worker-0", "10.216.210.236", 4,
     Completion(12, "IBV_WC_RETRY_EXC_ERR", FABRIC, 129, 0, 0, "Recv",
                "fd00:1148:9000:5000:4:200:3:ff22", ("fd00:1148:9000:5000:4:200:3:ff1f",))),
    ("nccl_1814_ibext_init_channels_completion.log", 10, "hostname-test", "172.36.143.59", 4,
     Completion(12, "IBV_WC_RETRY_EXC_ERR", FABRIC, 129, 129, 65536, "Recv",
                "::ffff:29.87.88.182", ("::ffff:29.87.4.221",))),
    ("nccl_1814_ibext_init_channels_completion.log", 15, "hostname-test", "172.36.143.59", 4,
     Completion(5, "IBV_WC_WR_FLUSH_ERR", CONSEQUENCE, 249, 32656, 32659, "Recv",
                "::ffff:29.87.88.182", ("::ffff:29.87.4.221",))),
    ("nccl_1698_status12_hca_gids.log", 0, "mycl-g2", "192.168.3.5", 6,
     Completion(12, "IBV_WC_RETRY_EXC_ERR", FABRIC, 129, 129, 1048576, "Recv",
                "::ffff:192.168.6.3", ("::ffff:192.168.6.5",), "mlx5_10")),
    ("nccl_928_old_completion_ipv6.log", 0, "H100-2", "fe80::966d:ae03:8b:df78", 1,
     Completion(4, "IBV_WC_LOC_PROT_ERR", HOST, 81, 32564, 32564, "Send")),
    ("nccl_tests_252_cumem_completion_error4.log", 2, "kolyoz2", "10.0.35.1", 0,
     Completion(4, "IBV_WC_LOC_PROT_ERR", HOST, 81, 5327, 5327, "Send")),
    ("nccl_1905_shipper_stamp_qp_fatal_hca.log", 2, "h100-28", "172.16.12.34", 0,
     Completion(4, "IBV_WC_LOC_PROT_ERR", HOST, 83, 0, 0, "Send", hca="mlx5_ib0")),
    # The file:line token and every address were turned into markdown links by a paste.
    ("nccl_1710_async_hca_port_status9_markdown_links.log", 1, "node023", "10.1.3.201", 0,
     Completion(9, "IBV_WC_REM_INV_REQ_ERR", HOST, 138, 0, 0, "Send",
                "::ffff:10.206.1.23", ("::ffff:10.206.1.11",))),
    ("nccl_1737_flush_error5_without_direction.log", 0, "gh-3714u15", "10.1.32.3", 0,
     Completion(5, "IBV_WC_WR_FLUSH_ERR", CONSEQUENCE, 249, 0, 0)),
    # NCCL 2.7: no peer, no direction.
    ("pytorch_55448_nccl_2_7_completion_without_peer.log", 0, "tb2b07342", None, 0,
     Completion(12, "IBV_WC_RETRY_EXC_ERR", FABRIC, 129, 1, 32602)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "index", "host", "peer", "cuda_dev", "completion"),
    COMPLETIONS,
    ids=[f"{c[0]}:{c[1] + 1}" for c in COMPLETIONS],
)
def test_completion_error_keeps_status_side_vendor_err_opcode_len_direction_gids_and_hca(
    name: str, index: int, host: str, peer: str | None, cuda_dev: int, completion: Completion
) -> None:
    err = _error_at(name, index)
    assert (err.kind, err.host, err.peer, err.cuda_dev) == ("ib-completion", host, peer, cuda_dev)
    assert err.completion == completion
    assert err.side == completion.side


ASYNC_EVENTS = [
    # (fixture, line index, host, cuda_dev, event)
    ("lit_llama_380_port_error.log", 1, "...-48", 0, AsyncEvent("port error", FABRIC)),
    ("nccl_230_iso_mpirun_async_event.log", 0, "container-e275-1553839402050-12124-01-000057",
     0, AsyncEvent("local catastrophic error", HOST)),
    ("nccl_1710_async_hca_port_status9_markdown_links.log", 0, "node201", 0,
     AsyncEvent("local access violation work queue error", HOST, "mlx5_0", 1)),
    ("nccl_1905_shipper_stamp_qp_fatal_hca.log", 1, "h100-28", 0,
     AsyncEvent("local access violation work queue error", HOST, "mlx5_ib0", 1)),
    ("nccl_1919_v2251_async_fatal_qp.log", 0, "node-0", 0,
     AsyncEvent("invalid request local work queue error", HOST, "mlx5_1", 1)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "index", "host", "cuda_dev", "event"),
    ASYNC_EVENTS,
    ids=[f"{e[0]}:{e[1] + 1}" for e in ASYNC_EVENTS],
)
def test_async_event_keeps_its_kind_side_hca_and_port(
    name: str, index: int, host: str, cuda_dev: int, event: AsyncEvent
) -> None:
    err = _error_at(name, index)
    assert (err.kind, err.host, err.peer, err.cuda_dev) == ("ib-async-event", host, None, cuda_dev)
    assert err.async_event == event


@pytest.mark.parametrize(
    ("line", "event"),
    [
        # SYNTHETIC: the NCCL 2.23-2.27 and 2.28+ texts (net_ib.cc format strings).
        (
            "gpu1:7:9 [3] transport/net_ib.cc:99 NCCL WARN NET/IB : mlx5_4:1 Got async error "
            "event: port error",
            AsyncEvent("port error", FABRIC, "mlx5_4", 1),
        ),
        (
            "gpu1:7:9 [3] transport/net_ib.cc:99 NCCL WARN NET/IB : mlx5_4:1 Got non-fatal "
            "async event: port active(9)",
            AsyncEvent("port active", FABRIC, "mlx5_4", 1),
        ),
        (
            "gpu1:7:9 [3] transport/net_ib.cc:99 NCCL WARN NET/IB : mlx5_4:1 async fatal event: "
            "local catastrophic error",
            AsyncEvent("local catastrophic error", HOST, "mlx5_4", 1),
        ),
    ],
)
def test_later_async_event_texts_are_read_synthetic(line: str, event: AsyncEvent) -> None:
    facts, stats = parse_text(line)
    (err,) = of_type(facts, NetError)
    assert (err.host, err.cuda_dev, err.async_event) == ("gpu1", 3, event)
    assert stats.malformed == 0


def test_current_completion_text_keeps_status_name_and_hca_synthetic() -> None:
    # SYNTHETIC: format of NCCL master src/transport/net_ib/p2p.cc (status name and number).
    facts, _ = parse_text(
        "[2026-05-05 06:16:47] gpu3:2211:2290 [1] transport/net_ib/p2p.cc:688 (ncclIbLog) "
        "NCCL WARN NET/IB: Got completion from peer 10.0.0.5<37262> "
        "with status=IBV_WC_RNR_RETRY_EXC_ERR(13) opcode=IBV_WC_SEND(0) vendor_err=135  "
        "localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.5 hca mlx5_3"
    )
    (err,) = of_type(facts, NetError)
    assert err.cuda_dev == 1
    assert err.completion == Completion(
        13, "IBV_WC_RNR_RETRY_EXC_ERR", FABRIC, 135, 0, None, "", "::ffff:10.0.0.1",
        ("::ffff:10.0.0.5",), "mlx5_3",
    )  # fmt: skip


def test_nccl_2_28_request_type_is_the_direction_synthetic() -> None:
    # SYNTHETIC: NCCL 2.28's `reqSize=%d vendor_err=%u req_type=%s` completion text.
    facts, _ = parse_text(
        "g1:5:6 [2] NCCL WARN NET/IB: Got completion from peer 10.0.0.5<1> with "
        "status=IBV_WC_REM_ACCESS_ERR(10) opcode=IBV_WC_RDMA_WRITE(1) reqSize=4096 "
        "vendor_err=136 req_type=Send localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.5 hca mlx5_0"
    )
    (err,) = of_type(facts, NetError)
    found = err.completion
    assert found is not None
    assert (found.status, found.side, found.direction) == (10, HOST, "Send")


# --- old and stripped shapes ------------------------------------------------------------------


def test_completion_pasted_without_any_prefix_is_read_with_the_files_host() -> None:
    lines = [
        b"tb2b07342:9298:11152 [0] NCCL INFO proxy.cc:198 -> 2 [Proxy Thread]",
        *real_lines("nccl_902_completion_without_prefix.log"),
    ]
    facts, stats = parse_text("\n".join(line.decode() for line in lines))
    (err,) = of_type(facts, NetError)
    assert (err.host, err.pid, err.cuda_dev, err.peer) == ("tb2b07342", 9298, None, None)
    assert err.completion is not None and err.completion.status == 12
    assert stats.malformed == 0


def test_completion_message_without_nccl_marker_is_still_a_transport_failure() -> None:
    facts, _ = parse_real("nccl_1664_completion_message_only.log")
    (err,) = of_type(facts, NetError)
    assert (err.host, err.peer, err.kind) == ("", "7.6.13.83", "ib-completion")
    assert err.completion is not None
    assert (err.completion.status, err.completion.direction) == (12, "Send")


def test_init_lines_garbled_by_ocr_are_counted_dead_letters_with_their_reason() -> None:
    facts, stats = parse_real("nccl_1664_ocr_garbled_init.txt")
    assert facts == []
    assert stats.malformed == 2
    assert {d.extra["rule"] for d in stats.dead_letters} == {"nccl-comm"}


def test_redacted_host_is_not_taken_for_a_host_synthetic() -> None:
    # SYNTHETIC: a reporter's `***` in place of the host; the pid and device are still read.
    facts, _ = parse_text(
        "node7:41:42 [1] NCCL INFO proxy.cc:1 -> 6\n"
        "***:9298:11152 [3] transport/net_ib.cc:818 NCCL WARN NET/IB : Got completion with "
        "error 12, opcode 1, len 32602, vendor err 129"
    )
    (err,) = of_type(facts, NetError)
    assert (err.host, err.pid, err.cuda_dev) == ("node7", 9298, 3)


def test_old_completion_without_a_readable_status_is_a_dead_letter_synthetic() -> None:
    facts, stats = parse_text("h1:1:2 [0] NCCL WARN NET/IB : Got completion with error ??")
    assert facts == []
    assert stats.malformed == 1
    assert stats.dead_letters[0].extra["rule"] == "net-error"


def test_status_quoted_by_a_pytorch_rethrow_is_kept_on_its_error() -> None:
    facts, _ = parse_real("stanford_alpaca_207_one_line_remote_error.log")
    (err,) = of_type(facts, NetError)
    assert err.kind == "remote-error"
    assert err.completion is not None
    assert (err.completion.status, err.side) == (12, FABRIC)


def test_structure_line_without_a_readable_host_is_a_dead_letter_not_a_guess() -> None:
    # SYNTHETIC: a channel line whose prefix lost its host to a paste; lending the file's host
    # would put the hop on whichever process printed last.
    facts, stats = parse_text(
        "node7:41:42 [1] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 1 - Init START\n"
        "[1] NCCL INFO Channel 00/0 : 0[1] -> 1[1] [send] via NET/IB/0"
    )
    assert [type(f).__name__ for f in facts] == ["RankInfo"]
    assert [(d.line_no, d.extra["rule"]) for d in stats.dead_letters] == [(2, "nccl-prefix")]
