"""The quarantine policy: which Xids take a node out, when counted ones add up, and that a node
suspected of silent data corruption stays out until an operator releases it."""

from __future__ import annotations

import orjson
import pytest
from logs_support import of_type, parse_real

from railtrace.collectors.hosts import (
    CountRule,
    QuarantineConfig,
    QuarantinePolicy,
    XidObservation,
)
from railtrace.streams.records import XidEvent

S = 1_000_000_000
T0 = 1_800_000_000 * S


def xid(code: int, t_s: float = 0, node: str = "gpu7", detail: str = "") -> XidObservation:
    return XidObservation(node, T0 + int(t_s * S), code, "0000:3b:00", detail)


@pytest.mark.parametrize("code", [79, 48, 64])
def test_severe_xids_quarantine_at_once(code: int) -> None:
    p = QuarantinePolicy(QuarantineConfig())
    d = p.observe(xid(code))
    assert d is not None
    assert (d.action, d.node, d.sdc, d.evidence) == ("quarantine", "gpu7", False, (xid(code),))
    assert f"Xid {code}" in d.reason
    assert p.is_quarantined("gpu7") and not p.is_quarantined("gpu8")


@pytest.mark.parametrize(
    "detail",
    [
        "pid=77, name=python3, An uncorrectable double bit error (DBE) has been detected",
        "Row Remapper: New row marked for remapping failed, reset gpu",
    ],
)
def test_double_bit_and_row_remap_failure_details_quarantine_whatever_the_code(
    detail: str,
) -> None:
    p = QuarantinePolicy(QuarantineConfig())
    assert p.observe(xid(43, detail="Ch 00000008")) is None
    d = p.observe(xid(92, detail=detail))
    assert d is not None and d.action == "quarantine"


def test_counted_xids_quarantine_at_the_agreed_count_within_the_window() -> None:
    p = QuarantinePolicy(QuarantineConfig())
    assert p.observe(xid(13, 0)) is None
    assert p.observe(xid(13, 1200)) is None
    assert not p.is_quarantined("gpu7")
    d = p.observe(xid(13, 2400))
    assert d is not None
    assert d.evidence == (xid(13, 0), xid(13, 1200), xid(13, 2400))
    assert "3 x Xid 13 within 3600 s" in d.reason


def test_counted_xids_spread_wider_than_the_window_do_not_quarantine() -> None:
    p = QuarantinePolicy(QuarantineConfig())
    for t in (0, 2000, 4000, 6000, 8000):  # never three within an hour
        assert p.observe(xid(31, t)) is None
    # Different Xids are counted by their own rules by default, and per node.
    assert p.observe(xid(13, 8001)) is None
    assert p.observe(xid(31, 8002, node="gpu8")) is None
    assert p.quarantined() == []


def test_count_rules_are_configurable() -> None:
    p = QuarantinePolicy(QuarantineConfig(counted=[CountRule(xids=[13, 31], count=2, window_s=60)]))
    assert p.observe(xid(13, 0)) is None
    d = p.observe(xid(31, 59))
    assert d is not None and "Xid 13/31" in d.reason


def test_sdc_suspect_stays_quarantined_until_released() -> None:
    p = QuarantinePolicy(QuarantineConfig())
    d = p.observe(xid(95, 0, detail="Uncontained: FBHUB. RST: Yes, D-RST: No"))
    assert d is not None and d.sdc
    assert p.clear("gpu7", T0 + S) is None  # a health check does not lift it
    assert p.is_sdc_suspect("gpu7")
    r = p.release("gpu7", T0 + 2 * S, by="alice")
    assert r is not None
    assert (r.action, r.reason, r.sdc, r.evidence) == (
        "release",
        "released by alice",
        True,
        d.evidence,
    )
    assert not p.is_quarantined("gpu7")
    assert p.release("gpu7", T0 + 3 * S) is None


def test_other_quarantines_lift_on_a_health_signal() -> None:
    p = QuarantinePolicy(QuarantineConfig())
    p.observe(xid(79))
    d = p.clear("gpu7", T0 + S)
    assert d is not None and (d.action, d.sdc) == ("release", False)
    assert not p.is_quarantined("gpu7")


def test_an_sdc_xid_on_a_quarantined_node_is_announced_and_sticks() -> None:
    p = QuarantinePolicy(QuarantineConfig())
    assert p.observe(xid(79, 0)) is not None
    assert p.observe(xid(79, 1)) is None  # already out: no new decision
    d = p.observe(xid(94, 2))
    assert d is not None and d.sdc and d.evidence == (xid(79, 0), xid(79, 1), xid(94, 2))
    assert p.clear("gpu7", T0 + 3 * S) is None


def test_snapshot_restore_round_trips_through_json() -> None:
    cfg = QuarantineConfig()
    p = QuarantinePolicy(cfg)
    p.observe(xid(13, 0))
    p.observe(xid(13, 10))
    p.observe(xid(95, 5, node="gpu9"))
    snap = orjson.loads(orjson.dumps(p.snapshot()))
    q = QuarantinePolicy.restore(cfg, snap)
    assert q.snapshot() == p.snapshot()
    assert q.is_sdc_suspect("gpu9") and not q.is_quarantined("gpu7")
    d = q.observe(xid(13, 20))  # the two counted before the restart still count
    assert d is not None and len(d.evidence) == 3


@pytest.mark.parametrize("snap", [{"v": 2, "nodes": {}}, {"v": 1, "nodes": {"n": {}}}, []])
def test_unreadable_snapshots_are_refused(snap: object) -> None:
    with pytest.raises(ValueError):
        QuarantinePolicy.restore(QuarantineConfig(), snap)  # type: ignore[arg-type]


def test_xids_caused_by_a_previous_xid_are_not_counted_as_faults_of_their_own() -> None:
    """NVIDIA/open-gpu-kernel-modules#1150: four Xid 45, each `caused by previous Xid 145` or
    149 (the NVLink failures). Counted as Xid 45s they would quarantine the node three times
    over for the cleanup after one fault."""
    facts, _ = parse_real("ogkm_1150_kernel_prefix_xid.log")
    rule = QuarantineConfig(counted=[CountRule(xids=[45], count=3, window_s=60)])

    def seen(caused_by: bool) -> list[XidObservation]:
        return [
            XidObservation(
                "gpu7", T0 + i * S, x.xid, x.pci, x.detail, x.caused_by if caused_by else None
            )
            for i, x in enumerate(of_type(facts, XidEvent))
        ]

    consequences = QuarantinePolicy(rule)
    assert [consequences.observe(o) for o in seen(caused_by=True)] == [None] * 4
    assert consequences.quarantined() == []
    # The same Xids with nothing said of their cause do add up.
    faults = QuarantinePolicy(rule)
    assert any(faults.observe(o) is not None for o in seen(caused_by=False))


def test_the_cause_of_an_xid_survives_the_policys_snapshot() -> None:
    p = QuarantinePolicy(QuarantineConfig())
    o = XidObservation("gpu7", T0, 79, "0000:3b:00", "fallen off the bus", caused_by=154)
    p.observe(o)
    restored = QuarantinePolicy.restore(
        QuarantineConfig(), orjson.loads(orjson.dumps(p.snapshot()))
    )
    assert restored.snapshot() == p.snapshot()
    assert XidObservation.from_json(o.to_json()) == o
