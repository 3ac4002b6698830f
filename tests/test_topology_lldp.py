"""The cabling plan against LLDP: a rail swap, an empty port in use, a dark planned port."""

from __future__ import annotations

from railtrace.topology import rail_optimized
from railtrace.topology.ends import CablingKind, Endpoint
from railtrace.topology.lldp import CablingDifference, Neighbour, check_cabling

PLAN = rail_optimized(64).plan


def _as_wired() -> list[Neighbour]:
    """What every switch port of the plan reports when it is cabled exactly as planned."""
    out = []
    for c in PLAN.cables:
        out += [Neighbour(c.a, c.b), Neighbour(c.b, c.a)]
    return [n for n in out if n.local.device.startswith(("leaf", "spine"))]


def _switches() -> set[str]:
    return {n.local.device for n in _as_wired()}


def test_a_fabric_cabled_as_planned_has_no_differences() -> None:
    assert check_cabling(PLAN, _as_wired(), _switches()) == []


def test_two_nics_swapped_between_rails_are_miswired_on_both_leaves() -> None:
    nic0, nic1 = Endpoint("hgx-su01-01", "mlx5_0"), Endpoint("hgx-su01-01", "mlx5_1")
    leaf_of = {n.remote: n.local for n in _as_wired() if n.remote in (nic0, nic1)}
    seen = [n for n in _as_wired() if n.remote not in (nic0, nic1)]
    seen += [Neighbour(leaf_of[nic0], nic1), Neighbour(leaf_of[nic1], nic0)]
    assert check_cabling(PLAN, seen, _switches()) == sorted(
        [
            CablingDifference(leaf_of[nic0], CablingKind.MISWIRED, nic0, nic1),
            CablingDifference(leaf_of[nic1], CablingKind.MISWIRED, nic1, nic0),
        ]
    )


def test_a_neighbour_on_an_unplanned_port_is_unexpected_and_a_dark_port_missing() -> None:
    wired = _as_wired()
    dark = wired[0]
    spare = Endpoint(dark.local.device, "swp99")
    stranger = Endpoint("hgx-lab-01", "mlx5_0")
    seen = [*wired[1:], Neighbour(spare, stranger)]
    diffs = check_cabling(PLAN, seen, _switches())
    assert diffs == sorted(
        [
            CablingDifference(spare, CablingKind.UNEXPECTED, None, stranger),
            CablingDifference(dark.local, CablingKind.MISSING, dark.remote, None),
        ]
    )
    (unexpected,) = [d for d in diffs if d.kind is CablingKind.UNEXPECTED]
    assert unexpected.describe() == (
        f"{spare.device}:swp99 has no cable in the plan but LLDP sees hgx-lab-01:mlx5_0"
    )


def test_silence_from_a_device_that_reports_no_lldp_is_not_called_missing() -> None:
    wired = _as_wired()
    leaf = wired[0].local.device
    seen = [n for n in wired if n.local.device != leaf]
    assert check_cabling(PLAN, seen, _switches() - {leaf}) == []
    missing = check_cabling(PLAN, seen, _switches())
    assert missing and {d.port.device for d in missing} == {leaf}
    assert {d.kind for d in missing} == {CablingKind.MISSING}
