"""The candidates of a verdict: one per link with anomalies on the job's paths, scored by
what they showed and how likely the job's traffic crossed them, and one per host with Xids.

Apart from the verdict because scoring one candidate is its own set of rules (consequences
counted once, a member that lost no traffic discounted, boosts for NCCL's word and a PFC
source); the verdict only ranks what these give. Pure: everything is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from railtrace.streams.attribution import evidence as as_evidence
from railtrace.streams.attribution.history import order
from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.streams.attribution.scoring import combine, path_factor
from railtrace.streams.attribution.stall import fault_of, seen
from railtrace.streams.records import Candidate, CauseKind, Evidence, LinkEvent, LinkEventKind
from railtrace.topology.fabric import Fabric

if TYPE_CHECKING:
    from railtrace.streams.attribution.quiet import QuietLinks

NS = 1_000_000_000
#: Anomalies that a link shows because of trouble elsewhere (see `link_score`).
CONSEQUENCES = frozenset({LinkEventKind.TRAFFIC_DROP, LinkEventKind.PFC_PAUSING})
#: Anomalies that take capacity from a link, so that its traffic falls with them.
CAPACITY_LOSSES = frozenset({LinkEventKind.DOWN, LinkEventKind.FLAP, LinkEventKind.SPEED_DOWN})


@dataclass(frozen=True, slots=True)
class Observations:
    """What the correlator hands over: the job's links, the anomalies on them in the window,
    and the links that NCCL's own error messages point at."""

    weights: dict[str, float]
    events: dict[str, list[LinkEvent]]
    #: link id -> event time of the first NCCL transport error naming a peer across it
    corroborated: dict[str, int]
    #: link id -> (time, why) for links whose PFC storm was passed on from elsewhere
    pfc_victims: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: link id -> (time, why) for links where a PFC storm seen on others started
    pfc_sources: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: The weights are the placement's mesh, not flows the job's channels showed.
    paths_inferred: bool = False
    #: For a slowdown, the earliest time it may have begun: anomalies from then to the
    #: trouble's time count as at it (None: the trouble began at its time).
    onset_from_ns: int | None = None
    #: The job's links holding nothing but consequences, read as far as needed (see
    #: `quiet`); `events` holds the others. None: `events` holds every link.
    quiet: QuietLinks | None = None

    def link_events(self, lid: str) -> list[LinkEvent]:
        """A link's anomalies in the window, wherever they are held."""
        hits = self.events.get(lid)
        if hits is None and self.quiet is not None:
            hits = self.quiet.events_of(lid)
        return hits or []


def _onset(event_ns: int, stalled_at: int, onset_from_ns: int | None) -> int:
    """The time of the trouble an anomaly at `event_ns` is measured from: itself when it lies
    in the span the trouble may have begun in, else that span's nearer end."""
    if onset_from_ns is None:
        return stalled_at
    return min(max(event_ns, onset_from_ns), stalled_at)


def drop_slack_ns(profile: AttributionProfile) -> int:
    """How long before the estimated stall a traffic drop still counts as falling with it, in
    ns: the estimate can be late by a sampling interval."""
    return int(profile.judging.drop_slack_s * NS)


def carried_job(events: list[LinkEvent], stalled_at: int, slow: bool, slack_ns: int) -> bool:
    """Whether the link's traffic fell with the job's trouble, so the job's flow was on it.

    A stalled job's traffic stops on every link it used. A slowed job's never stops, so a
    collapse on a link that kept its capacity is some other job's traffic stopping (two faults
    at once): for a slowdown only a link that lost capacity (down, flapping, a lower speed)
    shows by its drop that the job's flow was on it.
    """
    dropped = any(
        e.kind == LinkEventKind.TRAFFIC_DROP and e.ts_ns >= stalled_at - slack_ns for e in events
    )
    return dropped and (not slow or any(e.kind in CAPACITY_LOSSES for e in events))


@dataclass(frozen=True, slots=True)
class LinkScore:
    """A link candidate's score and what its evidence is made of, before that evidence is
    written out: a large job's paths hold hundreds of links with some anomaly, every one is
    scored each time the verdict is rebuilt, and the verdict shows only its first few."""

    lid: str
    score: float
    #: the anomalies that scored, with their scores
    scored: list[tuple[float, LinkEvent]]
    victim: tuple[int, str] | None
    source: tuple[int, str] | None
    corroborated: bool

    def candidate(self, fabric: Fabric, stalled_at: int) -> Candidate:
        """The candidate as a verdict lists it, with its strongest anomalies as evidence."""
        lid = self.lid
        evidence = [
            as_evidence.link_event(e, lid)
            for _, e in sorted(self.scored, key=lambda se: (-se[0], order(se[1])))[:4]
        ]
        if self.victim is not None:
            evidence.append(as_evidence.pfc_victim(self.victim[0], lid, self.victim[1]))
        if self.source is not None:
            evidence.append(as_evidence.pfc_source(self.source[0], lid, self.source[1]))
        if self.corroborated:
            evidence.append(
                Evidence(
                    stalled_at,
                    "nccl",
                    "peer-error",
                    lid,
                    "an NCCL transport error on the wire's side names the pair (or the NIC) "
                    "whose traffic crosses this link",
                )
            )
        return Candidate(
            CauseKind.LINK, self.score, link=fabric.links[lid], evidence=tuple(evidence)
        )


