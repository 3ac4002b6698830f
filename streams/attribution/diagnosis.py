"""Which side of a blamed link failed (host NIC, optic, switch port, PFC source, a lower
speed, errors), or a GPU for a blamed node: what the engineer is sent to look at.

Apart from the verdict because it reads the host's kernel and the culprit's own anomalies
only once a culprit is chosen. Pure: everything is passed in.
"""

from __future__ import annotations

from railtrace.streams.attribution import evidence as as_evidence
from railtrace.streams.attribution.candidates import Observations
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.streams.attribution.stall import seen
from railtrace.streams.records import Candidate, CauseKind, Diagnosis, Evidence, LinkEventKind
from railtrace.topology.attrs import Role
from railtrace.topology.fabric import Fabric

#: Anomalies of a link corrupting what it carries: frames lost, or the FEC straining.
LOSSY_KINDS = frozenset(
    {LinkEventKind.ERROR_BURST, LinkEventKind.PRE_FEC_ERRORS, LinkEventKind.FEC_UNCORRECTABLE}
)


def diagnose(
    best: Candidate,
    obs: Observations,
    view: JobView,
    fabric: Fabric,
    profile: AttributionProfile,
    stalled_at: int,
    upto_ns: int | None,
) -> tuple[Diagnosis | None, Evidence | None]:
    """Which side of the culprit failed, from its evidence and the host's kernel.

    A switch sees its port go down whichever end failed, so only the host can say the NIC
    itself died (its driver's health poller or a fatal error, around the stall). Otherwise the
    culprit's own anomalies tell: receive power that fell is a dying optic, pauses spreading
    from it a device that stopped draining, down or flapping the switch side of the link,
    errors alone a link that corrupts frames.
    """
    if best.kind == CauseKind.NODE:
        return Diagnosis.GPU, None
    if best.link is None:
        return None, None
    w = profile.window
    lo = stalled_at - int(w.lookback_s * 1e9)
    hi = stalled_at + int(w.lookahead_s * 1e9)
    hosts = {e.device for e in (best.link.a, best.link.b) if fabric.role(e.device) == Role.HOST}
    failed = sorted(
        (
            n
            for n in view.nic_events
            if n.host in hosts
            and n.state == "failed"
            and lo <= n.ts_ns <= hi
            and seen(n.ts_ns, upto_ns)
        ),
        key=lambda n: (n.ts_ns, n.origin.source, n.origin.line_no),
    )
    if failed:
        return Diagnosis.HOST_NIC, as_evidence.nic(failed[0])
    lid = best.link.link_id
    events = obs.link_events(lid)
    kinds = {e.kind for e in events}
    # A receiver goes dark once its link is down, whichever end failed: only receive power
    # that fell before the link went down says the optic was dying.
    went_down = min((e.ts_ns for e in events if e.kind == LinkEventKind.DOWN), default=None)
    if any(
        e.kind == LinkEventKind.RX_POWER_LOW and (went_down is None or e.ts_ns < went_down)
        for e in events
    ):
        return Diagnosis.OPTIC, None
    if lid in obs.pfc_sources or (LinkEventKind.PFC_STORM in kinds and lid not in obs.pfc_victims):
        return Diagnosis.PFC_SOURCE, None
    if LinkEventKind.SPEED_DOWN in kinds:
        return Diagnosis.LINK_SPEED, None
    if kinds & {LinkEventKind.DOWN, LinkEventKind.FLAP}:
        return Diagnosis.SWITCH_PORT, None
    if kinds & LOSSY_KINDS:
        return Diagnosis.LINK_ERRORS, None
    return None, None
