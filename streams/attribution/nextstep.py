"""What the engineer on call does next about a verdict, spelled out as commands to copy.

railtrace never runs them: draining a node or shutting a port moves other people's jobs, and
the person on call must decide. What it can do is spare them the lookup at 3 a.m.:

- a node (a GPU off the bus, an ECC error): drain it in Slurm with the verdict as the reason,
  resubmit the job with the node excluded, or cordon it on Kubernetes;
- a host cable (the host's NIC, its optic, its leaf port): the same for its host, since the
  job cannot run on that host until the cable is fixed; the leaf port is named for the
  ticket;
- a switch-to-switch link: shut it at its lower-tier end (the others of its ECMP group take
  the traffic) with the command of the switch OS its port names suggest, after looking at
  the other jobs whose traffic may cross it.

A tie or an unknown cause has no next step: it would send someone to the wrong place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from railtrace.streams.records import CauseKind, JobState, Verdict
from railtrace.topology.attrs import Role
from railtrace.topology.ends import Endpoint

_TIER = {Role.LEAF: 0, Role.SPINE: 1, Role.SUPER_SPINE: 2, Role.SWITCH: 3}
#: How many jobs crossing a link the step names before it says "and N more".
SHOWN_JOBS = 10


@dataclass(frozen=True, slots=True)
class NextStep:
    """One thing to do: `action` a short key, `what` why and what it does, `command` to copy
    ("" when the step is a check, not a command)."""

    action: str
    what: str
    command: str


def next_steps(
    verdict: Verdict,
    role: Callable[[str], Role | None] | None,
    crossing: Sequence[str] = (),
) -> tuple[NextStep, ...]:
    """The next steps for `verdict`; `role` tells hosts from switches (the fabric's; None when
    no fabric is known, and then only a node verdict has steps), and
    `crossing` lists the other jobs whose traffic may cross a blamed link, likeliest first."""
    if verdict.state not in (JobState.STALLED, JobState.SLOW) or verdict.tied:
        return ()
    reason = _reason(verdict)
    if verdict.cause_kind == CauseKind.NODE and verdict.cause_node:
        return _host_steps(verdict.cause_node, reason, verdict.job_id)
    link = verdict.cause_link
    if verdict.cause_kind != CauseKind.LINK or link is None or role is None:
        return ()
    hosts = [e for e in (link.a, link.b) if role(e.device) == Role.HOST]
    if hosts:
        host = hosts[0]
        switch = link.b if host == link.a else link.a
        steps = _host_steps(host.device, reason, verdict.job_id)
        return (
            *steps,
            NextStep(
                "ticket",
                f"The cable to fix: {host.device} {host.interface} to {switch.device} "
                f"{switch.interface}.",
                "",
            ),
        )
    ends = [e for e in (link.a, link.b) if role(e.device) in _TIER]
    if len(ends) != 2:
        return ()  # a device the fabric does not know: no command for a guess
    lower = min(ends, key=lambda e: (_TIER[role(e.device) or Role.SWITCH], e.device))
    others = [j for j in crossing if j != verdict.job_id]
    if others:
        named = ", ".join(others[:SHOWN_JOBS])
        more = f" and {len(others) - SHOWN_JOBS} more" if len(others) > SHOWN_JOBS else ""
        check = NextStep(
            "check-jobs",
            f"Other jobs whose traffic may cross this link and will move when it is shut: "
            f"{named}{more}.",
            "",
        )
    else:
        check = NextStep("check-jobs", "No other job's traffic is known to cross this link.", "")
    return (check, _shut(lower))


def _reason(v: Verdict) -> str:
    what = v.diagnosis or str(v.cause_kind)
    return f"railtrace: job {v.job_id} {v.state} ({what})"


def _host_steps(host: str, reason: str, job_id: str) -> tuple[NextStep, ...]:
    return (
        NextStep(
            "drain",
            f"Drain {host} so Slurm starts nothing new on it; running jobs finish.",
            f'scontrol update NodeName={host} State=DRAIN Reason="{_quoted(reason)}"',
        ),
        NextStep(
            "exclude",
            f"Resubmit job {job_id} without {host}.",
            f"sbatch --exclude={host} ...",
        ),
        NextStep(
            "cordon",
            f"On Kubernetes: keep new pods off {host}.",
            f"kubectl cordon {host}",
        ),
    )


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


_CUMULUS = re.compile(r"^swp\d+(s\d+)?$")
_SONIC = re.compile(r"^Ethernet\d+$")
_SLASHED = re.compile(r"^(Ethernet|Eth)\d+(/\d+)+$")


def _shut(end: Endpoint) -> NextStep:
    """Shut one end, in the command of the switch OS its port name suggests (Cumulus `swpN`,
    SONiC `EthernetN`, EOS and NX-OS `Ethernet1/7`); a name none of them uses gets words."""
    port = end.interface
    if _CUMULUS.match(port):
        command = f"nv set interface {port} link state down && nv config apply"
        os_name = "Cumulus Linux (NVUE)"
    elif _SONIC.match(port):
        command = f"sudo config interface shutdown {port}"
        os_name = "SONiC"
    elif _SLASHED.match(port):
        command = f"configure terminal\ninterface {port}\nshutdown"
        os_name = "Arista EOS / Cisco NX-OS"
    else:
        return NextStep(
            "shut-port",
            f"Shut port {port} on {end.device} (its switch OS is not known from the port name).",
            "",
        )
    return NextStep(
        "shut-port",
        f"Shut {port} on {end.device} ({os_name}, from its port name); the link's ECMP "
        "siblings take its traffic.",
        command,
    )
