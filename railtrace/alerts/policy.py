"""What is alerted, what is suppressed, and in what order it leaves: pure, clock passed in.

Dedup is per subject (a job, a node, a link, a port): the same fingerprint (state and cause)
again within the window is suppressed, a different one is sent at once, and states that are
not alerted (a healthy verdict, a resolved cabling difference) are noted so that the next
alert counts as new. A job alerted stalled or slow that turns healthy gets one recovery. The
sender paces messages with a token bucket (Slack takes about one a second per webhook) out of
a bounded queue that gives up the least important, oldest alert first when full.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, tzinfo

from railtrace.alerts.blast import Radius
from railtrace.alerts.payloads import (
    Alert,
    cabling_alert,
    cause_text,
    flap_storm_alert,
    node_alert,
    recovery_alert,
    verdict_alert,
)
from railtrace.settings import AlertSettings
from railtrace.streams.attribution.nextstep import next_steps
from railtrace.streams.records import (
    CablingEvent,
    CauseKind,
    JobState,
    LinkEvent,
    LinkEventKind,
    NodeEvent,
    Verdict,
)
from railtrace.topology.attrs import Role
from railtrace.topology.ends import CablingKind


class Deduper:
    """Per subject, the last fingerprint and when it was seen."""

    def __init__(self, window_s: float, max_subjects: int = 100_000) -> None:
        self.window_s = window_s
        self.max_subjects = max_subjects
        self._last: dict[str, tuple[str, float]] = {}

    def admit(self, subject: str, fingerprint: str, now: float) -> bool:
        """True when the alert should go out: new, changed, or last seen a window ago."""
        last = self._last.get(subject)
        if last is not None and last[0] == fingerprint and now - last[1] < self.window_s:
            return False
        self.note(subject, fingerprint, now)
        return True

    def note(self, subject: str, fingerprint: str, now: float) -> None:
        """Remember a state without alerting it, so a return to an alerted one is a change."""
        self._last.pop(subject, None)  # re-insert: the dict stays ordered by time
        self._last[subject] = (fingerprint, now)
        if len(self._last) > self.max_subjects:
            self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop what is older than the window (it cannot suppress anything), then, if still
        too many, the oldest."""
        while self._last:
            subject, (_, at) = next(iter(self._last.items()))
            if now - at < self.window_s and len(self._last) <= self.max_subjects:
                break
            del self._last[subject]

    def __len__(self) -> int:
        return len(self._last)


class TokenBucket:
    """`rate_per_s` messages a second on average, up to `burst` at once."""

    def __init__(self, rate_per_s: float, burst: int = 1) -> None:
        self.rate = rate_per_s
        self.burst = float(burst)
        self.tokens = float(burst)
        self._at: float | None = None

    def take(self, now: float) -> float:
        """Take a token and return 0, or return how many seconds to wait before asking again."""
        if self._at is not None:
            self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
        self._at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


class AlertQueue:
    """Alerts waiting to be sent, at most `maxlen`; when full, the lowest priority, oldest
    alert (possibly the one arriving) is given up."""

    def __init__(self, maxlen: int) -> None:
        self.maxlen = maxlen
        self._items: deque[Alert] = deque()

    def push(self, alert: Alert) -> Alert | None:
        """Queue `alert`; returns the alert dropped to make room, if any."""
        if len(self._items) < self.maxlen:
            self._items.append(alert)
            return None
        lowest = min(a.priority for a in self._items)
        if alert.priority < lowest:
            return alert
        victim = next(i for i, a in enumerate(self._items) if a.priority == lowest)
        dropped = self._items[victim]
        del self._items[victim]
        self._items.append(alert)
        return dropped

    def pop(self) -> Alert | None:
        return self._items.popleft() if self._items else None

    def __len__(self) -> int:
        return len(self._items)


_ALERTED_STATES = (JobState.STALLED, JobState.SLOW)


_CABLING_DIFFERENCES = (CablingKind.MISWIRED, CablingKind.UNEXPECTED, CablingKind.MISSING)


