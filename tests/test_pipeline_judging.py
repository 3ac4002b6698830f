"""The embedded replay judges link events and job facts once per instant of event time, and
reaches the verdicts that judging after every single record reaches, wherever the records
stop."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from attribution_support import HOST_A, HOST_B, JOB, T0, S, fabric, job_facts

from railtrace.replay import DiscardSink, open_capture
from railtrace.replay.decode import decode
from railtrace.replay.runner import ReplayReport, _as_cabled, _merged
from railtrace.streams.pipeline import Output, Pipeline
from railtrace.streams.records import (
    CollectiveTimeout,
    JobFact,
    JobState,
    LogOrigin,
    TelemetryValue,
    Verdict,
)
from railtrace.world.capture import write_world


class PerRecord(Pipeline):
    """The way the replay judged before: after each link event and each job fact."""

    def on_telemetry(self, value: TelemetryValue) -> Output:
        out = Output()
        self.normalizer.on_telemetry(value, out)
        for event in out.events:
            out.verdicts.extend(self.correlator.observe(event))
        return out

    def on_fact(self, fact: JobFact) -> Output:
        return Output(verdicts=self.correlator.observe(fact))


def _feed(pipeline: Pipeline, records: list) -> tuple[list[int], list[int]]:
    """Feed every record; the positions right after a record that gave link events, and
    right after a job fact."""
    after_events, after_facts = [], []
    for i, record in enumerate(records):
        if isinstance(record, TelemetryValue):
            if pipeline.on_telemetry(record).events:
                after_events.append(i + 1)
        else:
            pipeline.on_fact(record)
            after_facts.append(i + 1)
    return after_events, after_facts


def _verdicts(pipeline: Pipeline) -> list[Verdict]:
    pipeline.flush()
    return pipeline.correlator.verdicts()


@pytest.mark.e2e  # replays whole worlds, several times over: out of the fast tier
@pytest.mark.parametrize("seed", [3, 5])
def test_records_judged_per_instant_give_the_verdicts_judging_each_gives(
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
    after_events, after_facts = _feed(whole, records)
    each = PerRecord(fabric)
    _feed(each, records)
    assert _verdicts(whole) == _verdicts(each)
    assert whole.correlator.stats.evaluations < each.correlator.stats.evaluations
    # Stopped right after link events (the burst of drops as the job stops, and the last
    # ones) or job facts (a rank's watchdog line among its neighbours'), whose instant no
    # later record has closed: flush judges them.
    cuts = {after_events[len(after_events) // 2], after_events[-1]}
    cuts |= {after_facts[len(after_facts) // 2], after_facts[-1]}
    for cut in sorted(cuts):
        held, reference = Pipeline(fabric), PerRecord(fabric)
        _feed(held, records[:cut])
        _feed(reference, records[:cut])
        assert _verdicts(held) == _verdicts(reference), f"cut after record {cut}"


def test_every_ranks_watchdog_lines_of_one_moment_are_judged_once() -> None:
    # Each rank of a stalled job prints its collective timeout in the same second: a large
    # job's thousand lines were a thousand judgements of the same evidence, less one line.
    moment = T0 + 700 * S
    lines = [
        CollectiveTimeout(
            moment,
            JOB,
            host,
            rank,
            42,
            "ALLREDUCE",
            600_000,
            (600 + i) * 1000,
            moment - (600 + i) * S,
            LogOrigin(f"rank{rank}.log", i + 1),
        )
        for i in range(6)
        for rank, host in ((0, HOST_A), (1, HOST_B))
    ]
    batched, each = Pipeline(fabric()), PerRecord(fabric())
    for pipeline in (batched, each):
        for fact in job_facts():
            pipeline.on_fact(fact)
        pipeline.flush()
    before = batched.correlator.stats.evaluations, each.correlator.stats.evaluations
    for pipeline in (batched, each):
        for fact in lines:
            pipeline.on_fact(fact)
    after_lines = batched.flush()
    assert batched.correlator.stats.evaluations - before[0] == 1
    assert each.correlator.stats.evaluations - before[1] > 1
    assert [v.state for v in after_lines] == [JobState.STALLED]
    assert _verdicts(batched) == _verdicts(each)
