"""Slack incoming-webhook messages (Block Kit) for each kind of alert, as pure functions.

Every message carries `blocks` for the Slack client and a plain `text` fallback, which Slack
shows in notifications and wherever blocks cannot be drawn. Each `Alert` also says what it is
about (`subject`) and what it says about it (`fingerprint`), which the policy deduplicates on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import IntEnum
from typing import Any
from urllib.parse import quote, urlencode

from railtrace.alerts.blast import Radius
from railtrace.streams.attribution.cost import cost_text, incident_cost
from railtrace.streams.attribution.nextstep import NextStep
from railtrace.streams.records import (
    DIAGNOSIS_TEXT,
    CablingEvent,
    CauseKind,
    LinkEvent,
    NodeEvent,
    Verdict,
)
from railtrace.topology.ends import Endpoint

# Block Kit limits (api.slack.com/reference/block-kit/blocks).
HEADER_MAX = 150
FIELD_MAX = 2000
SECTION_MAX = 3000
FIELDS_MAX = 10
BUTTON_TEXT_MAX = 75
ACTIONS_MAX = 25
#: Next steps a verdict alert shows; the incident page has them all.
STEPS_SHOWN = 4
#: Other jobs on a blamed link an alert names; the link page lists them all.
RADIUS_SHOWN = 5


class Priority(IntEnum):
    """Which alert a full queue gives up first: the lowest, oldest first."""

    LOW = 0
    NORMAL = 1
    HIGH = 2


@dataclass(frozen=True, slots=True)
class Alert:
    """One Slack message and what it is about.

    `subject` names the thing ("job:4861301"); `fingerprint` what is said about it (state and
    cause): a repeat of the same fingerprint within the dedup window is suppressed, a new one
    is sent.
    """

    kind: str
    subject: str
    fingerprint: str
    priority: Priority
    payload: dict[str, Any]


def _iso(ts_ns: int) -> str:
    """For links: the page takes ISO-8601."""
    return datetime.fromtimestamp(ts_ns / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(ts_ns: int | None, zone: tzinfo = UTC) -> str:
    """UTC, the fabric's clock, and beside it the site's own (`site.timezone`), which the
    person on call lives in and the hosts' logs print in; the date again only when it differs."""
    if ts_ns is None:
        return "-"
    at = datetime.fromtimestamp(ts_ns / 1e9, tz=UTC)
    text = at.strftime("%Y-%m-%d %H:%M:%S UTC")
    local = at.astimezone(zone)
    if local.utcoffset() == at.utcoffset() and local.tzname() in ("UTC", "GMT"):
        return text
    shown = "%H:%M:%S %Z" if local.date() == at.date() else "%Y-%m-%d %H:%M:%S %Z"
    return f"{text} ({local.strftime(shown)})"


def _esc(text: str) -> str:
    """Slack mrkdwn treats &, < and > as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _port(e: Endpoint | None) -> str:
    return "-" if e is None else f"{e.device}:{e.interface}"


def _url(base: str, *parts: str) -> str:
    return base.rstrip("/") + "".join("/" + quote(p, safe="") for p in parts)


def _message(
    text: str,
    header: str,
    fields: dict[str, str],
    buttons: list[tuple[str, str]],
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The common layout: a header, a grid of fields, optional sections of text, and link
    buttons (label, url), the first the message's own page; the fallback text links it."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(header, HEADER_MAX)}},
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": _cut(f"*{name}*\n{_esc(value)}", FIELD_MAX)}
                for name, value in list(fields.items())[:FIELDS_MAX]
            ],
        },
    ]
    blocks += [
        {"type": "section", "text": {"type": "mrkdwn", "text": _cut(section, SECTION_MAX)}}
        for section in extra
        if section
    ]
    blocks.append(
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": _cut(label, BUTTON_TEXT_MAX)},
                    "url": url,
                    "action_id": f"railtrace-open-{i}" if i else "railtrace-open",
                }
                for i, (label, url) in enumerate(buttons[:ACTIONS_MAX])
            ],
        }
    )
    return {"text": f"{_esc(text)} {buttons[0][1]}", "blocks": blocks}


def cause_text(v: Verdict) -> str:
    """The verdict's cause in words: the link with both ends, or the node; a tie as a tie."""
    if v.tied:
        return f"a tie the evidence cannot tell apart: {' | '.join(v.tied)}"
    if v.cause_kind is CauseKind.LINK and v.cause_link is not None:
        return f"link {_port(v.cause_link.a)} <-> {_port(v.cause_link.b)}"
    if v.cause_kind is CauseKind.NODE and v.cause_node:
        return f"node {v.cause_node}"
    return "unknown"


