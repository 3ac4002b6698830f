"""A capture's GPU Xids as the node events the live Xid collector sends for them.

Live, `railtrace collect xid` turns each Xid of a host's kernel log into a node event with the
quarantine decision it leads to, and /v1/nodes, the node pages and `railtrace nodes` read
those. A replay parsed the same Xids into job facts only, so a gpu-xid verdict's node link was
a 404 and `railtrace nodes` was empty. Here each Xid that names its host goes through the same
quarantine policy and the same wire format (`nodeevents`) as the collector's, so a replayed
node reads as a live one would. An Xid that names no host blames no node and makes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from railtrace.collectors.hosts import nodeevents
from railtrace.collectors.hosts.config import QuarantineConfig
from railtrace.collectors.hosts.quarantine import QuarantinePolicy, XidObservation
from railtrace.streams.records import JobFact, NodeEvent, XidEvent


def node_events(facts: Sequence[JobFact], root: Path, policy: QuarantineConfig) -> list[NodeEvent]:
    """The node events of the Xids among `facts` (in event-time order), with the kernel line
    each was read from (`root`: the capture). A host's kernel log copied into several jobs'
    folders gives each Xid once, as the collector's repeat check does."""
    seen: set[tuple[str, int, int, str, str]] = set()
    xids: list[XidEvent] = []
    for f in facts:
        if isinstance(f, XidEvent) and f.host:
            key = (f.host, f.ts_ns, f.xid, f.pci, f.detail)
            if key not in seen:
                seen.add(key)
                xids.append(f)
    lines = _lines(root, {(x.origin.source, x.origin.line_no) for x in xids})
    quarantine = QuarantinePolicy(policy)
    out = []
    for x in sorted(xids, key=lambda x: x.ts_ns):
        seen_as = XidObservation(x.host, x.ts_ns, x.xid, x.pci, x.detail, x.caused_by)
        decision = quarantine.observe(seen_as)
        line = lines.get((x.origin.source, x.origin.line_no), "")
        wire = nodeevents.xid_event(
            seen_as, line, x.origin.source, quarantine.is_quarantined(x.host), decision
        )
        out.append(nodeevents.to_record(nodeevents.decode(wire)))
    return out


def _lines(root: Path, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The text of the wanted (capture-relative file, 1-based line) pairs, numbered as the
    log parser numbers them (binary lines, split at newlines)."""
    found: dict[tuple[str, int], str] = {}
    for source in sorted({s for s, _ in wanted}):
        numbers = {n for s, n in wanted if s == source}
        last = max(numbers)
        with (root / source).open("rb") as fh:
            for n, raw in enumerate(fh, 1):
                if n in numbers:
                    found[(source, n)] = raw.decode(errors="replace").rstrip("\r\n")
                if n >= last:
                    break
    return found
