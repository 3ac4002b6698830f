"""The whole core as one fold: telemetry values and job facts in, link samples, link events and
verdicts out, in event-time order.

This is what both the embedded replay and the streaming workers call for every record, so that
the same input gives the same verdicts whichever way it arrived.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from railtrace.streams.attribution import Correlator, TimeWindow
from railtrace.streams.records import (
    COUNTER_METRICS,
    Endpoint,
    JobFact,
    LinkEvent,
    LinkSample,
    Metric,
    TelemetryValue,
    Verdict,
)
from railtrace.streams.telemetry import CounterRates, LinkHealth, Thresholds
from railtrace.topology.fabric import Fabric

GAUGES = frozenset({Metric.RX_POWER_DBM, Metric.TEMPERATURE_C})


@dataclass(slots=True)
class Output:
    """What one input record produced; most records produce nothing but a sample."""

    samples: list[LinkSample] = field(default_factory=list)
    events: list[LinkEvent] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


class Pipeline:
    """Counters to rates, rates and states to link events, events and facts to verdicts."""

    def __init__(
        self,
        fabric: Fabric,
        window: TimeWindow | None = None,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.fabric = fabric
        self.rates = CounterRates()
        self.health = LinkHealth(thresholds or Thresholds())
        self.correlator = Correlator(fabric, window)
        self._link_ids: dict[tuple[str, str], str] = {}

    def on_telemetry(self, value: TelemetryValue) -> Output:
        out = Output()
        if value.metric in COUNTER_METRICS or value.metric in GAUGES:
            sample, reset = self.rates.update(value)
            if reset is not None:
                out.events.append(reset)
            if sample is not None:
                out.samples.append(sample)
                out.events.extend(self.health.update(sample))
        else:
            out.events.extend(self.health.update(value))
        for event in out.events:
            out.verdicts.extend(self.correlator.observe(event))
        return out

    def on_fact(self, fact: JobFact) -> Output:
        return Output(verdicts=self.correlator.observe(fact))

    def link_id(self, device: str, interface: str) -> str:
        """The cable id of a switch port, or "" when the plan has no such cable."""
        key = (device, interface)
        lid = self._link_ids.get(key)
        if lid is None:
            lid = self._link_ids[key] = self.fabric.link_at.get(Endpoint(device, interface), "")
        return lid
