"""The value format of the raw node-events stream (key: the node name, UTF-8).

Every message is one JSON object with `"v": 1` and a `kind`:

`"xid"`: an NVIDIA Xid from the node's kernel log::

    {"v": 1, "kind": "xid", "node": "gpu7", "ts_ns": 1796582652000000000,
     "xid": 79, "pci": "0000:3b:00", "detail": "pid=1234, GPU has fallen off the bus.",
     "line": "<the kernel line as read>", "source": "journalctl -k -f -o short-iso",
     "quarantined": true,
     "decision": null | <decision>}

`ts_ns` is the time written on the line (nanoseconds since the epoch, UTC), or the time it was
read when the line carries none; `pci` is the GPU's PCI bus id as the driver prints it
(domain:bus:device, lower case); `caused_by`, present when the driver said the Xid was
`caused by previous Xid N`, is that N; `quarantined` is the node's state after this event;
`decision` is set when this Xid changed it (see below).

`"release"`: an operator released the node, or a health signal cleared a quarantine that was
not for suspected silent data corruption::

    {"v": 1, "kind": "release", "node": "gpu7", "ts_ns": ..., "quarantined": false,
     "decision": <decision>}

A decision (`quarantine.Decision.to_json`)::

    {"action": "quarantine" | "release", "node": "gpu7", "ts_ns": ..., "reason": "Xid 79 ...",
     "sdc": false, "evidence": [{"node", "ts_ns", "xid", "pci", "detail"}, ...]}

`sdc` marks a node suspected of silent data corruption, which only an explicit release lifts;
`evidence` lists the Xid events that led to the quarantine.
"""

from __future__ import annotations

from typing import Any

import orjson

from railtrace.collectors.hosts.quarantine import Decision, XidObservation
from railtrace.streams.records import NodeEvent

STREAM = "node-events"
VERSION = 1


def xid_event(
    x: XidObservation, line: str, source: str, quarantined: bool, decision: Decision | None
) -> bytes:
    return orjson.dumps(
        {
            "v": VERSION,
            "kind": "xid",
            "node": x.node,
            "ts_ns": x.ts_ns,
            "xid": x.xid,
            "pci": x.pci,
            "detail": x.detail,
            **({"caused_by": x.caused_by} if x.caused_by is not None else {}),
            "line": line,
            "source": source,
            "quarantined": quarantined,
            "decision": None if decision is None else decision.to_json(),
        }
    )


def release_event(decision: Decision) -> bytes:
    return orjson.dumps(
        {
            "v": VERSION,
            "kind": "release",
            "node": decision.node,
            "ts_ns": decision.ts_ns,
            "quarantined": False,
            "decision": decision.to_json(),
        }
    )


def decode(data: bytes) -> dict[str, Any]:
    """A node event as a dict; ValueError if it is not one of version 1."""
    doc = orjson.loads(data)
    if (
        not isinstance(doc, dict)
        or doc.get("v") != VERSION
        or doc.get("kind")
        not in (
            "xid",
            "release",
        )
    ):
        raise ValueError("not a version-1 node event")
    return doc


def to_record(doc: dict[str, Any]) -> NodeEvent:
    """A decoded node event as the record the store keeps; ValueError when a field has the
    wrong type."""
    decision = doc.get("decision") or {}
    try:
        xid = doc.get("xid")
        return NodeEvent(
            ts_ns=int(doc["ts_ns"]),
            node=_text(doc["node"]),
            kind=str(doc["kind"]),
            xid=None if xid is None else int(xid),
            pci=_text(doc.get("pci", "")),
            detail=_text(doc.get("detail", "")),
            quarantined=bool(doc["quarantined"]),
            action=_text(decision.get("action", "")),
            reason=_text(decision.get("reason", "")),
            sdc=bool(decision.get("sdc", False)),
            line=_text(doc.get("line", "")),
            source=_text(doc.get("source", "")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"node event lacks or garbles a field: {exc!r}") from exc


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {value!r}")
    return value