def grafana_url(grafana: str, uid: str, var: str, value: str, start_ns: int, end_ns: int) -> str:
    """A provisioned dashboard (deploy/grafana) on one variable, over the incident's time
    plus a quarter hour either side, so the panels open on what the alert is about."""
    margin = 15 * 60 * 1_000_000_000
    query = {f"var-{var}": value, "from": (start_ns - margin) // 1_000_000}
    query["to"] = (end_ns + margin) // 1_000_000
    return _url(grafana, "d", uid) + "?" + urlencode(query)


def _culprit_buttons(v: Verdict, base_url: str, grafana: str | None) -> list[tuple[str, str]]:
    """The culprit's page and its Grafana dashboard; none for a tie, which names no culprit
    (the incident page lists the tied candidates)."""
    if v.tied:
        return []
    if v.cause_kind is CauseKind.LINK and v.cause_link is not None:
        noun, page, uid, var, value = (
            "link",
            "links",
            "railtrace-link",
            "link_id",
            v.cause_link.link_id,
        )
    elif v.cause_kind is CauseKind.NODE and v.cause_node:
        noun, page, uid, var, value = "node", "nodes", "railtrace-nodes", "node", v.cause_node
    else:
        return []
    buttons = [(f"Open {noun}", _url(base_url, page, value))]
    if grafana:
        start = v.stalled_at_ns or v.decided_at_ns or 0
        end = v.decided_at_ns or start
        url = grafana_url(grafana, uid, var, value, start, end)
        buttons.append((f"{noun.capitalize()} in Grafana", url))
    return buttons


def verdict_alert(
    v: Verdict,
    base_url: str,
    evidence_lines: int = 3,
    grafana: str | None = None,
    zone: tzinfo = UTC,
    steps: Sequence[NextStep] = (),
    radius: Radius | None = None,
) -> Alert:
    """A job stalled (or slowed) and railtrace names the link or node behind it, what the
    stall cost and what answering now saved, the other jobs on a blamed link (`radius`,
    when the API was asked), and the next steps to copy (never run); buttons open the
    incident, the culprit's page and, when `grafana` is its base URL, the culprit's
    dashboard."""
    cause = cause_text(v)
    url = _url(base_url, "incidents", v.job_id)
    cause_id = v.cause_link.link_id if v.cause_link is not None else (v.cause_node or "")
    lines = [
        f"• `{_utc(e.ts_ns)}` {e.source} {e.kind} {_esc(e.subject)}: {_esc(e.detail)}"
        for e in sorted(v.evidence, key=lambda e: e.ts_ns)[:evidence_lines]
    ]
    cost = incident_cost(v)
    summary = (
        f"railtrace: job {v.job_id} {v.state} - cause {cause} (confidence {v.confidence:.2f})."
    )
    payload = _message(
        summary + (f" {cost.saved_gpu_hours:.1f} GPU-h saved." if cost else ""),
        f"Job {v.job_id} {v.state}: {cause}",
        {
            "Job": v.job_id,
            "State": str(v.state),
            "Cause": cause,
            **({"Side": DIAGNOSIS_TEXT.get(v.diagnosis, v.diagnosis)} if v.diagnosis else {}),
            "Confidence": f"{v.confidence:.2f}",
            "Stalled at": _utc(v.stalled_at_ns, zone),
            "Ranks / hosts": f"{v.ranks} / {v.hosts}",
        },
        [("Open incident", url), *_culprit_buttons(v, base_url, grafana)],
        (
            f"*Cost*\n{_esc(cost_text(cost))}" if cost else "",
            _radius_text(v.job_id, radius, _url(base_url, "links", cause_id)),
            _steps_text(steps),
            "*Evidence*\n" + "\n".join(lines) if lines else "",
        ),
    )
    priority = Priority.HIGH if v.state == "stalled" else Priority.NORMAL
    return Alert(
        "verdict", f"job:{v.job_id}", f"{v.state}|{v.cause_kind}|{cause_id}", priority, payload
    )


def _radius_text(job_id: str, radius: Radius | None, link_page: str) -> str:
    """The other jobs whose paths may cross the blamed link: whoever acts on the link (shuts
    it, reseats it) acts on them too. An unknown radius says why, so that no reader takes
    silence for "no other job"."""
    if radius is None:
        return ""
    if not radius.known:
        return f"*Blast radius*\nNot known: {_esc(radius.reason)}."
    others = radius.others(job_id)
    if not others:
        return "*Blast radius*\nNo other job's paths cross this link."
    lines = [
        f"*Blast radius*: {len(others)} other job{'s' if len(others) > 1 else ''} may "
        "cross this link"
    ]
    for j in others[:RADIUS_SHOWN]:
        state = j.state or "no verdict yet"
        blamed = ", blamed on this link" if j.blamed else ""
        lines.append(
            f"• `{_esc(j.job_id)}` {state}{blamed} (crosses it with chance {j.weight:.2f})"
        )
    if len(others) > RADIUS_SHOWN:
        lines.append(f"• and <{link_page}|{len(others) - RADIUS_SHOWN} more on the link page>")
    return "\n".join(lines)


def _steps_text(steps: Sequence[NextStep]) -> str:
    """The next steps as Slack shows them: each in words, its command in a code block
    (escaped like all Slack text, `&&` too, which Slack shows and copies as typed). A backtick
    would end the block, so a command holding one is left to the incident page."""
    if not steps:
        return ""
    lines = ["*Next steps* (to copy; railtrace runs nothing)"]
    for step in steps[:STEPS_SHOWN]:
        lines.append(f"• {_esc(step.what)}")
        if step.command and "`" not in step.command:
            lines.append(f"```{_esc(step.command)}```")
    return "\n".join(lines)


def recovery_alert(v: Verdict, was: str, base_url: str) -> Alert:
    """A job that was alerted stalled or slow is healthy again (`was` says as what): whoever
    was paged can stand down, and the channel does not keep showing an open incident."""
    url = _url(base_url, "incidents", v.job_id)
    payload = _message(
        f"railtrace: job {v.job_id} recovered, healthy again (was {was}).",
        f"Job {v.job_id} recovered",
        {
            "Job": v.job_id,
            "State": str(v.state),
            "Was": was,
            "Ranks / hosts": f"{v.ranks} / {v.hosts}",
        },
        [("Open incident", url)],
    )
    return Alert("recovery", f"job:{v.job_id}", "recovered", Priority.LOW, payload)


def node_alert(
    e: NodeEvent, base_url: str, grafana: str | None = None, zone: tzinfo = UTC
) -> Alert:
    """A node was quarantined (taken out of scheduling) or released back; with `grafana`,
    a second button opens the node's Xid dashboard."""
    quarantined = e.action == "quarantine"
    verb = "quarantined" if quarantined else "released"
    sdc = " (suspected silent data corruption)" if e.sdc else ""
    xid = "-" if e.xid is None else str(e.xid)
    at = (e.ts_ns, e.ts_ns)
    payload = _message(
        f"railtrace: node {e.node} {verb}{sdc}: {e.reason}.",
        f"Node {e.node} {verb}",
        {
            "Node": e.node,
            "Action": e.action,
            "Reason": e.reason or "-",
            "Suspected SDC": "yes" if e.sdc else "no",
            "Xid": xid,
            "At": _utc(e.ts_ns, zone),
        },
        [
            ("Open node", _url(base_url, "nodes", e.node)),
            *(
                [("Node in Grafana", grafana_url(grafana, "railtrace-nodes", "node", e.node, *at))]
                if grafana
                else []
            ),
        ],
    )
    priority = Priority.HIGH if quarantined else Priority.LOW
    return Alert(verb, f"node:{e.node}", e.action, priority, payload)


def flap_storm_alert(
    e: LinkEvent, link_id: str, base_url: str, grafana: str | None = None, zone: tzinfo = UTC
) -> Alert:
    """A link changed state so often within the health window that it counts as flapping;
    `e.value` is the number of changes the telemetry stage counted. With `grafana`, a second
    button opens the link's drill-down dashboard."""
    changes = int(e.value)
    at = (e.ts_ns, e.ts_ns)
    payload = _message(
        f"railtrace: link flap storm on {link_id}: {changes} state changes ({e.detail}).",
        f"Link flap storm: {link_id}",
        {
            "Link": link_id,
            "Seen on": f"{e.device}:{e.interface}",
            "State changes": str(changes),
            "At": _utc(e.ts_ns, zone),
            "Detail": e.detail or "-",
        },
        [
            (
                "Open link",
                _url(base_url, "links", link_id) + "?" + urlencode({"at": _iso(e.ts_ns)}),
            ),
            *(
                [
                    (
                        "Link in Grafana",
                        grafana_url(grafana, "railtrace-link", "link_id", link_id, *at),
                    )
                ]
                if grafana
                else []
            ),
        ],
    )
    return Alert("flap-storm", f"link:{link_id}", str(e.kind), Priority.NORMAL, payload)


def cabling_alert(e: CablingEvent, base_url: str, zone: tzinfo = UTC) -> Alert:
    """A port's LLDP neighbour differs from cables.csv (miswired, unexpected, missing)."""
    port = f"{e.device}:{e.interface}"
    payload = _message(
        f"railtrace: cabling {e.kind} on {port}: planned {_port(e.planned)}, seen {_port(e.seen)}.",
        f"Cabling {e.kind}: {port}",
        {
            "Port": port,
            "Difference": str(e.kind),
            "Planned": _port(e.planned),
            "Seen (LLDP)": _port(e.seen),
            "At": _utc(e.ts_ns, zone),
            "Detail": e.detail or "-",
        },
        [("Open cabling", _url(base_url, "cabling") + "?" + urlencode({"device": e.device}))],
    )
    return Alert("cabling", f"port:{port}", f"{e.kind}|{_port(e.seen)}", Priority.LOW, payload)
