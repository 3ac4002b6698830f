"""What `railtrace alert` reports about itself: its counters as Prometheus metrics, and
whether it is doing its job, for `/healthz`.

The alerter is not healthy when (each rule names itself in `problems`):

- `webhook`: no message has reached Slack for longer than the grace period while some were
  tried (a revoked webhook, a proxy that eats them): alerts are being lost;
- `queue`: the send queue is full, so alerts are being given up;
- `topics`: its consumer group has left it without a partition of its topics for longer than
  the grace period (no broker, or a second alerter in the same group took them).

Pure: the caller gathers the readings, so the rules are tested as a table. Metrics are read at
scrape time from counters the components keep anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from railtrace.probes.health import Health
from railtrace.probes.scrape import ScrapeTime

PREFIX = "railtrace_alert_"

#: The alerter's counters (each `railtrace_alert_<key>_total`) and what they count.
COUNTERS = {
    "records": "Records read from the four topics.",
    "bad_records": "Records that did not decode, skipped (the sink dead-letters them).",
    "alerts": "Alerts the policy admitted.",
    "suppressed": "Alerts suppressed as repeats within the dedup window.",
    "below_confidence": "Verdicts below alerts.min_confidence, not alerted.",
    "sent": "Messages Slack accepted.",
    "retries": "Retries after a 429, a 5xx or a network error.",
    "failed": "Messages given up: refused by Slack, or out of retries.",
    "dropped": "Alerts dropped from a full queue, or left queued at stop.",
    "radius_asked": "Blast radii asked of the API.",
    "radius_unknown": "Blast radii the API could not give (the alert went without).",
}


@dataclass(frozen=True, slots=True)
class Readings:
    """What the alerter reports at one monotonic instant `now`: when Slack last started
    failing (None: the last attempt reached it), the queue's length and limit, and since
    when it has held no partition of its topics (None: it holds some)."""

    now: float
    failing_since: float | None
    queued: int
    queue_max: int
    unassigned_since: float | None


def assess(r: Readings, grace_s: float) -> Health:
    """The alerter's health by the rules above."""
    problems = []
    if r.failing_since is not None and r.now - r.failing_since > grace_s:
        problems.append("webhook")
    if r.queued >= r.queue_max:
        problems.append("queue")
    if r.unassigned_since is not None and r.now - r.unassigned_since > grace_s:
        problems.append("topics")
    detail = {
        "slack_failing_for_s": None
        if r.failing_since is None
        else round(r.now - r.failing_since, 1),
        "queued": r.queued,
        "queue_max": r.queue_max,
        "without_topics_for_s": _age(r.now, r.unassigned_since),
    }
    return Health("alert", not problems, problems, detail)


def _age(now: float, since: float | None) -> float | None:
    return None if since is None else round(now - since, 1)


def families(counters: Mapping[str, int], health: Health, queued: int) -> Iterator[Metric]:
    """The metrics of one scrape: every counter, the queue's length and the health gauge."""
    for key, doc in COUNTERS.items():
        family = CounterMetricFamily(PREFIX + key, doc)
        family.add_metric([], counters.get(key, 0))
        yield family
    queue = GaugeMetricFamily(PREFIX + "queued", "Alerts waiting to be sent.")
    queue.add_metric([], queued)
    yield queue
    healthy = GaugeMetricFamily(
        PREFIX + "healthy",
        "1 when the health rules hold (GET /healthz says which one does not), 0 otherwise.",
    )
    healthy.add_metric([], 1 if health.ok else 0)
    yield healthy


def registry(read: Callable[[], Iterable[Metric]]) -> CollectorRegistry:
    """A registry of the alerter's own (not prometheus_client's global one) serving `read`."""
    out = CollectorRegistry(auto_describe=False)
    out.register(ScrapeTime(read))
    return out