def link_score(
    lid: str,
    events: list[LinkEvent],
    obs: Observations,
    profile: AttributionProfile,
    stalled_at: int,
    traffic_seen: bool,
    slow: bool = False,
) -> LinkScore | None:
    """`traffic_seen`: some link of the job lost its traffic when the job stopped, so the
    telemetry reports rates, and a member that lost none was not carrying the job. `slow`:
    the candidate is to explain a slowdown, not a stall. None when no anomaly scores."""
    victim = obs.pfc_victims.get(lid)
    rules, window = profile.scoring, profile.window
    scored = [
        (
            rules.kind(e.kind, e.value, slow)
            * window.factor(e.ts_ns, _onset(e.ts_ns, stalled_at, obs.onset_from_ns), e.span_s)
            * (rules.pfc_victim_factor if victim and e.kind == LinkEventKind.PFC_STORM else 1.0),
            e,
        )
        for e in events
    ]
    scored = [(s, e) for s, e in scored if s > 0]
    if not scored:
        return None
    crossing = obs.weights.get(lid, 0.0)
    # Read from all its events: a traffic drop scores nothing for a slowed job, but still
    # shows which member carried it.
    carried = carried_job(events, stalled_at, slow, drop_slack_ns(profile))

    # Consequences of trouble elsewhere (traffic that stopped with the job, pauses sent or
    # passed on) are counted once, however many ends and directions report them: they show
    # the link was caught up in the stall, and cannot add up to a blame.
    def consequence(e: LinkEvent) -> bool:
        return e.kind in CONSEQUENCES or (victim is not None and e.kind == LinkEventKind.PFC_STORM)

    knock_on = [s for s, e in scored if consequence(e)]
    # Each kind of anomaly is one observation, at its strongest: the same fault seen at both
    # ends, on several counters or again after a quiet minute is not more evidence of it, and
    # dozens of faint repeats must not add up to a blame.
    strongest: dict[LinkEventKind, float] = {}
    for s, e in scored:
        if not consequence(e):
            strongest[e.kind] = max(s, strongest.get(e.kind, 0.0))
    score = combine([*strongest.values(), max(knock_on, default=0.0)])
    corroborated = lid in obs.corroborated
    if crossing > 0 and carried:
        crossing = 1.0  # its traffic stopped with the job: the job's flow was on it
    elif crossing < 1.0 and traffic_seen and not corroborated:
        # A possible member that lost no traffic with the job. Not when an NCCL error named a
        # pair whose path it is on: the pair's traffic was failing, and on a link shared with
        # other jobs the job's own drop does not show.
        score *= rules.idle_member_factor
    score *= path_factor(crossing)
    source = obs.pfc_sources.get(lid)
    if source is not None:
        score = min(1.0, score * rules.pfc_source_boost)
    if corroborated:
        score = min(1.0, score * rules.corroboration_boost)
    if obs.paths_inferred:  # last, so no boost's cap can undo it
        score *= rules.inferred_paths_factor
    return LinkScore(lid, round(score, 4), scored, victim, source, corroborated)


def rank_key(c: LinkScore | Candidate) -> tuple[float, bool, CauseKind, str]:
    """A verdict's order: best first; equal scores ordered by NCCL's word (a corroborated link
    first), then by kind and name, so that the order never depends on the order of arrival."""
    if isinstance(c, LinkScore):
        return (-c.score, not c.corroborated, CauseKind.LINK, c.lid)
    return (-c.score, True, c.kind, named(c))


def named(c: LinkScore | Candidate) -> str:
    """The link id or host a candidate names."""
    if isinstance(c, LinkScore):
        return c.lid
    return c.link.link_id if c.link is not None else c.node or ""


def node_candidates(
    view: JobView, profile: AttributionProfile, stalled_at: int, upto_ns: int | None
) -> list[Candidate]:
    """One candidate per host with Xids, scored by its faults: each fault (an Xid and the Xids
    that say they were caused by it) once, at its strongest, so the consequences of one NVLink
    failure on every GPU of the host are not several faults."""
    by_host: dict[str, tuple[dict[int, float], list[Evidence]]] = {}
    for x in sorted(view.xids, key=lambda x: (x.ts_ns, x.host, x.xid)):
        # An Xid whose host neither its line nor its file's name gave still dates the stall,
        # but names no node: a node verdict must never carry a guess (or an empty name).
        if not x.host or not seen(x.ts_ns, upto_ns):
            continue
        fault = fault_of(x)
        s = profile.scoring.xid(fault) * profile.window.factor(x.ts_ns, stalled_at)
        if s > 0:
            faults, shown = by_host.setdefault(x.host, ({}, []))
            faults[fault] = max(s, faults.get(fault, 0.0))
            shown.append(as_evidence.xid(x))
    return [
        Candidate(
            CauseKind.NODE,
            round(combine(list(faults.values())), 4),
            node=host,
            evidence=tuple(shown[:4]),
        )
        for host, (faults, shown) in sorted(by_host.items())
    ]
