"""Which GPU errors take a node out of service, and until when: pure, no I/O, no clock.

Rules (see `config.QuarantineConfig` for the defaults, the operator's promise):

- *immediate*: an Xid in `immediate_xids`, or one whose detail matches an
  `immediate_detail_patterns` regex (double-bit ECC, row-remapping failure), quarantines the
  node at once;
- *counted*: the Xids of a `CountRule` quarantine the node when `count` of them fall within
  `window_s` (event time, from the lines' own stamps, so replays and late lines decide as live
  ones would); an Xid the driver says was `caused by previous Xid N` is not counted, since it
  is the same fault again;
- *SDC*: an Xid in `sdc_xids` quarantines the node at once and marks it suspect of silent data
  corruption, which only `release` (an operator's explicit decision) lifts; `clear` (a health
  check passed, the GPU was reset) lifts any other quarantine but not that one.

A node already quarantined gives no new "quarantine" decision for further Xids, unless one
makes it SDC-suspect, which is announced again with the new reason. Each decision carries the
Xid events that led to it as evidence. State (per node: the recent counted Xids and the open
quarantine) is plain JSON through `snapshot` / `restore`, bounded by the rules' counts and
`max_evidence`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from railtrace.collectors.hosts.config import QuarantineConfig

SNAPSHOT_VERSION = 1
_NS = 1_000_000_000

Action = Literal["quarantine", "release"]


@dataclass(frozen=True, slots=True)
class XidObservation:
    """One Xid on one node, as the policy needs it. `caused_by` is the Xid the driver said it
    follows from (`caused by previous Xid 149`): a consequence, not a fault of its own."""

    node: str
    ts_ns: int
    xid: int
    pci: str
    detail: str
    caused_by: int | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "node": self.node,
            "ts_ns": self.ts_ns,
            "xid": self.xid,
            "pci": self.pci,
            "detail": self.detail,
        }
        if self.caused_by is not None:
            doc["caused_by"] = self.caused_by
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> XidObservation:
        cause = doc.get("caused_by")  # absent from states saved before it was kept
        return cls(
            str(doc["node"]),
            int(doc["ts_ns"]),
            int(doc["xid"]),
            str(doc["pci"]),
            str(doc["detail"]),
            None if cause is None else int(cause),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """A node goes out of service ("quarantine") or back in ("release"), and why."""

    action: Action
    node: str
    ts_ns: int
    reason: str
    sdc: bool
    evidence: tuple[XidObservation, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "node": self.node,
            "ts_ns": self.ts_ns,
            "reason": self.reason,
            "sdc": self.sdc,
            "evidence": [x.to_json() for x in self.evidence],
        }


@dataclass(slots=True)
class _Quarantine:
    since_ns: int
    reason: str
    sdc: bool
    evidence: list[XidObservation]


@dataclass(slots=True)
class _Node:
    recent: dict[int, list[XidObservation]] = field(default_factory=dict)  # rule index -> Xids
    quarantine: _Quarantine | None = None


class QuarantinePolicy:
    """Per-node quarantine state machine; see the module docstring."""

    def __init__(self, config: QuarantineConfig) -> None:
        self.config = config
        self._immediate = frozenset(config.immediate_xids)
        self._sdc = frozenset(config.sdc_xids)
        self._detail = [re.compile(p, re.IGNORECASE) for p in config.immediate_detail_patterns]
        self._nodes: dict[str, _Node] = {}

    def is_quarantined(self, node: str) -> bool:
        n = self._nodes.get(node)
        return n is not None and n.quarantine is not None

    def is_sdc_suspect(self, node: str) -> bool:
        n = self._nodes.get(node)
        return n is not None and n.quarantine is not None and n.quarantine.sdc

    def quarantined(self) -> list[str]:
        return sorted(k for k, n in self._nodes.items() if n.quarantine is not None)

    def observe(self, x: XidObservation) -> Decision | None:
        """Apply one Xid; a Decision when it quarantines the node (or makes it SDC-suspect)."""
        node = self._nodes.setdefault(x.node, _Node())
        reason, evidence, sdc = self._trigger(node, x)
        q = node.quarantine
        if q is not None:
            if len(q.evidence) < self.config.max_evidence and reason is not None:
                q.evidence.append(x)
            if sdc and not q.sdc:
                q.sdc = True
                q.reason = f"{reason} (was: {q.reason})"
                return self._decision("quarantine", x.node, x.ts_ns, q)
            return None
        if reason is None:
            return None
        node.quarantine = _Quarantine(
            x.ts_ns, reason, sdc, list(evidence[: self.config.max_evidence])
        )
        node.recent.clear()
        return self._decision("quarantine", x.node, x.ts_ns, node.quarantine)

    def clear(
        self, node: str, ts_ns: int, reason: str = "node reported healthy"
    ) -> Decision | None:
        """Lift a quarantine that is not for suspected silent data corruption."""
        n = self._nodes.get(node)
        if n is None or n.quarantine is None or n.quarantine.sdc:
            return None
        return self._lift(node, n, ts_ns, reason)

    def release(self, node: str, ts_ns: int, by: str = "operator") -> Decision | None:
        """Lift any quarantine of `node`, suspected silent data corruption included."""
        n = self._nodes.get(node)
        if n is None or n.quarantine is None:
            return None
        return self._lift(node, n, ts_ns, f"released by {by}")

    def _lift(self, node: str, n: _Node, ts_ns: int, reason: str) -> Decision:
        q = n.quarantine
        assert q is not None
        n.quarantine = None
        n.recent.clear()
        return Decision("release", node, ts_ns, reason, q.sdc, tuple(q.evidence))

    def _trigger(
        self, node: _Node, x: XidObservation
    ) -> tuple[str | None, list[XidObservation], bool]:
        """(reason, evidence, sdc) of the first rule `x` fires; reason None if none does.
        Counted rules do not count while the node is quarantined: its counts start afresh
        when it is released, so old faults do not put a repaired node straight back."""
        if x.xid in self._sdc:
            return f"Xid {x.xid}: suspected silent data corruption", [x], True
        if x.xid in self._immediate:
            return f"Xid {x.xid} quarantines at once", [x], False
        for pattern in self._detail:
            if pattern.search(x.detail):
                return f"Xid {x.xid}: detail matches {pattern.pattern!r}", [x], False
        # A consequence of an earlier fault (its own Xid counted already, or lost from the log)
        # is not a second fault: counting it would quarantine a node for one error.
        if node.quarantine is not None or x.caused_by is not None:
            return None, [], False
        for i, rule in enumerate(self.config.counted):
            if x.xid not in rule.xids:
                continue
            window_ns = int(rule.window_s * _NS)
            kept = [o for o in node.recent.get(i, []) if abs(x.ts_ns - o.ts_ns) < window_ns]
            kept.append(x)
            kept.sort(key=lambda o: o.ts_ns)
            node.recent[i] = kept[-rule.count :]
            if len(kept) >= rule.count:
                xids = "/".join(str(v) for v in rule.xids)
                return (
                    f"{len(kept)} x Xid {xids} within {rule.window_s:g} s",
                    list(node.recent[i]),
                    False,
                )
        return None, [], False

    def _decision(self, action: Action, node: str, ts_ns: int, q: _Quarantine) -> Decision:
        return Decision(action, node, ts_ns, q.reason, q.sdc, tuple(q.evidence))

    # -- state -------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """All state as plain JSON values; `restore` continues exactly from it."""
        nodes: dict[str, Any] = {}
        for name, n in self._nodes.items():
            q = n.quarantine
            if q is None and not any(n.recent.values()):
                continue
            nodes[name] = {
                "recent": {str(i): [o.to_json() for o in xs] for i, xs in n.recent.items() if xs},
                "quarantine": None
                if q is None
                else {
                    "since_ns": q.since_ns,
                    "reason": q.reason,
                    "sdc": q.sdc,
                    "evidence": [o.to_json() for o in q.evidence],
                },
            }
        return {"v": SNAPSHOT_VERSION, "nodes": nodes}

    @classmethod
    def restore(cls, config: QuarantineConfig, snap: dict[str, Any]) -> QuarantinePolicy:
        """The policy saved by `snapshot`. ValueError for another version or unreadable state
        (never guess whether a node was quarantined)."""
        if not isinstance(snap, dict) or snap.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"quarantine snapshot is not version {SNAPSHOT_VERSION}")
        policy = cls(config)
        try:
            for name, doc in snap["nodes"].items():
                n = _Node()
                n.recent = {
                    int(i): [XidObservation.from_json(o) for o in xs]
                    for i, xs in doc["recent"].items()
                    if int(i) < len(config.counted)  # rules removed from the config are dropped
                }
                q = doc["quarantine"]
                if q is not None:
                    n.quarantine = _Quarantine(
                        int(q["since_ns"]),
                        str(q["reason"]),
                        bool(q["sdc"]),
                        [XidObservation.from_json(o) for o in q["evidence"]],
                    )
                policy._nodes[str(name)] = n
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(
                f"unreadable quarantine snapshot: {type(exc).__name__}: {exc}"
            ) from exc
        return policy
