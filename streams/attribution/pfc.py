"""Spreading PFC pauses: which of a job's paused links are victims, and where a storm started.

Apart from the correlator because it reads the fabric and the link history, not the job: a
storm is followed from switch to switch whatever job is being judged. Pure: the history and
the fabric are passed in.
"""

from __future__ import annotations

from railtrace.streams.attribution.history import LinkEventSource
from railtrace.streams.records import LinkEvent, LinkEventKind
from railtrace.topology.attrs import Role
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric

#: Per link id: (event time, why) of a victim or a source.
Marked = dict[str, tuple[int, str]]


def pfc_spread(
    events: dict[str, list[LinkEvent]],
    lo: int,
    hi: int,
    fabric: Fabric,
    history: LinkEventSource,
) -> tuple[Marked, Marked]:
    """Victims and sources of spreading PFC pauses among the job's links.

    A link is a victim when the switch sending its pauses is itself paused on another
    port in the same window: the storm started further on. Following those pauses from
    switch to switch ends at the source: a port paused by a host NIC, or by a switch that
    nobody pauses. A source among the job's links is returned with the victims it explains.
    """
    victims: Marked = {}
    sources: Marked = {}
    storms: dict[str, list[LinkEvent]] = {}  # per device: pauses it received, this window
    # Per paused port: the storm its pauser is itself under, and where that one spread from.
    # A storm's events repeat at every sample on the same ports; what a port's pauses are
    # caught up in is the same each time within one window.
    causes: dict[tuple[str, str, str], LinkEvent | None] = {}
    spread_from: dict[tuple[str, str], str | None] = {}
    for lid, hits in sorted(events.items()):
        for e in hits:
            if e.kind != LinkEventKind.PFC_STORM:
                continue
            port = (lid, e.device, e.interface)
            if port in causes:
                cause = causes[port]
            else:
                pauser = _pauser(fabric, lid, e)
                cause = causes[port] = _paused_elsewhere(pauser, lo, hi, storms, fabric, history)
            if cause is None:
                continue
            victims[lid] = (
                e.ts_ns,
                f"{cause.device} sends these pauses because it is itself paused on "
                f"{cause.interface} ({cause.detail}): a victim, not the source",
            )
            upstream = (cause.device, cause.interface)
            if upstream in spread_from:
                source = spread_from[upstream]
            else:
                source = spread_from[upstream] = _spread_source(
                    cause, lo, hi, storms, fabric, history
                )
            if source is not None and source in events and source not in sources:
                sources[source] = (
                    e.ts_ns,
                    f"the pauses seen on {lid} and the job's other links spread from here",
                )
            break
    return victims, sources


def _pauser(fabric: Fabric, lid: str, e: LinkEvent) -> Endpoint:
    """The far end of the link from the port that reported being paused."""
    ref = fabric.links[lid]
    return ref.b if ref.a == Endpoint(e.device, e.interface) else ref.a


def _spread_source(
    storm: LinkEvent,
    lo: int,
    hi: int,
    storms: dict[str, list[LinkEvent]],
    fabric: Fabric,
    history: LinkEventSource,
) -> str | None:
    """Follow pauses upstream from `storm` until a port nobody pauses further on."""
    seen: set[str] = set()
    while True:
        lid = fabric.link_at.get(Endpoint(storm.device, storm.interface))
        if lid is None or lid in seen:
            return None
        seen.add(lid)
        cause = _paused_elsewhere(_pauser(fabric, lid, storm), lo, hi, storms, fabric, history)
        if cause is None:
            return lid
        storm = cause


def _paused_elsewhere(
    port: Endpoint,
    lo: int,
    hi: int,
    storms: dict[str, list[LinkEvent]],
    fabric: Fabric,
    history: LinkEventSource,
) -> LinkEvent | None:
    """A storm of pauses received by `port`'s switch on another of its ports. `storms`
    caches each device's received storms for the window: a spread touches a few switches
    many times over."""
    if fabric.role(port.device) in (None, Role.HOST):
        return None
    received = storms.get(port.device)
    if received is None:
        received = storms[port.device] = [
            o
            for _, lid in fabric.ports(port.device)
            for o in history.between(lid, lo, hi)
            if o.kind == LinkEventKind.PFC_STORM and o.device == port.device
        ]
    return next((o for o in received if o.interface != port.interface), None)
