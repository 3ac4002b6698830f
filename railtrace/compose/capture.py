"""Captures: simulate one, replay one into the store, or publish one onto the raw topics for
the streaming workers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railtrace.compose import StartError, Tick
from railtrace.compose.stores import open_owned
from railtrace.gctuning import settle_heap
from railtrace.render import STORED_TABLES
from railtrace.replay import Capture, CaptureError, ReplayReport, marker, open_capture, replay
from railtrace.replay import warnings as replay_warnings
from railtrace.replay.plan import keep_plan
from railtrace.settings import Settings
from railtrace.simulate import Fault, write_capture


def simulate(
    out_dir: Path, nodes: int, fault: Fault, seed: int, watchdog_s: int, sample_s: int, tick: Tick
) -> dict[str, Any]:
    """Write a simulated incident as a capture under `out_dir`; returns its ground truth."""
    return write_capture(
        out_dir,
        nodes,
        fault,
        seed,
        watchdog_s=watchdog_s,
        sample_s=sample_s,
        progress=lambda n: tick("simulate", n, None),
    )


@dataclass(frozen=True)
class Replayed:
    """A replay's report, the rows each table gained, and what the user should be warned of."""

    report: ReplayReport
    stored: dict[str, int]
    warnings: list[str]


def opened(settings: Settings, capture_dir: Path) -> Capture:
    try:
        return open_capture(capture_dir, settings.site.gpu_nics)
    except CaptureError as exc:
        raise StartError(str(exc)) from exc


def replay_into(settings: Settings, capture_dir: Path, tick: Tick) -> Replayed:
    """Replay the capture through the attribution in event time into the store. An embedded
    store keeps the capture's plan, which `serve` draws the fabric from, and a marker while
    the replay runs, so that `jobs` tells a killed replay from an empty one."""
    capture = opened(settings, capture_dir)
    store = open_owned(settings)
    embedded = not settings.store.clickhouse_url
    settle_heap()
    try:
        if embedded:
            marker.begin(settings.store.data_dir, capture_dir)
        before = {t: store.count(t) for t in STORED_TABLES}
        report = replay(
            capture,
            store,
            profile=settings.attribution,
            local=settings.site.zone,
            batch_rows=settings.store.batch_rows,
            progress=tick,
            quarantine=settings.collect.xid.policy,
        )
        # What the store holds now, not what was sent: rows it already had collapse into them.
        stored = {t: store.count(t) - before[t] for t in STORED_TABLES}
    finally:
        store.close()
    if embedded:
        keep_plan(capture.root, settings.store.data_dir)
        marker.finish(settings.store.data_dir)
    return Replayed(report, stored, replay_warnings(report, time.time_ns()))


def publish(settings: Settings, capture_dir: Path, tick: Tick) -> Any:
    """Publish the capture onto the raw Kafka topics, its original timestamps kept; returns
    what was sent (`PublishReport`)."""
    from railtrace.replay.publish import publish_capture

    capture = opened(settings, capture_dir)
    total = len(capture.gnmi_files) + capture.log_file_count
    tick("publish", 0, total)
    try:
        return publish_capture(
            capture,
            settings.kafka,
            lambda n: tick("publish", n, total),
            settings.site.timezone,
        )
    except Exception as exc:  # broker down, auth refused: say so, not a traceback
        raise StartError(
            f"could not publish to Kafka at {settings.kafka.bootstrap_servers}: {exc}"
        ) from exc
