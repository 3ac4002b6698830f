"""A log file whose lines name no host is given the host its name says, and only that: the
capture's folders and file names and the log shipper's `<node>:<path>` sources."""

from __future__ import annotations

import pytest
from attribution_support import HOST_A, JOB, T0, S, feed, job_facts
from attribution_support import fabric as reference_fabric
from logs_support import of_type, real_lines

from railtrace.streams.attribution import Correlator
from railtrace.streams.logs import LogParser
from railtrace.streams.logs.sources import SourceHosts
from railtrace.streams.records import CauseKind, JobState, LogOrigin, XidEvent

HOSTS = SourceHosts(["hgx-su01-02", "hgx-su01-03", "gpu7", "node.example"])


@pytest.mark.parametrize(
    ("source", "host"),
    [
        ("logs/42/hgx-su01-02/dmesg.log", "hgx-su01-02"),
        ("logs/42/hgx-su01-02.dmesg", "hgx-su01-02"),
        ("logs/42/dmesg-hgx-su01-02.txt", "hgx-su01-02"),
        ("logs/42/gpu7_kern.log", "gpu7"),
        ("logs/42/node.example.log", "node.example"),
        # `railtrace collect logs`: logs/<job>/<node>:<path>, and a rotated generation.
        ("logs/42/hgx-su01-03:/var/log/kern.log#2", "hgx-su01-03"),
    ],
)
def test_the_host_a_source_names_is_found(source: str, host: str) -> None:
    assert HOSTS.of(source) == host


@pytest.mark.parametrize(
    "source",
    [
        "logs/42/rank0.log",  # names no host
        "logs/42/hgx-su01-022.log",  # a longer name, not a host of the fabric
        "logs/42/hgx-su01-02/hgx-su01-03.log",  # names two: no guess
        "logs/42/xhgx-su01-02.log",
    ],
)
def test_a_source_that_names_no_host_or_two_gives_none(source: str) -> None:
    assert HOSTS.of(source) == ""


def _xids(parser: LogParser) -> list[XidEvent]:
    facts = [f for line in real_lines("akash_244_dmesg_T_xid.log") for f in parser.feed(line)]
    return of_type(facts, XidEvent)


def test_dmesg_t_xids_take_the_hint_and_keep_it_across_a_snapshot() -> None:
    assert {x.host for x in _xids(LogParser(JOB, "dmesg.log", 2024))} == {""}
    hinted = LogParser(JOB, "logs/j/gpu7/dmesg.log", 2024, host_hint="gpu7")
    assert {x.host for x in _xids(hinted)} == {"gpu7"}
    fresh = LogParser(JOB, "logs/j/gpu7/dmesg.log", 2024, host_hint="gpu7")
    restored = LogParser.restore(fresh.snapshot())
    assert {x.host for x in _xids(restored)} == {"gpu7"}


def test_an_xid_whose_host_is_unknown_dates_the_stall_but_names_no_node() -> None:
    corr = Correlator(reference_fabric())
    at = T0 + 100 * S
    feed(corr, [*job_facts(), XidEvent(at, JOB, "", "0000:00:05", 79, "", LogOrigin("d", 1))])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED and v.stalled_at_ns == at
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_node is None
    assert not [c for c in v.candidates if c.kind == CauseKind.NODE]
    # With its host the same Xid names the node.
    corr = Correlator(reference_fabric())
    feed(corr, [*job_facts(), XidEvent(at, JOB, HOST_A, "0000:00:05", 79, "", LogOrigin("d", 1))])
    (v,) = corr.verdicts()
    assert v.cause_kind == CauseKind.NODE and v.cause_node == HOST_A
