"""The whole core as a fold: telemetry values and job facts in, link samples, link events and
verdicts out, in event-time order.

`Normalizer` (counters to rates, rates and states to link events) holds per-interface state
and can be snapshotted, so a streaming worker keeps one per switch in a changelogged table.
`Pipeline` puts a Normalizer and a Correlator together for the embedded replay. Both drivers
call this same code for every record, so the same input gives the same verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from railtrace.streams.attribution import Correlator
from railtrace.streams.attribution.profile import DEFAULT_PROFILE, AttributionProfile
from railtrace.streams.records import (
    JobFact,
    LinkEvent,
    LinkSample,
    TelemetryValue,
    Verdict,
)
from railtrace.streams.telemetry import CounterRates, DecodeStats, LinkHealth, Thresholds
from railtrace.streams.telemetry._walk import normalize
from railtrace.streams.telemetry.gnmic import fold_message
from railtrace.streams.telemetry.lldp import LldpUpdate
from railtrace.streams.telemetry.rates import reset_event
from railtrace.streams.wire import SampleRow
from railtrace.topology.fabric import Fabric, PortLinks

SNAPSHOT_VERSION = 1


@dataclass(slots=True)
class Output:
    """What one input record produced; most records produce nothing but a sample."""

    samples: list[LinkSample] = field(default_factory=list)
    events: list[LinkEvent] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


class Normalizer:
    """Counter rates and link health for the interfaces it is fed."""

    def __init__(
        self,
        thresholds: Thresholds | None = None,
        rates: CounterRates | None = None,
        health: LinkHealth | None = None,
    ) -> None:
        self.thresholds = thresholds or Thresholds()
        self.rates = rates or CounterRates()
        self.health = health or LinkHealth(self.thresholds)

    def on_telemetry(self, value: TelemetryValue, out: Output) -> None:
        self.fold((value,), out)

    def fold(self, values: Sequence[TelemetryValue], out: Output) -> None:
        """Counters and gauges into rates, then rates and states into link events, in one
        compiled pass over `values` (`walk/src/core.rs`); the events' words are made here."""
        raws: list[Any] = []
        normalize(self.rates.core, self.health.core, values, LinkSample, out.samples, raws)
        out.events.extend(self._events(raws))

    def fold_message(
        self,
        message: Any,
        route: Callable[[str, str], tuple[str, int]],
        samples: dict[int, list[SampleRow]],
        stats: DecodeStats,
    ) -> tuple[list[LinkEvent], int, int | None, list[LldpUpdate]]:
        """One decoded gnmic message walked and folded at once, with no TelemetryValue or
        LinkSample made: the telemetry stage's hot path, the rules of `fold`. Its samples are
        appended to `samples` as wire rows by partition (`route` gives a port's link id and
        partition, asked once per port). Returns the link events, the number of values, the
        stamp of the last one and the message's LLDP neighbour news. Raises DecodeError for a
        malformed message, which then changes nothing."""
        raws: list[Any] = []
        folded = fold_message(
            message, self.rates.core, self.health.core, route, samples, raws, stats
        )
        return self._events(raws), *folded

    def _events(self, raws: list[Any]) -> list[LinkEvent]:
        """The LinkEvents, in words, of what the compiled rules raised."""
        return [
            reset_event(*raw[1:]) if raw[0] == "counter-reset" else self.health.event_of(raw)
            for raw in raws
        ]

    def snapshot(self) -> dict[str, Any]:
        return {
            "v": SNAPSHOT_VERSION,
            "rates": self.rates.snapshot(),
            "health": self.health.snapshot(),
        }

    @classmethod
    def restore(cls, snap: dict[str, Any], thresholds: Thresholds | None = None) -> Normalizer:
        if snap.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"unknown Normalizer snapshot version {snap.get('v')!r}")
        thresholds = thresholds or Thresholds()
        return cls(
            thresholds,
            CounterRates.restore(snap["rates"]),
            LinkHealth.restore(snap["health"], thresholds),
        )


class Pipeline:
    """One Normalizer and one Correlator: the embedded replay's whole core.

    Records come in event-time order, and the jobs that link events and job facts concern are
    judged once per instant, when the first record of a later time arrives (or at `flush`),
    rather than after each record: when a job stops, every link it used reports a traffic
    drop at the same sample time, hundreds on a large job, and every rank of it prints its
    watchdog lines within the same second; judging it after each was most of a replay. A
    verdict reads only the evidence and event time (see `Correlator.fold`), so what the
    instant's last record would have given is what this gives, as the streaming worker's
    batches do.
    """

    def __init__(
        self,
        fabric: Fabric,
        profile: AttributionProfile = DEFAULT_PROFILE,
    ) -> None:
        self.fabric = fabric
        self.normalizer = Normalizer(profile.health)
        self.correlator = Correlator(fabric, profile)
        self.link_id = PortLinks(fabric)
        self._held_ns: int | None = None  # the instant of link events folded, not judged

    def on_telemetry(self, value: TelemetryValue) -> Output:
        out = Output(verdicts=self._after(value.ts_ns))
        self.normalizer.on_telemetry(value, out)
        for event in out.events:
            out.verdicts.extend(self._after(event.ts_ns))
            self.correlator.fold(event)
            if self._held_ns is None:  # else the event is of the held instant, or older
                self._held_ns = event.ts_ns
        return out

    def on_fact(self, fact: JobFact) -> Output:
        out = Output(verdicts=self._after(fact.ts_ns))
        self.correlator.fold(fact)
        if self._held_ns is None:
            self._held_ns = fact.ts_ns
        return out

    def _after(self, ts_ns: int) -> list[Verdict]:
        """The held instant's verdicts once a record of a later time arrives, else none."""
        if self._held_ns is not None and ts_ns > self._held_ns:
            return self.flush()
        return []

    def flush(self) -> list[Verdict]:
        """Judge the jobs that held link events concern; the replay calls it after its last
        record."""
        self._held_ns = None
        return self.correlator.judge_pending()
