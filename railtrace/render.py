"""How verdicts look in a terminal: rich tables a network engineer reads at a glance."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from railtrace.api.schemas import CablingDifferenceOut, EndpointOut, NodeOut, iso_utc
from railtrace.replay import ReplayReport
from railtrace.streams.attribution.cost import cost_text, incident_cost
from railtrace.streams.attribution.profile import Entry, shown
from railtrace.streams.records import DIAGNOSIS_TEXT, CauseKind, JobState, Verdict

_STATE_STYLE = {
    JobState.STALLED: "bold red",
    JobState.SLOW: "yellow",
    JobState.HEALTHY: "green",
    JobState.UNKNOWN: "dim",
}


def cause_text(v: Verdict) -> str:
    if v.tied:
        return f"tie, the evidence cannot tell: {' | '.join(v.tied)}"
    side = f" ({DIAGNOSIS_TEXT.get(v.diagnosis, v.diagnosis)})" if v.diagnosis else ""
    if v.cause_kind == CauseKind.LINK and v.cause_link is not None:
        a, b = v.cause_link.a, v.cause_link.b
        return f"link {a.device}:{a.interface} <-> {b.device}:{b.interface}{side}"
    if v.cause_kind == CauseKind.NODE and v.cause_node is not None:
        return f"node {v.cause_node}{side}"
    return "unknown" if v.state in (JobState.STALLED, JobState.SLOW) else "-"


def verdict_table(verdicts: list[Verdict], title: str = "Jobs and verdicts") -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("job", "state", "ranks", "since (UTC)", "cause", "confidence", "known after"):
        table.add_column(col, no_wrap=col in {"job", "state"}, overflow="fold")
    for v in verdicts:
        after = ""
        if v.stalled_at_ns is not None and v.decided_at_ns is not None:
            after = f"{max(0, v.decided_at_ns - v.stalled_at_ns) / 1e9:.0f} s"
        table.add_row(
            v.job_id,
            f"[{_STATE_STYLE[v.state]}]{v.state}[/]",
            str(v.ranks),
            iso_utc(v.stalled_at_ns)[:19].replace("T", " ") if v.stalled_at_ns else "",
            cause_text(v),
            f"{v.confidence:.2f}" if v.state in (JobState.STALLED, JobState.SLOW) else "",
            after,
        )
    return table


def print_verdict(console: Console, v: Verdict) -> None:
    console.print(verdict_table([v], title=f"Job {v.job_id}"))
    if (cost := incident_cost(v)) is not None:
        console.print(f"Cost: {cost_text(cost)}")
    if v.candidates:
        cand = Table(title="Candidates (best first)", title_justify="left")
        for col in ("kind", "link / node", "score", "evidence"):
            cand.add_column(col)
        for c in v.candidates:
            who = c.link.link_id if c.link is not None else (c.node or "")
            ev = "; ".join(f"{e.kind}: {e.detail}" for e in c.evidence[:2])
            cand.add_row(str(c.kind), who, f"{c.score:.3f}", ev)
        console.print(cand)
    if v.evidence:
        ev_table = Table(title="Evidence timeline", title_justify="left")
        for col in ("time (UTC)", "source", "kind", "about", "detail"):
            ev_table.add_column(col)
        for e in v.evidence:
            ev_table.add_row(iso_utc(e.ts_ns), e.source, e.kind, e.subject, e.detail)
        console.print(ev_table)


#: The tables a replay reports on, with what the replay made of each.
STORED_TABLES = (
    "link_samples",
    "link_events",
    "job_facts",
    "node_events",
    "verdicts",
    "dead_letters",
)
_WHAT = {
    "link_samples": "link samples",
    "link_events": "link events",
    "job_facts": "job facts",
    "node_events": "node events",
    "verdicts": "verdicts",
}


def replay_summary(
    console: Console, report: ReplayReport, stored: dict[str, int], warnings: list[str]
) -> None:
    """`stored` is how many more rows each table holds than before the replay: a row the store
    already had (the same capture replayed again) is counted as held, not as stored.
    `warnings` are `replay.warnings(report, now)`."""
    seconds = report.decode_s + report.process_s
    made = {
        "link_samples": report.samples,
        "link_events": report.link_events,
        "job_facts": report.facts,
        "node_events": report.node_events,
        "verdicts": len(report.verdicts),
    }
    parts = []
    for table in STORED_TABLES[:-1]:
        held = made[table] - stored[table]
        note = f" ({held:,} already held)" if held > 0 else ""
        parts.append(f"{stored[table]:,} {_WHAT[table]}{note}")
    placed = (
        f", {report.placements:,} job placements from {report.scheduler_files:,} scheduler files"
        if report.scheduler_files
        else ""
    )
    console.print(
        f"Replayed {report.telemetry_values:,} telemetry values and {report.log_lines:,} log lines"
        f"{placed} in {seconds:.1f} s; the store gained " + ", ".join(parts) + "."
    )
    dead = sum(report.dead_letters.values())
    if dead or report.unknown_interfaces or report.plan_errors:
        console.print(
            f"[yellow]Skipped input:[/] {dead:,} dead letters "
            f"({', '.join(f'{k} {n:,}' for k, n in sorted(report.dead_letters.items()))}; "
            f"{stored['dead_letters']:,} stored, with the reason of each), "
            f"{report.unknown_interfaces} events on interfaces not in cables.csv, "
            f"{len(report.plan_errors)} cabling-plan problems"
            + (f" (first: {report.plan_errors[0]})" if report.plan_errors else "")
        )
    for warning in warnings:
        console.print(f"[bold yellow]Warning:[/] {warning}")
    if report.cabling:
        console.print(
            f"[yellow]Cabling unlike cables.csv (LLDP), {len(report.cabling)} ports;[/] "
            "miswired ones were replayed as cabled:"
        )
        for d in report.cabling[:10]:
            console.print(f"  {d.kind}: {d.describe()}")


def _end(end: EndpointOut | None) -> str:
    return "-" if end is None else f"{end.device}:{end.interface}"


def cabling_table(found: list[CablingDifferenceOut]) -> Table:
    title = "Cabling differs from cables.csv" if found else "Cabling matches cables.csv"
    table = Table(title=title, title_justify="left")
    for col in ("port", "difference", "plan says", "LLDP sees", "since (UTC)"):
        table.add_column(col, overflow="fold")
    for d in found:
        table.add_row(
            f"{d.device}:{d.interface}",
            f"[bold red]{d.kind}[/]",
            _end(d.planned),
            _end(d.seen),
            d.since,
        )
    return table


def node_table(found: list[NodeOut]) -> Table:
    table = Table(title="GPU nodes with Xids", title_justify="left")
    for col in ("node", "state", "why", "since (UTC)", "Xids", "last event (UTC)"):
        table.add_column(col, overflow="fold")
    for n in found:
        if n.quarantined:
            state = (
                "[bold red]quarantined (SDC suspect)[/]" if n.sdc_suspect else "[red]quarantined[/]"
            )
        else:
            state = "[green]in service[/]"
        table.add_row(
            n.node, state, n.reason or "-", n.decided_at or "-", str(n.xids), n.last_event_at
        )
    return table


def profile_table(found: list[Entry], changed_only: bool = False) -> Table:
    """The attribution profile in effect: a changed value is shown beside its default."""
    table = Table(title="Attribution profile", title_justify="left")
    for column in ("setting", "value", "default", "why"):
        table.add_column(column, overflow="fold")
    for e in found:
        changed = e.value != e.default
        if changed_only and not changed:
            continue
        table.add_row(
            e.key,
            f"[bold yellow]{shown(e.value)}[/]" if changed else shown(e.value),
            shown(e.default) if changed else "",
            e.reason,
        )
    return table


def profile_markdown(found: list[Entry]) -> str:
    """The defaults as the README's attribution page lists them."""
    rows = ["| setting | default | why |", "|---|---|---|"]
    rows += [f"| `{e.key}` | {shown(e.default)} | {e.reason.replace('|', '/')} |" for e in found]
    return "\n".join(rows)
