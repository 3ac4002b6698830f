"""The next steps a verdict spells out (drain, exclude, cordon, shut a port), on the 64-node
reference fabric: which device they name, which command, and when there are none."""

from __future__ import annotations

import dataclasses

import pytest
from attribution_support import HOST_A, HOST_LINK, LEAF, LEAF_PORT, T0, fabric

from railtrace.streams.attribution.nextstep import SHOWN_JOBS, next_steps
from railtrace.streams.records import CauseKind, JobState, Verdict
from railtrace.topology.ends import Endpoint, LinkRef

UPLINK = LinkRef(
    "leaf-su01-r0:swp33--spine-01:Ethernet0",
    Endpoint("leaf-su01-r0", "swp33"),
    Endpoint("spine-01", "Ethernet0"),
)
HOST_CABLE = LinkRef(HOST_LINK, Endpoint(HOST_A, "mlx5_0"), Endpoint(LEAF, LEAF_PORT))


def _verdict(**changes: object) -> Verdict:
    v = Verdict("4861301", JobState.STALLED, T0, T0, CauseKind.LINK, UPLINK, None, 0.9)
    return dataclasses.replace(v, **changes)  # type: ignore[arg-type]


def _role(device: str):  # type: ignore[no-untyped-def]
    return fabric().role(device)


def test_a_gpu_node_is_drained_excluded_and_cordoned_with_the_verdict_as_reason() -> None:
    v = _verdict(cause_kind=CauseKind.NODE, cause_link=None, cause_node=HOST_A, diagnosis="gpu")
    steps = next_steps(v, _role)
    assert [(s.action, s.command) for s in steps] == [
        (
            "drain",
            f'scontrol update NodeName={HOST_A} State=DRAIN Reason="railtrace: job 4861301 '
            'stalled (gpu)"',
        ),
        ("exclude", f"sbatch --exclude={HOST_A} ..."),
        ("cordon", f"kubectl cordon {HOST_A}"),
    ]


@pytest.mark.parametrize("flipped", [False, True])
def test_a_host_cable_takes_its_host_out_and_names_the_cable_whichever_end_is_a(
    flipped: bool,
) -> None:
    cable = HOST_CABLE if not flipped else LinkRef(HOST_LINK, HOST_CABLE.b, HOST_CABLE.a)
    steps = next_steps(_verdict(cause_link=cable), _role)
    assert [s.action for s in steps] == ["drain", "exclude", "cordon", "ticket"]
    assert steps[1].command == f"sbatch --exclude={HOST_A} ..."
    assert f"{HOST_A} mlx5_0 to {LEAF} {LEAF_PORT}" in steps[3].what


def test_an_uplink_is_shut_at_its_leaf_end_after_naming_the_other_jobs_crossing_it() -> None:
    steps = next_steps(_verdict(), _role, crossing=["4861301", "4895632", "4840660"])
    assert [s.action for s in steps] == ["check-jobs", "shut-port"]
    assert "4895632, 4840660." in steps[0].what and "4861301" not in steps[0].what
    assert steps[1].command == "nv set interface swp33 link state down && nv config apply"
    assert "leaf-su01-r0" in steps[1].what


def test_many_crossing_jobs_are_counted_not_all_listed() -> None:
    others = [f"j{i}" for i in range(SHOWN_JOBS + 5)]
    (check, _) = next_steps(_verdict(), _role, crossing=others)
    assert check.what.endswith(f"j{SHOWN_JOBS - 1} and 5 more.")


@pytest.mark.parametrize(
    ("port", "command"),
    [
        ("Ethernet104", "sudo config interface shutdown Ethernet104"),
        ("Ethernet1/7", "configure terminal\ninterface Ethernet1/7\nshutdown"),
        ("xe-0/0/3", ""),
    ],
)
def test_the_shut_command_follows_the_switch_os_its_port_name_suggests(
    port: str, command: str
) -> None:
    spine_side_first = LinkRef("l", Endpoint("spine-01", "Ethernet0"), Endpoint(LEAF, port))
    (_, shut) = next_steps(_verdict(cause_link=spine_side_first), _role)
    assert shut.command == command
    assert port in shut.what and LEAF in shut.what


@pytest.mark.parametrize(
    "changes",
    [
        {"tied": (UPLINK.link_id, HOST_LINK)},
        {"cause_kind": CauseKind.UNKNOWN, "cause_link": None},
        {"state": JobState.HEALTHY},
        {"cause_link": LinkRef("x", Endpoint("nowhere-1", "p1"), Endpoint("nowhere-2", "p2"))},
    ],
)
def test_a_tie_an_unknown_cause_a_healthy_job_or_an_unknown_device_has_no_step(
    changes: dict[str, object],
) -> None:
    assert next_steps(_verdict(**changes), _role) == ()
