"""Whether a collector process is doing its job, for `/healthz` and the `healthy` metric.

A collector is not healthy when (each rule names itself in `problems`):

- `spool`: its spool is over SPOOL_FULL_RATIO of its limit, so it is about to drop, or
  dropping, the oldest samples;
- `delivery`: sending to Kafka has failed for longer than the grace period without a success;
- `targets`: it has targets (gNMI targets, SNMP agents) and none has been up for longer than
  the grace period: for gNMI none is streaming usable updates (a stream whose every update is
  malformed counts as down, state `malformed`), for SNMP no agent answered its last poll.

One target down is a fact about that target (its `*_up` metric and its entry here), not about
the collector. The log and Xid collectors have no targets: only the first two rules apply.
Pure: the caller gathers the readings, so the rules are tested as a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from railtrace.probes.health import Health

#: The share of `spool_max_bytes` in use past which a collector is not healthy.
SPOOL_FULL_RATIO = 0.9


@dataclass(frozen=True, slots=True)
class TargetState:
    """One target as the health rules see it: `down_since` is a monotonic time, None if up."""

    down_since: float | None
    state: str
    error: str = ""


@dataclass(frozen=True, slots=True)
class Readings:
    """What one collector process reports about itself at one monotonic instant `now`."""

    now: float
    spool_bytes: int
    spool_max_bytes: int
    failing_since: float | None
    last_error: str = ""
    targets: Mapping[str, TargetState] = field(default_factory=dict)
    spool_oldest_age_s: float = 0.0
    spool_dropped: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


def assess(role: str, r: Readings, grace_s: float) -> Health:
    """The health of collector `role` from its readings (rules: module docstring).

    >>> calm = Readings(now=100.0, spool_bytes=0, spool_max_bytes=1000, failing_since=None)
    >>> assess("logs", calm, grace_s=60).ok
    True
    >>> assess("logs", Readings(100.0, 950, 1000, None), grace_s=60).problems
    ['spool: 95% of its 1000 bytes in use; when full, the oldest samples are dropped']
    """
    problems = []
    if r.spool_bytes > SPOOL_FULL_RATIO * r.spool_max_bytes:
        share = r.spool_bytes / r.spool_max_bytes
        problems.append(
            f"spool: {share:.0%} of its {r.spool_max_bytes} bytes in use; "
            "when full, the oldest samples are dropped"
        )
    failing_for = None if r.failing_since is None else r.now - r.failing_since
    if failing_for is not None and failing_for > grace_s:
        problems.append(f"delivery: failing for {failing_for:.0f} s: {r.last_error}")
    up = [name for name, t in r.targets.items() if t.down_since is None]
    if r.targets and not up:
        down_for = r.now - max(t.down_since or 0.0 for t in r.targets.values())
        if down_for > grace_s:
            problems.append(f"targets: none of {len(r.targets)} up for {down_for:.0f} s")
    detail = {
        "spool": {
            "bytes": r.spool_bytes,
            "max_bytes": r.spool_max_bytes,
            "oldest_unsent_age_s": round(r.spool_oldest_age_s, 1),
            "dropped": r.spool_dropped,
        },
        "delivery": {
            "failing_for_s": None if failing_for is None else round(failing_for, 1),
            "last_error": r.last_error,
        },
        "targets": {
            name: {
                "up": t.down_since is None,
                "state": t.state,
                **({"error": t.error} if t.error else {}),
            }
            for name, t in sorted(r.targets.items())
        },
        **r.extra,
    }
    return Health(role, not problems, problems, detail)
