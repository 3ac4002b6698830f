"""The embedded replay judges link events once per instant of event time, and reaches the
verdicts that judging after every single event reaches, wherever the records stop."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from railtrace.replay import DiscardSink, open_capture
from railtrace.replay.decode import decode
from railtrace.replay.runner import ReplayReport, _as_cabled, _merged
from railtrace.streams.pipeline import Output, Pipeline
from railtrace.streams.records import TelemetryValue, Verdict
from railtrace.world.capture import write_world


class PerEvent(Pipeline):
    """The way the replay judged before: after each link event."""

    def on_telemetry(self, value: TelemetryValue) -> Output:
        out = Output()
        self.normalizer.on_telemetry(value, out)
        for event in out.events:
            out.verdicts.extend(self.correlator.observe(event))
        return out


def _feed(pipeline: Pipeline, records: list) -> list[int]:
    """Feed every record; the positions right after a record that gave link events."""
    after_events = []
    for i, record in enumerate(records):
        if isinstance(record, TelemetryValue):
            if pipeline.on_telemetry(record).events:
                after_events.append(i + 1)
        else:
            pipeline.on_fact(record)
    return after_events


def _verdicts(pipeline: Pipeline) -> list[Verdict]:
    pipeline.flush()
    return pipeline.correlator.verdicts()


@pytest.mark.e2e  # replays whole worlds, several times over: out of the fast tier
@pytest.mark.parametrize("seed", [3, 5])
def test_link_events_judged_per_instant_give_the_verdicts_judging_each_gives(
    tmp_path: Path, seed: int
) -> None:
    # Seed 3: a 56-node job stalls and ~550 of its links report a traffic drop at once.
    write_world(tmp_path / "cap", seed, None, watchdog_s=600)
    capture = open_capture(tmp_path / "cap")
    report = ReplayReport()
    decoded = decode(capture, report, DiscardSink(), lambda *_: None, UTC)
    fabric = _as_cabled(capture, decoded.lldp, report)
    records = list(_merged(decoded.per_file, decoded.facts))
    whole = Pipeline(fabric)
    cuts = _feed(whole, records)
    each = PerEvent(fabric)
    _feed(each, records)
    assert _verdicts(whole) == _verdicts(each)
    assert whole.correlator.stats.evaluations < each.correlator.stats.evaluations
    # Stopped right after link events (the burst of drops as the job stops, and the last
    # ones), whose instant no later record has closed: flush judges them.
    for cut in sorted({cuts[len(cuts) // 2], cuts[-1]}):
        held, reference = Pipeline(fabric), PerEvent(fabric)
        _feed(held, records[:cut])
        _feed(reference, records[:cut])
        assert _verdicts(held) == _verdicts(reference), f"cut after record {cut}"
