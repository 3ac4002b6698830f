"""Which side of a culprit failed (`Verdict.diagnosis`), and the step-report rules around it:
mlx5 kernel lines read as NicEvents, the diagnosis of a blamed link or node, link state
changes a job visibly survived, runs that finished, and the pace floor of the stall time.

Hand-made records on the 64-node reference fabric, plus one simulated capture per diagnosis.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
import simulations
from attribution_support import (
    EVERY_S,
    HOST_A,
    HOST_B,
    HOST_LINK,
    JOB,
    LEAF,
    LEAF_PORT,
    OVERDUE_S,
    T0,
    S,
    fabric,
    feed,
    job_facts,
)

from railtrace.simulate import Fault
from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import JudgingRules
from railtrace.streams.logs.parser import parse_lines
from railtrace.streams.records import (
    CauseKind,
    CollectiveTimeout,
    Diagnosis,
    JobState,
    LinkEvent,
    LinkEventKind,
    LogOrigin,
    NetError,
    NicEvent,
    Progress,
    Verdict,
    XidEvent,
)

# When the hand-made hangs start.
STALL = T0 + 100 * S
# A watchdog's default timeout.
WATCHDOG_S = 600
YEAR = 2026


# -- builders -----------------------------------------------------------------------------------


def _report(at_ns: int, step: int, total_steps: int | None = None) -> Progress:
    return Progress(
        at_ns, JOB, HOST_A, step, 100.0, None, LogOrigin("train.log", step + 1), total_steps
    )


def _steady(count: int, total_steps: int | None = None) -> list[Progress]:
    """`count` step reports every EVERY_S seconds from T0 + EVERY_S; the last at
    T0 + count * EVERY_S, at step `count * 10` (Megatron prints every ten iterations)."""
    return [_report(T0 + i * EVERY_S * S, i * 10, total_steps) for i in range(1, count + 1)]


def _timeout(started_ns: int) -> CollectiveTimeout:
    """HOST_A's watchdog giving up, WATCHDOG_S after the collective started."""
    return CollectiveTimeout(
        started_ns + WATCHDOG_S * S,
        JOB,
        HOST_A,
        0,
        42,
        "ALLREDUCE",
        WATCHDOG_S * 1000,
        WATCHDOG_S * 1000,
        started_ns,
        LogOrigin("watchdog.log", 1),
    )


def _nic(at_ns: int, state: str, host: str = HOST_A, line_no: int = 1) -> NicEvent:
    detail = {
        "failed": "poll_health:803:(pid 0): device's health compromised - reached miss count",
        "down": "Link down",
        "up": "Link up",
    }[state]
    netdev = "" if state == "failed" else "enp12s0np0"
    return NicEvent(
        at_ns, JOB, host, "0000:0c:00.0", netdev, state, detail, LogOrigin(f"{host}.dmesg", line_no)
    )


def _event(
    at_ns: int, kind: LinkEventKind, value: float = 0.0, device: str = LEAF, iface: str = LEAF_PORT
) -> LinkEvent:
    return LinkEvent(at_ns, device, iface, kind, value)


def _down(at_ns: int) -> LinkEvent:
    return _event(at_ns, LinkEventKind.DOWN)


