"""The sink's health rules as a table, the metrics one scrape gives, and a batch the store
refuses: written again until the store takes it, and reported failing meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from prometheus_client import generate_latest

from railtrace.settings import Settings, WorkerSettings
from railtrace.sink import writer
from railtrace.sink.probes import Figures, Readings, assess, families, registry
from railtrace.sink.writer import Sink
from railtrace.store import Store
from railtrace.streams import wire

GRACE = 120.0


@pytest.mark.parametrize(
    ("readings", "problems"),
    [
        (Readings(1000.0, None, None), []),
        (Readings(1000.0, 900.0, None), []),  # failing, within the grace
        (Readings(1000.0, 800.0, None), ["store"]),
        (Readings(1000.0, None, 950.0), []),  # the group is still assigning
        (Readings(1000.0, None, 850.0), ["partitions"]),
        (Readings(1000.0, 10.0, 10.0), ["store", "partitions"]),
    ],
)
def test_each_health_rule_names_itself_past_the_grace(
    readings: Readings, problems: list[str]
) -> None:
    health = assess(readings, GRACE)
    assert health.problems == problems
    assert health.ok is (not problems)


def test_the_body_says_what_each_rule_read() -> None:
    assert assess(Readings(1000.0, 700.0, None), GRACE).to_json() == {
        "role": "sink",
        "ok": False,
        "problems": ["store"],
        "store_failing_for_s": 300.0,
        "without_partitions_for_s": None,
    }


def test_a_scrape_gives_rows_lag_failures_partitions_and_health() -> None:
    figures = Figures({"verdicts": 2, "link_samples": 90}, {"t.verdicts.v1": 3}, 1, 28)
    health = assess(Readings(0.0, None, None), GRACE)
    text = generate_latest(registry(lambda: families(figures, health))).decode()
    assert 'railtrace_sink_rows_written_total{table="verdicts"} 2.0' in text
    assert 'railtrace_sink_rows_written_total{table="link_samples"} 90.0' in text
    assert 'railtrace_sink_lag_messages{topic="t.verdicts.v1"} 3.0' in text
    assert "railtrace_sink_write_failures_total 1.0" in text
    assert "railtrace_sink_partitions 28.0" in text
    assert "railtrace_sink_healthy 1.0" in text


class _RefusesSamples:
    """A store that refuses link samples `refusals` times, as ClickHouse away does, and takes
    verdicts throughout."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.calls = 0

    def write_link_samples(self, rows: list[Any]) -> None:
        self.calls += 1
        if self.calls <= self.refusals:
            raise ConnectionRefusedError("injected: ClickHouse is away")

    def write_verdicts(self, rows: list[Any], versions: list[int]) -> None:
        pass


def _sink(tmp_path: Path, store: object) -> Sink:
    return Sink(Settings(worker=WorkerSettings(data_dir=tmp_path)), cast(Store, store))


def _event() -> Any:
    return SimpleNamespace(value=wire.encode_samples([]), message=None)


def test_a_batch_the_store_refuses_is_written_again_until_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "RETRY_FIRST_DELAY_S", 0.01)
    store = _RefusesSamples(2)
    sink = _sink(tmp_path, store)
    failing: list[float | None] = []

    def write(events: Any) -> None:
        failing.append(sink.failing_since.get("samples"))
        sink._samples(events)

    asyncio.run(sink._write("samples", write, [_event()]))
    assert store.calls == 3
    assert sink.write_failures == 2
    # failing from the first refusal on, through the retry, until the write went through
    assert failing[0] is None and failing[1] is not None and failing[2] == failing[1]
    assert sink.failing_since == {}
    assert sink.health().to_json()["store_failing_for_s"] is None
    assert sink.written_rows() == {"link_samples": 0}


def test_one_table_refused_stays_failing_while_the_others_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "RETRY_FIRST_DELAY_S", 0.01)
    sink = _sink(tmp_path, _RefusesSamples(10**9))

    async def run() -> None:
        refused = asyncio.create_task(sink._write("samples", sink._samples, [_event()]))
        while not sink.failing_since:
            await asyncio.sleep(0.01)
        empty = SimpleNamespace(value=wire.encode_records([]), message=None)
        await sink._write("verdicts", sink._verdicts, [empty])
        assert sink.health().to_json()["store_failing_for_s"] is not None
        refused.cancel()

    asyncio.run(run())
    assert list(sink.failing_since) == ["samples"]


def test_every_metric_and_rule_is_documented_for_the_people_who_alert_on_them() -> None:
    readme = (Path(__file__).parents[1] / "deploy" / "kafka" / "README.md").read_text()
    for name in (
        "rows_written_total",
        "write_failures_total",
        "lag_messages",
        "partitions",
        "healthy",
    ):
        assert f"`railtrace_sink_{name}`" in readme, name
    for rule in ("store", "partitions"):
        assert f"(`{rule}`" in readme, rule
