"""What both kinds of accuracy run share: one capture replayed and scored in a scratch folder,
the progress line, and the totals."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from benchmarks.grading.score import JobScore, score_incident
from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.settings import Settings


def replayed(write: Callable[[Path], dict[str, Any]]) -> tuple[dict[str, Any], list[JobScore]]:
    """Write one capture with `write` (which returns its truth) into a scratch folder, replay
    it and score it. The attribution profile is read as a deployment reads it
    (RAILTRACE_ATTRIBUTION__... or the config file), so a changed setting is measured by the
    same run; the site's zone is the capture's own when its truth names one (a world's)."""
    work = Path(tempfile.mkdtemp(prefix="railtrace-acc-"))
    try:
        truth = write(work)
        settings = Settings()
        zone = truth.get("site_zone")
        report = replay(
            open_capture(work),
            DiscardSink(),
            profile=settings.attribution,
            local=ZoneInfo(zone) if zone else settings.site.zone,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return truth, score_incident(truth, report.verdicts)


class Progress:
    """A count line on stderr: rewritten in place on a terminal, one line per step otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.started = time.perf_counter()
        self.tty = sys.stderr.isatty()

    def step(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        spent = time.perf_counter() - self.started
        left = spent / self.done * (self.total - self.done)
        fails = f", {self.failed} failed" if self.failed else ""
        line = f"{self.done}/{self.total} incidents{fails}, {spent:.0f} s, ~{left:.0f} s left"
        end = "\n" if not self.tty or self.done == self.total else ""
        print(("\r" if self.tty else "") + line, end=end, file=sys.stderr, flush=True)


def where(exc: BaseException) -> str:
    """Where a worker's exception was raised: the last frame of the remote traceback."""
    frames = [ln.strip() for ln in str(exc.__cause__ or "").splitlines() if "File " in ln]
    return f" at {frames[-1]}" if frames else ""


def finish(
    incidents: int,
    jobs: int,
    wall: float,
    workers: int,
    failed: list[str],
    graded: int | None = None,
) -> None:
    """The totals line (`graded`: how many of the incidents this run graded, when some came
    from a results file), then the incidents that raised (and exit status 1 if any did)."""
    graded = incidents if graded is None else graded
    held = f", {incidents - graded} of them from the results file" if graded != incidents else ""
    pace = f", {wall / graded:.1f} s per incident graded with {workers} workers" if graded else ""
    print(f"\n{incidents} incidents ({jobs} job verdicts){held}, {wall:.0f} s wall{pace}")
    if failed:
        print(f"{len(failed)} incidents failed:", *failed, sep="\n  ", file=sys.stderr)
        sys.exit(1)