def _hung(records: list) -> tuple[Correlator, Verdict]:
    """The job, a watchdog for a collective started at STALL, and `records` around it."""
    corr = Correlator(fabric())
    feed(corr, [*job_facts(), *records, _timeout(STALL)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    return corr, v


def _blamed(v: Verdict) -> str | None:
    return v.cause_link.link_id if v.cause_link is not None else None


def _kinds(v: Verdict) -> set[str]:
    return {e.kind for e in v.evidence}


def _syslog(host: str, text: str, at: str = "18:44:12") -> str:
    return f"Dec  6 {at} {host} kernel: {text}"


def _utc_ns(h: int, m: int, s: int) -> int:
    return int(datetime(YEAR, 12, 6, h, m, s, tzinfo=UTC).timestamp()) * S


# -- parsing mlx5 kernel lines ------------------------------------------------------------------


def _parse(lines: list[str]):
    return parse_lines(lines, job_id=JOB, source="gpu7.dmesg", year_hint=YEAR)


@pytest.mark.parametrize(
    ("text", "state", "netdev"),
    [
        ("mlx5_core 0000:5E:00.0 ens1f0np0: Link down", "down", "ens1f0np0"),
        ("mlx5_core 0000:5E:00.0 ens1f0np0: Link up", "up", "ens1f0np0"),
        (
            "mlx5_core 0000:5E:00.0: poll_health:803:(pid 0): device's health compromised - "
            "reached miss count",
            "failed",
            "",
        ),
    ],
    ids=["link-down", "link-up", "health-compromised"],
)
def test_mlx5_line_becomes_a_nic_event_with_host_from_the_syslog_prefix(
    text: str, state: str, netdev: str
):
    facts, stats = _parse(["Dec  6 18:44:11 gpu3 kernel: unrelated", _syslog("gpu7", text)])
    (nic,) = facts
    assert isinstance(nic, NicEvent)
    assert (nic.host, nic.pci, nic.netdev, nic.state) == ("gpu7", "0000:5e:00.0", netdev, state)
    assert nic.ts_ns == _utc_ns(18, 44, 12)
    assert nic.job_id == JOB
    assert nic.origin == LogOrigin("gpu7.dmesg", 2)
    assert stats.malformed == 0 and stats.dead_letters == []


def test_other_mlx5_chatter_is_skipped_and_an_xid_beside_it_is_still_read():
    lines = [
        _syslog("gpu7", "mlx5_core 0000:0c:00.0: mlx5e_open: port module event", "18:40:01"),
        _syslog("gpu7", "mlx5_core 0000:0c:00.0: firmware version: 28.39.1002", "18:40:02"),
        _syslog(
            "gpu7",
            "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
            "GPU has fallen off the bus.",
        ),
        _syslog("gpu7", "mlx5_core 0000:0c:00.0 enp12s0np0: Link down", "18:44:13"),
    ]
    facts, stats = _parse(lines)
    assert [type(f) for f in facts] == [XidEvent, NicEvent]
    xid, nic = facts
    assert (xid.host, xid.pci, xid.xid, xid.ts_ns) == (
        "gpu7",
        "0000:3b:00",
        79,
        _utc_ns(18, 44, 12),
    )
    assert (nic.host, nic.state, nic.netdev) == ("gpu7", "down", "enp12s0np0")
    assert stats.lines == 4 and stats.skipped == 2
    assert stats.malformed == 0 and stats.dead_letters == []


# -- diagnosis of a hang ------------------------------------------------------------------------


def test_down_with_the_hosts_nic_failing_is_a_host_nic_fault():
    _, v = _hung([_nic(STALL + S // 2, "failed"), _down(STALL + S)])
    assert v.cause_kind == CauseKind.LINK and _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.HOST_NIC
    (nic,) = [e for e in v.evidence if e.kind == "nic-failed"]
    assert nic.subject == HOST_A and nic.source == "kernel"
    assert nic.ts_ns == STALL + S // 2
    assert "health compromised" in nic.detail


def test_down_with_only_the_nic_losing_carrier_is_a_switch_port_fault():
    """A NIC sees its carrier go whichever end failed: `Link down` says nothing about it."""
    _, v = _hung([_down(STALL + S), _nic(STALL + S + S // 10, "down")])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.SWITCH_PORT
    assert not any(k.startswith("nic-") for k in _kinds(v))


@pytest.mark.parametrize(
    "host", [HOST_B, "hgx-su01-05"], ids=["another-host-of-the-job", "a-host-outside-the-job"]
)
def test_a_nic_failing_on_another_host_does_not_make_the_cable_a_host_nic_fault(host: str):
    _, v = _hung([_nic(STALL + S // 2, "failed", host=host), _down(STALL + S)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.SWITCH_PORT
    assert "nic-failed" not in _kinds(v)


@pytest.mark.parametrize("offset_s", [-3600, 3600], ids=["an-hour-before", "an-hour-after"])
def test_a_nic_failure_far_from_the_stall_does_not_count(offset_s: int):
    _, v = _hung([_nic(STALL + offset_s * S, "failed"), _down(STALL + S)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.SWITCH_PORT
    assert "nic-failed" not in _kinds(v)


def test_a_nic_failure_read_after_the_verdict_changes_its_diagnosis():
    """The host's kernel log may arrive late (or from another partition): the verdict that
    first said switch-port is re-judged and published again."""
    corr, v = _hung([_down(STALL + S)])
    assert v.diagnosis == Diagnosis.SWITCH_PORT
    changed = corr.observe(_nic(STALL + S // 2, "failed"))
    (again,) = [u for u in changed if u.job_id == JOB]
    assert again.diagnosis == Diagnosis.HOST_NIC
    assert (_blamed(again), again.stalled_at_ns) == (HOST_LINK, v.stalled_at_ns)


def test_a_failed_nic_does_not_make_a_spine_link_a_host_nic_fault():
    """Only a cable with the failing host at one end can be that host's NIC."""
    corr = Correlator(fabric())
    feed(corr, job_facts())
    uplink = sorted(
        lid for lid in corr.job_links(JOB) if lid.startswith(f"{LEAF}:") and "spine" in lid
    )[0]
    ref = corr.fabric.links[uplink]
    feed(
        corr,
        [
            _nic(STALL + S // 2, "failed"),
            _event(STALL + S, LinkEventKind.DOWN, device=ref.b.device, iface=ref.b.interface),
            _timeout(STALL),
        ],
    )
    (v,) = corr.verdicts()
    assert _blamed(v) == uplink
    assert v.diagnosis == Diagnosis.SWITCH_PORT


def test_a_flap_is_a_switch_port_fault():
    _, v = _hung([_event(STALL - 5 * S, LinkEventKind.FLAP, 3.0)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.SWITCH_PORT


@pytest.mark.parametrize(
    "kinds",
    [
        [LinkEventKind.ERROR_BURST],
        [LinkEventKind.FEC_UNCORRECTABLE],
        [LinkEventKind.ERROR_BURST, LinkEventKind.FEC_UNCORRECTABLE],
    ],
    ids=["error-burst", "fec-uncorrectable", "both"],
)
def test_errors_on_a_link_that_stays_up_are_link_errors(kinds: list[LinkEventKind]):
    _, v = _hung([_event(STALL - (i + 1) * S, k, 20.0) for i, k in enumerate(kinds)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.LINK_ERRORS


def test_receive_power_falling_before_the_link_goes_down_is_a_dying_optic():
    _, v = _hung([_event(STALL - 30 * S, LinkEventKind.RX_POWER_LOW, -14.0), _down(STALL + S)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.OPTIC


def test_receive_power_falling_before_errors_on_several_counters_is_still_a_dying_optic():
    """How an optic dies: its receive power falls, then frames arrive corrupted, counted by
    every error counter the switch has. The falling power is the cause; the errors the
    symptom (`diagnose`: "errors alone a link that corrupts frames"). The diagnosis reads all
    of the culprit's anomalies, not only the four strongest that its evidence shows."""
    _, v = _hung(
        [
            _event(STALL - 60 * S, LinkEventKind.RX_POWER_LOW, -14.0),
            LinkEvent(STALL - 5 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 40.0, "in_errors"),
            LinkEvent(
                STALL - 5 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 40.0, "in_fcs_errors"
            ),
            LinkEvent(
                STALL - 5 * S, LEAF, LEAF_PORT, LinkEventKind.ERROR_BURST, 90.0, "symbol_errors"
            ),
            _event(STALL - 5 * S, LinkEventKind.FEC_UNCORRECTABLE, 30.0),
        ]
    )
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.OPTIC


def test_a_dark_receiver_after_the_link_went_down_is_not_a_dying_optic():
    """Receive power read after the link is down shows only that the far end stopped sending
    light, which any down link shows: it is the DOWN's consequence, not its cause."""
    _, v = _hung([_down(STALL + S), _event(STALL + 11 * S, LinkEventKind.RX_POWER_LOW, -40.0)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.SWITCH_PORT


def test_pauses_from_the_nic_at_its_leaf_port_are_a_pfc_source():
    """A PFC storm received by the leaf port facing the NIC: the NIC stopped draining."""
    _, v = _hung([_event(STALL - 10 * S, LinkEventKind.PFC_STORM, 50_000.0)])
    assert _blamed(v) == HOST_LINK
    assert v.diagnosis == Diagnosis.PFC_SOURCE


def test_an_xid_that_takes_a_gpu_off_the_bus_is_a_gpu_fault():
    xid = XidEvent(
        STALL + S // 5,
        JOB,
        HOST_B,
        "0000:3b:00",
        79,
        "GPU has fallen off the bus.",
        LogOrigin(f"{HOST_B}.dmesg", 1),
    )
    _, v = _hung([xid])
    assert v.cause_kind == CauseKind.NODE and v.cause_node == HOST_B
    assert v.diagnosis == Diagnosis.GPU


def test_a_stall_with_nothing_to_blame_has_no_diagnosis():
    # A DOWN on a cable the job does not use (HOST_A's rail 1) is nothing to blame either.
    _, v = _hung([_event(STALL + S, LinkEventKind.DOWN, device="leaf-su01-r1")])
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None and v.cause_node is None
    assert v.diagnosis == ""


def test_a_healthy_job_has_no_diagnosis():
    corr = Correlator(fabric())
    feed(corr, [*job_facts(), *_steady(10), _nic(T0 + 50 * S, "failed")])
    (v,) = corr.verdicts()
    assert v.state == JobState.HEALTHY and v.diagnosis == ""


def test_a_restored_job_view_keeps_the_nic_failure_behind_its_diagnosis():
    """A streaming worker that takes over the job's partition judges it the same way."""
    corr, v = _hung([_nic(STALL + S // 2, "failed"), _down(STALL + S)])
    assert v.diagnosis == Diagnosis.HOST_NIC
    view = corr.job_view(JOB)
    assert view is not None
    restored = JobView.restore(orjson.loads(orjson.dumps(view.snapshot())))
    assert restored.nic_events == view.nic_events
    other = Correlator(fabric())
    other.observe(_down(STALL + S))
    again = other.adopt(restored)
    assert again.diagnosis == Diagnosis.HOST_NIC
    assert _blamed(again) == HOST_LINK


# -- link state changes the job survived --------------------------------------------------------

REPORTS = 10
LAST = T0 + REPORTS * EVERY_S * S  # the last step report of `_steady(REPORTS)`


def _silent_after(records: list) -> tuple[Correlator, list[Verdict]]:
    """The job reports every EVERY_S seconds until LAST, then nothing; `records` around it.
    Returns every verdict published on the way to ten minutes of silence."""
    corr = Correlator(fabric())
    out = feed(corr, [*job_facts(), *_steady(REPORTS), *records])
    out += corr.advance(LAST + (OVERDUE_S + 1) * S)
    out += corr.advance(LAST + 600 * S)
    return corr, out


@pytest.mark.parametrize(
    "events",
    [
        [_down(LAST - 2 * EVERY_S * S)],
        [_down(LAST - 3 * EVERY_S * S - 4 * S), _event(LAST - 3 * EVERY_S * S, LinkEventKind.UP)],
        [_event(LAST - 25 * S, LinkEventKind.FLAP, 3.0)],
    ],
    ids=["down", "down-and-up", "flap"],
)
def test_a_link_change_the_job_reported_steps_through_does_not_explain_its_silence(
    events: list[LinkEvent],
):
    corr, published = _silent_after(events)
    assert all(v.state != JobState.STALLED for v in published)
    (v,) = corr.verdicts()
    assert v.state != JobState.STALLED
    assert v.cause_kind == CauseKind.UNKNOWN and v.cause_link is None
    assert v.diagnosis == ""


def test_the_same_down_just_after_the_last_report_explains_the_silence():
    corr, _ = _silent_after([_down(LAST + 2 * S)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert _blamed(v) == HOST_LINK
    assert v.decided_at_ns == LAST + OVERDUE_S * S
    assert v.diagnosis == Diagnosis.SWITCH_PORT


@pytest.mark.parametrize(
    ("down_at", "blamed"),
    [(LAST - 2 * EVERY_S * S, None), (LAST + 4 * S, HOST_LINK)],
    ids=["survived", "after-the-last-report"],
)
def test_a_watchdog_is_not_blamed_on_a_down_the_job_reported_steps_through(
    down_at: int, blamed: str | None
):
    corr = Correlator(fabric())
    # The collective that hangs started after the last report.
    feed(corr, [*job_facts(), *_steady(REPORTS), _down(down_at), _timeout(LAST + 5 * S)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.stalled_at_ns == LAST + 5 * S
    assert _blamed(v) == blamed
    if blamed is None:
        assert v.cause_kind == CauseKind.UNKNOWN
        assert HOST_LINK not in {c.link.link_id for c in v.candidates if c.link is not None}


def _every_step(count: int) -> list[Progress]:
    """Step reports every EVERY_S seconds, one step apart: each report is one whole step."""
    return [_report(T0 + i * EVERY_S * S, i) for i in range(1, count + 1)]


@pytest.mark.parametrize(
    ("reports", "down_before_last_s", "blamed"),
    [
        (_steady(REPORTS), EVERY_S // 2, None),
        (_steady(REPORTS), EVERY_S // 10, HOST_LINK),
        (_every_step(REPORTS), EVERY_S // 2, HOST_LINK),
    ],
    ids=["steps-after-it", "within-the-last-step", "reports-of-one-step"],
)
def test_a_job_that_finished_a_whole_step_after_a_down_survived_it(
    reports: list[Progress], down_before_last_s: int, blamed: str | None
):
    # Ten steps per report: the last report vouches for its last step (EVERY_S / 10 seconds),
    # not for the whole interval; a trainer reporting every step vouches for the interval.
    corr = Correlator(fabric())
    down = _down(LAST - down_before_last_s * S)
    feed(corr, [*job_facts(), *reports, down, _timeout(LAST + 1 * S)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert _blamed(v) == blamed


SLACK_S = JudgingRules().survival_slack_s


@pytest.mark.parametrize(
    ("down_before_last_s", "blamed"),
    [(EVERY_S + SLACK_S - 1, HOST_LINK), (EVERY_S + SLACK_S + 1, None)],
    ids=["within-the-clocks-slack", "beyond-it"],
)
def test_a_report_of_one_step_vouches_for_its_step_less_the_clocks_slack(
    down_before_last_s: float, blamed: str | None
):
    """A trainer reporting every step (HF at one step a second): its last report is stamped by
    a host whose clock, or log shipper, may be seconds off the switch's. A down stamped a whole
    step and a little before it may still have been during that step."""
    corr = Correlator(fabric())
    down = _down(LAST - int(down_before_last_s * S))
    feed(corr, [*job_facts(), *_every_step(REPORTS), down, _timeout(LAST + 1 * S)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert _blamed(v) == blamed


@pytest.mark.parametrize(
    ("hung_after_down_s", "blamed"),
    [(7, None), (1, HOST_LINK)],
    ids=["collectives-finished-after-it", "the-next-collective-hung"],
)
def test_collectives_that_finished_after_a_down_show_the_job_survived_it(
    hung_after_down_s: int, blamed: str | None
):
    # No step report after the down; the watchdog's hung collective started after it, and
    # every collective before that one finished.
    corr = Correlator(fabric())
    down_at = LAST + 1 * S
    feed(corr, [*job_facts(), *_steady(REPORTS), _down(down_at)])
    feed(corr, [_timeout(down_at + hung_after_down_s * S)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert _blamed(v) == blamed


# -- a run that finished ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total_steps", "stalls"),
    [(REPORTS * 10, False), (REPORTS * 10 + 10, True)],
    ids=["last-step-reported", "steps-left"],
)
def test_silence_after_the_runs_last_step_is_not_a_stall(total_steps: int, stalls: bool):
    corr = Correlator(fabric())
    published = feed(corr, [*job_facts(), *_steady(REPORTS, total_steps)])
    assert corr.job_view(JOB) is not None
    published += feed(corr, [_down(LAST + 2 * S)])
    published += corr.advance(LAST + (OVERDUE_S + 1) * S)
    published += corr.advance(LAST + 3600 * S)
    published += corr.reevaluate()
    (v,) = corr.verdicts()
    if stalls:
        assert v.state == JobState.STALLED and _blamed(v) == HOST_LINK
        assert v.decided_at_ns == LAST + OVERDUE_S * S
    else:
        assert all(u.state == JobState.HEALTHY for u in published)
        assert v.state == JobState.HEALTHY and v.cause_link is None


# -- the pace floor of the stall time -----------------------------------------------------------


def _net_error(at_ns: int) -> NetError:
    return NetError(
        at_ns,
        JOB,
        HOST_A,
        100,
        "ib-completion",
        None,
        "Got completion from peer with status=12",
        LogOrigin(f"{HOST_A}.log", 900),
    )


@pytest.mark.parametrize(
    ("reports", "error_after_s", "stalled_after_s"),
    [
        (REPORTS, 40, EVERY_S),  # the report that never came, not the late transport error
        (REPORTS, 8, 8),  # within an interval of the last report: the error dates it
        (2, 40, 40),  # two reports tell no cadence: no floor
    ],
    ids=["floored", "error-within-an-interval", "no-cadence"],
)
def test_a_late_transport_error_dates_the_stall_no_later_than_the_missed_report(
    reports: int, error_after_s: int, stalled_after_s: int
):
    corr = Correlator(fabric())
    last = T0 + reports * EVERY_S * S
    feed(corr, [*job_facts(), *_steady(reports), _net_error(last + error_after_s * S)])
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.stalled_at_ns == last + stalled_after_s * S


def test_a_watchdog_that_started_before_the_missed_report_dates_the_stall():
    corr = Correlator(fabric())
    feed(
        corr,
        [*job_facts(), *_steady(REPORTS), _net_error(LAST + 40 * S), _timeout(LAST + 3 * S)],
    )
    (v,) = corr.verdicts()
    assert v.state == JobState.STALLED
    assert v.stalled_at_ns == LAST + 3 * S


# -- through the simulator ----------------------------------------------------------------------


#: The incidents test_replay_e2e replays too (tests.simulations: simulated and replayed once
#: per session); a link-down on a host's cable, which seed 11's is not.
SEEDS = {Fault.LINK_DOWN: 21}


@pytest.mark.parametrize(
    ("fault", "diagnosis"),
    [
        (Fault.NIC_DOWN, Diagnosis.HOST_NIC),
        (Fault.LINK_DOWN, Diagnosis.SWITCH_PORT),
        (Fault.GPU_XID, Diagnosis.GPU),
        (Fault.PFC_STORM, Diagnosis.PFC_SOURCE),
    ],
    ids=str,
)
def test_replay_of_a_simulated_incident_diagnoses_the_fault(fault: Fault, diagnosis: Diagnosis):
    seed = SEEDS.get(fault, 11)
    truth = simulations.truth(64, fault, seed)
    if fault is Fault.LINK_DOWN:
        assert truth["fault_link"]["a"]["device"].startswith("hgx")
    report = simulations.report(64, fault, seed)
    stalled = [j for j, want in truth["jobs"].items() if want["state"] == "stalled"]
    assert len(stalled) == 1
    by_job = {v.job_id: v for v in report.verdicts}
    v = by_job[stalled[0]]
    assert v.state == JobState.STALLED
    if truth["fault_link"] is not None:
        assert _blamed(v) == truth["fault_link"]["id"]
    else:
        assert v.cause_node == truth["fault_node"]
    assert v.diagnosis == diagnosis
    if diagnosis is Diagnosis.HOST_NIC:
        assert "nic-failed" in _kinds(v)
    for job_id, other in by_job.items():
        if job_id != stalled[0]:
            assert other.state == JobState.HEALTHY and other.diagnosis == ""