@dataclass
class AlertPolicy:
    """Turns records from the topics into the alerts worth sending."""

    settings: AlertSettings
    # The site's zone (`site.timezone`): times are shown in it beside UTC.
    zone: tzinfo = UTC
    # The fabric's roles, when its topology is configured: a verdict's next steps need to
    # tell a host from a switch. Without it a link verdict's alert has none.
    role: Callable[[str], Role | None] | None = None
    dedup: Deduper = field(init=False)
    counters: dict[str, int] = field(init=False)
    # Jobs alerted stalled or slow and not healthy since, oldest first, with what they were
    # alerted as: a recovery is news only to a channel that heard of the trouble.
    _troubled: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.dedup = Deduper(self.settings.dedup_window_s)
        self.counters = {"alerts": 0, "suppressed": 0, "below_confidence": 0}
        self._troubled = {}

    def on_verdict(self, v: Verdict, now: float) -> Alert | None:
        """A stalled or slow job with a cause, confident enough; a job alerted so and now
        healthy, its recovery; anything else resets it."""
        subject = f"job:{v.job_id}"
        if v.state is JobState.HEALTHY and v.job_id in self._troubled:
            was = self._troubled.pop(v.job_id)
            if self.settings.send_recovery:
                return self._admit(recovery_alert(v, was, self.settings.incident_base_url), now)
        if v.state not in _ALERTED_STATES or v.cause_kind is CauseKind.UNKNOWN:
            self.dedup.note(subject, str(v.state), now)
            return None
        if v.confidence < self.settings.min_confidence:
            self.counters["below_confidence"] += 1
            return None
        admitted = self._admit(self.verdict_alert(v), now)
        if admitted is not None:
            self._troubled.pop(v.job_id, None)  # re-insert: the dict stays ordered by time
            self._troubled[v.job_id] = f"{v.state}, {cause_text(v)}"
            if len(self._troubled) > self.dedup.max_subjects:
                del self._troubled[next(iter(self._troubled))]
        return admitted

    def verdict_alert(self, v: Verdict, radius: Radius | None = None) -> Alert:
        """The alert for a verdict; with the blamed link's `radius`, it names the other jobs
        on the link, and so does its step to check them before the link is shut."""
        s = self.settings
        crossing = [] if radius is None else [j.job_id for j in radius.others(v.job_id)]
        steps = next_steps(v, self.role, crossing)
        return verdict_alert(
            v, s.incident_base_url, s.evidence_lines, s.grafana_base_url, self.zone, steps, radius
        )

    def on_node_event(self, e: NodeEvent, now: float) -> Alert | None:
        """Quarantine decisions and releases; plain Xids that changed nothing are not news."""
        if e.action not in ("quarantine", "release"):
            return None
        return self._admit(
            node_alert(
                e, self.settings.incident_base_url, self.settings.grafana_base_url, self.zone
            ),
            now,
        )

    def on_link_event(self, e: LinkEvent, link_id: str, now: float) -> Alert | None:
        """A flap storm on a link; both ends report it, the dedup keeps one."""
        if e.kind is not LinkEventKind.FLAP:
            return None
        s = self.settings
        alert = flap_storm_alert(e, link_id, s.incident_base_url, s.grafana_base_url, self.zone)
        return self._admit(alert, now)

    def on_cabling(self, e: CablingEvent, now: float) -> Alert | None:
        """A port differing from the plan; a resolved one is remembered, not alerted."""
        if e.kind not in _CABLING_DIFFERENCES:
            self.dedup.note(f"port:{e.device}:{e.interface}", str(e.kind), now)
            return None
        return self._admit(cabling_alert(e, self.settings.incident_base_url, self.zone), now)

    def _admit(self, alert: Alert, now: float) -> Alert | None:
        if not self.dedup.admit(alert.subject, alert.fingerprint, now):
            self.counters["suppressed"] += 1
            return None
        self.counters["alerts"] += 1
        return alert
