"""What a replay reports (counts, timings, every verdict change) and what a person must be
told about it that the verdicts do not say.

Apart from the runner because the report is read after the run (the CLI's summary,
`railtrace.render`, the benchmarks), and its warnings are about the capture, not the run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from railtrace.streams.records import Verdict
from railtrace.topology.lldp import CablingDifference


@dataclass(slots=True)
class ReplayReport:
    verdicts: list[Verdict] = field(default_factory=list)
    #: Every verdict change, in the order reached: shows when each answer was first known.
    updates: list[Verdict] = field(default_factory=list)
    telemetry_values: int = 0
    log_lines: int = 0
    facts: int = 0
    #: Job placements read from scheduler/, and jobs listed there that held no host yet.
    placements: int = 0
    waiting_jobs: int = 0
    samples: int = 0
    link_events: int = 0
    #: Times a job was judged: what the attribution's share of a replay grows with.
    evaluations: int = 0
    #: Xids of named hosts, as the Xid collector's node events (see `replay.nodes`).
    node_events: int = 0
    dead_letters: Counter[str] = field(default_factory=Counter)
    unknown_paths: int = 0
    #: Telemetry messages stamped in another unit than ns, by unit, read in that unit.
    retimed_stamps: Counter[str] = field(default_factory=Counter)
    #: Values at an empty path (gnmic's print of a deprecated `Path.element` path).
    pathless_values: int = 0
    unknown_interfaces: int = 0
    plan_errors: list[str] = field(default_factory=list)
    #: What of the capture was left out, and why (see `Capture.skipped`).
    skipped: list[str] = field(default_factory=list)
    gnmi_files: int = 0
    log_files: int = 0
    scheduler_files: int = 0
    decode_s: float = 0.0
    #: The part of decode_s spent parsing logs.
    logs_s: float = 0.0
    process_s: float = 0.0
    store_s: float = 0.0
    last_event_ns: int = 0
    #: Wall time of each pipeline step that changed a verdict: the verdict latency after the
    #: event that decided it.
    verdict_latency_s: list[float] = field(default_factory=list)
    #: Ports whose LLDP neighbours differ from the plan; miswired ones were replayed as cabled.
    cabling: list[CablingDifference] = field(default_factory=list)


#: A record stamped further than this past the replaying machine's clock is called out: the
#: collectors re-stamp what is more than an hour ahead, so a capture should hold none.
FUTURE_SLACK_NS = 3600 * 1_000_000_000


def warnings(report: ReplayReport, now_ns: int) -> list[str]:
    """What a person must know about a replay that the verdicts do not say: input that was
    missing, unreadable or left out, and clocks that cannot be right (`now_ns`: this machine's
    time). Each is a sentence saying what it means for the verdicts."""
    out = list(report.skipped)
    if report.telemetry_values == 0:
        out.append(
            "no switch telemetry: gnmi/ is missing or holds no *.json or *.jsonl file, so no "
            "link can be blamed"
            if report.gnmi_files == 0
            else f"no switch telemetry was read from the {report.gnmi_files} files in gnmi/ "
            "(empty, or every message a dead letter), so no link can be blamed"
        )
    if report.facts == report.placements:
        judged = (
            f"the jobs the {report.placements} placements of scheduler/ name are judged on "
            "their hosts' links alone, and no hang can be seen"
            if report.placements
            else "there is no job to judge"
        )
        out.append(
            f"no job logs: logs/<job_id>/ is missing or empty, so {judged}"
            if report.log_files == 0
            else f"the {report.log_files} log files gave no job facts (no NCCL, PyTorch, "
            f"trainer or kernel line railtrace reads), so {judged}"
        )
    if report.scheduler_files and not report.placements and not report.waiting_jobs:
        out.append(
            f"the {report.scheduler_files} files in scheduler/ gave no job placement (see the "
            "scheduler dead letters): jobs are placed from their NCCL INFO lines only"
        )
    if report.retimed_stamps:
        units = ", ".join(f"{n} in {u}" for u, n in sorted(report.retimed_stamps.items()))
        out.append(
            f"telemetry messages stamped in another unit than gNMI's nanoseconds ({units}) were "
            "read in that unit: a switch OS that stamps so is timed right, not in 1970"
        )
    if report.pathless_values:
        out.append(
            f"{report.pathless_values} telemetry values had no path (gnmic prints a switch's "
            "deprecated gNMI `Path.element` paths as `/`): they are lost; collect such a switch "
            "with `railtrace collect gnmi`, which reads those paths"
        )
    ahead = report.last_event_ns - now_ns
    if ahead > FUTURE_SLACK_NS:
        newest = datetime.fromtimestamp(report.last_event_ns / 1e9, tz=UTC)
        out.append(
            f"the capture's newest record is stamped {newest:%Y-%m-%d %H:%M:%S} UTC, "
            f"{_span(ahead)} after this machine's clock: a switch or host clock is wrong, and "
            "the verdicts are dated by it"
        )
    return out


def _span(ns: int) -> str:
    days = ns / 86_400e9
    return f"{days:,.0f} days" if days >= 2 else f"{ns / 3600e9:,.1f} hours"
