"""One observation as an engineer reads it: the Evidence a verdict cites, and the lines of a
job's timeline, made the same way from the same records.

Pure. The verdict keeps a few of these per candidate; the timeline (`/v1/jobs/{id}/timeline`)
shows all of them, so what a verdict says and what the timeline shows cannot disagree.
"""

from __future__ import annotations

from railtrace.streams.attribution.corroboration import local_nic
from railtrace.streams.attribution.watchdog import Behind
from railtrace.streams.records import (
    CollectiveTimeout,
    ErrorSide,
    Evidence,
    JobFact,
    LinkEvent,
    LogOrigin,
    NetError,
    NicEvent,
    RasReport,
    WatchdogState,
    XidEvent,
)
from railtrace.topology.fabric import Fabric

#: Detail text is cut here: a log line can be long, a verdict is read on a phone.
MAX_DETAIL = 300


def _dated(origin: LogOrigin) -> str:
    """What an engineer must know of a time the line did not carry: where it came from."""
    if not origin.dated_by:
        return ""
    return f" [no time on its line: dated by {origin.dated_by}]"


def link_event(e: LinkEvent, link_id: str) -> Evidence:
    return Evidence(
        e.ts_ns, "gnmi", str(e.kind), link_id, f"{e.device}:{e.interface} {e.detail}".strip()
    )


def timeout(t: CollectiveTimeout) -> Evidence:
    return Evidence(
        t.ts_ns,
        "pytorch",
        "watchdog-timeout",
        f"rank {t.rank}",
        f"{t.op} SeqNum={t.seq} ran for {t.ran_for_ms} ms (started {t.started_ns})"
        + _dated(t.origin),
    )


def net_error(e: NetError, fabric: Fabric | None = None) -> Evidence:
    """The line as NCCL printed it, after what was read from it: the side and status (or the
    async event), and with a `fabric` the NIC that reported it, so an engineer sees at once
    whether the error is held against a link and which cable it is about."""
    return Evidence(
        e.ts_ns,
        "nccl",
        e.kind,
        e.host,
        f"{_read(e, fabric)}{e.detail}"[:MAX_DETAIL] + _dated(e.origin),
    )


def _read(e: NetError, fabric: Fabric | None) -> str:
    parts: list[str] = []
    side = "side unknown" if e.side is ErrorSide.UNKNOWN else f"{e.side}-side"
    if e.completion is not None:
        c = e.completion
        parts.append(f"{c.status_name or 'status'}({c.status}), {side}")
    elif e.async_event is not None:
        a = e.async_event
        on = f" on {a.hca}:{a.port}" if a.hca and a.port is not None else ""
        parts.append(f"async event '{a.event}'{on}, {side}")
    if fabric is not None:
        nic = local_nic(e, fabric)
        gid = e.completion.local_gid if e.completion is not None else ""
        if nic is not None:
            parts.append(f"NIC {nic.device}:{nic.interface}")
        elif gid:
            parts.append(f"localGid {gid} maps to no NIC")
    return f"[{'; '.join(parts)}] " if parts else ""


def ras(r: RasReport) -> Evidence:
    return Evidence(r.ts_ns, "nccl", "ras", r.host or "", r.detail[:MAX_DETAIL] + _dated(r.origin))


def xid(x: XidEvent) -> Evidence:
    about = f"Xid {x.xid} on GPU {x.pci}"
    if x.caused_by is not None:
        about += f", a consequence of Xid {x.caused_by}"
    if x.link is not None:
        about += f", NVLink {x.link}" + (f" ({x.severity})" if x.severity else "")
    return Evidence(
        x.ts_ns,
        "kernel",
        f"xid-{x.xid}",
        x.host,
        f"{about}: {x.detail}"[:MAX_DETAIL].strip() + _dated(x.origin),
    )


def nic(n: NicEvent) -> Evidence:
    where = f"{n.pci} {n.netdev}".strip()
    if n.port is not None:
        where += f" port {n.port}"
    return Evidence(
        n.ts_ns,
        "kernel",
        f"nic-{n.state}",
        n.host,
        f"{where}: {n.detail}"[:MAX_DETAIL] + _dated(n.origin),
    )


def watchdog(w: WatchdogState) -> Evidence:
    progress = ""
    if w.last_completed is not None:
        progress = f"last enqueued work {w.last_enqueued}, last completed {w.last_completed}: "
    return Evidence(
        w.ts_ns,
        "pytorch",
        f"watchdog-{w.kind}",
        f"rank {w.rank}" if w.host is None else f"rank {w.rank} on {w.host}",
        f"{progress}{w.detail}"[:MAX_DETAIL] + _dated(w.origin),
    )


def ranks_behind(b: Behind, hosts: dict[int, str]) -> Evidence:
    """`hosts`: where the ranks behind run, as far as the job's logs tell."""
    names = ", ".join(f"{r} ({hosts[r]})" if r in hosts else str(r) for r in b.ranks)
    group = f"process group {b.pg}" if b.pg else "the process group"
    return Evidence(
        b.ts_ns,
        "pytorch",
        "ranks-behind",
        "rank " + ", ".join(str(r) for r in b.ranks),
        f"in {group}, rank(s) {names} last completed work {b.last_completed} while others of "
        f"the {b.reported} ranks reporting reached {b.others_completed}: the hung collective "
        "waited for them",
    )


def progress_stopped(last_ns: int, interval_ns: int, overdue_ns: int) -> Evidence:
    return Evidence(
        last_ns,
        "trainer",
        "progress-stopped",
        "job",
        f"last step report; they came every {interval_ns / 1e9:.1f} s and none came in the "
        f"{(overdue_ns - last_ns) / 1e9:.0f} s after it",
    )


def slowdown(since_ns: int, ratio: float, normal: float | None) -> Evidence:
    usual = f" (normal pace {normal:.4g})" if normal else ""
    return Evidence(
        since_ns,
        "trainer",
        "slowdown",
        "job",
        f"steps take {ratio:.1f}x their normal time from here on{usual}",
    )


def pfc_victim(ts_ns: int, link_id: str, why: str) -> Evidence:
    return Evidence(ts_ns, "gnmi", "pfc-victim", link_id, why)


def pfc_source(ts_ns: int, link_id: str, why: str) -> Evidence:
    return Evidence(ts_ns, "gnmi", "pfc-source", link_id, why)


def of_fact(fact: JobFact, fabric: Fabric | None = None) -> Evidence | None:
    """The timeline line of a job fact that is an event; None for the job's structure (ranks,
    channels, NICs), which explains a verdict but did not happen at a moment. `fabric`, when
    known, names the NIC of a transport error as the verdict does."""
    if isinstance(fact, CollectiveTimeout):
        return timeout(fact)
    if isinstance(fact, NetError):
        return net_error(fact, fabric)
    if isinstance(fact, RasReport):
        return ras(fact)
    if isinstance(fact, XidEvent):
        return xid(fact)
    if isinstance(fact, NicEvent):
        return nic(fact)
    if isinstance(fact, WatchdogState):
        return watchdog(fact)
    return None
