"""Hostile input never raises, and the good lines around it keep their facts."""

from __future__ import annotations

import re

import pytest
from logs_support import JOB, REAL, of_type, parse_real, real_lines

from railtrace.streams.logs import MAX_LINE_BYTES, LogParser, parse_lines
from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    NetDevices,
    NetError,
    Progress,
)

GOOD_DEVICES = real_lines("rccl_419_net_ib_using_ib.log")[2]
GOOD_ERROR = real_lines("nccl_tests_185_roce_socket_reset.log")[4]


@pytest.mark.parametrize(
    "junk",
    [
        b"\x00\x01\x02\xff\xfe\xfd" * 50,
        b"\xc3\x28\xa0\xa1 NCCL INFO \xe2\x28\xa1",  # invalid UTF-8 around NCCL words
        bytes(range(256)),
        b"",
        b"\r\r\r",
        "\udcff lone surrogate NCCL WARN Got completion from peer".encode("utf-8", "surrogatepass"),
    ],
)
def test_binary_junk_between_good_lines_keeps_the_good_lines(junk: bytes) -> None:
    facts, stats = parse_lines([GOOD_DEVICES, junk, GOOD_ERROR], job_id=JOB, source="s")
    assert len(of_type(facts, NetDevices)) == 1
    assert of_type(facts, NetError)[0].origin.line_no == 3
    assert stats.lines == 3


def test_str_with_lone_surrogate_becomes_a_dead_letter_with_escaped_raw() -> None:
    line = "h1:1:2 [0] NCCL WARN NET/IB : Got completion from peer \udcff"
    facts, stats = parse_lines([line], job_id=JOB, source="s")
    assert facts == []
    assert stats.dead_letters[0].raw.endswith(b"peer \\udcff")


def test_nul_bytes_inside_a_line_are_dropped_before_parsing() -> None:
    dirty = GOOD_ERROR.replace(b"Connection", b"Conn\x00ection").replace(b"NCCL", b"NC\x00CL")
    facts, stats = parse_lines([dirty], job_id=JOB, source="s")
    (err,) = of_type(facts, NetError)
    assert err.peer == "11.1.128.128"
    assert stats.malformed == 0


def test_enormous_line_is_cut_reported_and_its_head_still_parsed() -> None:
    huge = GOOD_ERROR + b" " + b"x" * (MAX_LINE_BYTES * 3)
    facts, stats = parse_lines([huge, GOOD_DEVICES], job_id=JOB, source="big")
    assert len(of_type(facts, NetError)) == 1
    assert len(of_type(facts, NetDevices)) == 1
    (dead,) = stats.dead_letters
    assert (dead.line_no, dead.extra["rule"]) == (1, "line-length")
    assert str(len(huge)) in dead.reason
    assert len(dead.raw) == 4096


def _bar(steps: int, head: str = "2026-08-10T07:19:59.941Z ", end: str = "") -> str:
    """An HF Trainer bar line as a file holds it: a render after a CR at every step."""
    renders = "".join(
        f"\r  1%|          | {n}/100000 [00:{n % 60:02d}<39:28:18,  1.42s/it]"
        for n in range(1, steps + 1)
    )
    return head + renders + end


@pytest.mark.parametrize("as_bytes", [True, False])
def test_a_bar_line_beyond_the_cap_keeps_its_stamp_and_newest_render_and_is_not_cut(
    as_bytes: bool,
) -> None:
    line = _bar(4000, end="\r" + " " * 50 + "\r{'loss': 0.8533, 'epoch': 0.04}\n")
    assert len(line) > 3 * MAX_LINE_BYTES
    facts, stats = parse_lines([line.encode() if as_bytes else line], job_id=JOB, source="bar")
    (report,) = of_type(facts, Progress)
    assert report.step == 4000
    assert report.ts_ns == 1786346399941000000  # the shipper's stamp of the first piece
    assert stats.malformed == 0 and not stats.dead_letters


