"""Which links a job's own transport errors point at: the one place NCCL's word becomes evidence
against a link.

An error names the pair whose traffic failed: the reporting host (its NIC, when the line's
RoCE `localGid` or `hca` names it) and the peer (its NIC, by the `remoteGids` or the address
hosts.csv knows). The links on that pair's paths are corroborated: scoring multiplies their
candidates by `corroboration_boost`, and an ECMP member among them is not scaled down as idle.
Only errors that point at the wire count (`ErrorSide`):

- fabric-side ones (retries exhausted, 12 and 13; a port error), and those whose side nothing
  tells (socket failures, undocumented statuses), as every error counted before sides were read;
- a flush (5) only beside a fabric-side error between the same two hosts: it follows whatever
  failed first on its queue pair, and says nothing of its own;
- never a host-side one (local protection 4, the peer refusing a request 9 or an access 10, a
  NIC's catastrophic error): no cable causes those, and counting them would let one host's
  misconfiguration tip a verdict toward its links.

The errors still date the stall whatever their side (`verdicts.stall_time`): the job did fail.
Pure; the correlator calls `corroborated` for each judgement.
"""

from __future__ import annotations

from collections.abc import Iterable

from railtrace.streams.attribution.jobs import Flow
from railtrace.streams.records import ErrorSide, NetError
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import PathFinder


def local_nic(err: NetError, fabric: Fabric) -> Endpoint | None:
    """The NIC that reported `err`: the one its RoCE `localGid` belongs to, else the `hca` NCCL
    named when the fabric cables it on the reporting host; None when the line names neither
    (or a GID nothing maps: the record keeps it, no NIC is made up)."""
    completion, event = err.completion, err.async_event
    if completion is not None and completion.local_gid:
        nic = fabric.nic_of_gid(completion.local_gid)
        if nic is not None:
            return nic
    hca = completion.hca if completion is not None else event.hca if event is not None else ""
    if hca and hca in fabric.host_nics.get(err.host, ()):
        return Endpoint(err.host, hca)
    return None


def remote_nic(err: NetError, fabric: Fabric) -> Endpoint | None:
    """The peer's NIC: by the `remoteGids` (on RoCE the peer address NCCL prints is the socket
    it bootstrapped over, often not the RDMA NIC), else by the peer address in hosts.csv."""
    if err.completion is not None:
        for gid in err.completion.remote_gids:
            nic = fabric.nic_of_gid(gid)
            if nic is not None:
                return nic
    return None if err.peer is None else fabric.address_of.get(err.peer)


def corroborated(
    errors: Iterable[NetError], flows: set[Flow], fabric: Fabric, paths: PathFinder
) -> dict[str, int]:
    """Link id -> time of the first counted error whose pair's paths cross it.

    The pair's paths come from the job's channels (`flows`); without them (NCCL_DEBUG at WARN
    or unset prints none) the reporting host is taken to use its NIC on the peer NIC's rail,
    as NCCL does on a rail-optimized fabric, so the uplinks between the two leaves are on the
    named pair's path too and not only the peer's own cable.
    """
    placed = [(e, local_nic(e, fabric), remote_nic(e, fabric)) for e in errors]
    fabric_pairs = {
        _pair(e, local, remote)
        for e, local, remote in placed
        if e.side is ErrorSide.FABRIC and _pair(e, local, remote) is not None
    }
    first: dict[str, int] = {}
    for err, local, remote in sorted(placed, key=lambda p: p[0].ts_ns):
        side = err.side
        if side is ErrorSide.HOST or (
            side is ErrorSide.CONSEQUENCE and _pair(err, local, remote) not in fabric_pairs
        ):
            continue
        for lid in _links(err, local, remote, flows, fabric, paths):
            first.setdefault(lid, err.ts_ns)
    return first


def _pair(err: NetError, local: Endpoint | None, remote: Endpoint | None) -> frozenset[str] | None:
    peer = remote.device if remote is not None else err.peer
    return None if peer is None else frozenset((local.device if local else err.host, peer))


def _links(
    err: NetError,
    local: Endpoint | None,
    remote: Endpoint | None,
    flows: set[Flow],
    fabric: Fabric,
    paths: PathFinder,
) -> set[str]:
    reporter = local.device if local is not None else err.host
    peer_host = remote.device if remote is not None else err.peer
    links: set[str] = set()
    if peer_host is not None and peer_host != reporter:
        for a, b in flows:
            if (
                {a.device, b.device} == {reporter, peer_host}
                and (remote is None or remote in (a, b))
                and (local is None or local in (a, b))
            ):
                links.update(paths.flow_links(a, b))
        if not links and remote is not None:
            near = local
            if near is None:
                rail = fabric.nic_rail.get(remote)
                nic = fabric.rail_nic.get((reporter, rail)) if rail is not None else None
                near = None if nic is None else Endpoint(reporter, nic)
            if near is not None:
                links.update(paths.flow_links(near, remote))
    for end in (remote, local):
        if end is not None and (lid := fabric.link_at.get(end)) is not None:
            links.add(lid)
    return links