def test_a_bar_line_whose_last_piece_alone_passes_the_cap_is_cut_and_reported() -> None:
    line = _bar(10, end="\r" + "x" * (MAX_LINE_BYTES + 10))
    facts, stats = parse_lines([line], job_id=JOB, source="bar")
    (dead,) = stats.dead_letters
    assert dead.extra["rule"] == "line-length"
    assert of_type(facts, Progress)[0].step == 10  # the head still parsed


def test_str_and_bytes_input_give_the_same_facts() -> None:
    as_bytes = real_lines("nccl_tests_373_vdev_init_channels.log")
    from_bytes, _ = parse_lines(as_bytes, job_id=JOB, source="s")
    from_str, _ = parse_lines([b.decode() + "\n" for b in as_bytes], job_id=JOB, source="s")
    assert from_bytes == from_str
    assert len(of_type(from_bytes, ChannelEdge)) == 3


def test_every_malformed_line_is_a_dead_letter_until_taken() -> None:
    bad = b"h1:1:2 [0] NCCL WARN NET/IB : Got completion from peer"
    parser = LogParser(JOB, "flood")
    for _ in range(1250):
        parser.feed(bad)
    assert parser.stats.malformed == 1250
    taken = parser.stats.take_dead_letters()
    assert [d.line_no for d in taken] == list(range(1, 1251))
    assert {d.source for d in taken} == {"flood"}
    assert parser.stats.dead_letters == []


def test_carriage_return_progress_bar_pieces_are_parsed_separately() -> None:
    line = (
        "Epoch 1:  3%|▎ | 10/300 [00:10<04:50]\r"
        + GOOD_ERROR.decode()
        + "\r"
        + real_lines("basicsr_737_pg_id_guid.log")[0].decode()
        + "\rEpoch 1:  4%|▍ | 11/300 [00:11<04:49]"
    )
    facts, stats = parse_lines([line], job_id=JOB, source="s", year_hint=2025)
    (err,) = of_type(facts, NetError)
    (t,) = of_type(facts, CollectiveTimeout)
    assert (err.peer, t.rank, t.seq, t.host) == ("11.1.128.128", 1, 808, "dgxh100-4")
    assert (stats.lines, err.origin.line_no, t.origin.line_no) == (1, 1, 1)


def test_chunk_of_several_lines_fed_at_once_yields_facts_of_each() -> None:
    parser = LogParser(JOB, "chunk")
    facts = parser.feed(GOOD_DEVICES + b"\n" + GOOD_ERROR + b"\n")
    assert [type(f).__name__ for f in facts] == ["NetDevices", "NetError"]
    assert parser.stats.lines == 1


def test_every_line_is_counted_exactly_once() -> None:
    _, stats = parse_real("nccl_1814_ibext_init_channels_completion.log")
    productive = stats.lines - stats.skipped - stats.malformed
    assert (stats.lines, productive, stats.skipped, stats.facts) == (16, 11, 5, 15)


def test_parsing_is_deterministic() -> None:
    lines = [b for p in sorted(REAL.glob("*.log")) for b in p.read_bytes().splitlines()]
    first = parse_lines(lines, job_id=JOB, source="all", year_hint=2024)
    second = parse_lines(lines, job_id=JOB, source="all", year_hint=2024)
    assert first == second


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.log")))
def test_every_real_sample_parses_without_dead_letters(name: str) -> None:
    _, stats = parse_real(name)
    assert stats.dead_letters == []


def test_sources_md_names_every_real_sample_and_its_thread_or_doc_page() -> None:
    sources = (REAL / "SOURCES.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([\w.\-]+\.log)`", sources))
    assert listed == {p.name for p in REAL.glob("*.log")}
    for name in listed:
        block = sources.split(f"`{name}`", 1)[1].split("\n`", 1)[0]
        # GitHub threads, NVIDIA's documentation, or a patch on the kernel's mailing lists.
        assert re.search(r"https://(github\.com|docs\.nvidia\.com|lore\.kernel\.org)/", block), name
