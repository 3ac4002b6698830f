"""The scheduler poller's word on a running job that a listing no longer holds, case by case:
what Slurm answers when asked for the job by id decides whether its end is published as Slurm
printed it, as ended unseen between two polls, or not yet. The real daemons' case (the job
forgotten after MinJobAge, by scontrol, squeue and slurmrestd) is in test_collect_scheduler.py;
the answers here are the ones those daemons give only in a race (a listing that missed a job
slurmctld still holds, a lookup that fails), replayed from a real record
(tests/fixtures/scheduler/)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from railtrace.collectors.emit import Collected
from railtrace.collectors.scheduler import poller as poller_module
from railtrace.collectors.scheduler.config import SchedulerCollectorConfig
from railtrace.collectors.scheduler.poller import NO_JOBS, SlurmPoller
from railtrace.collectors.scheduler.source import SourceError
from railtrace.streams import wire

RUNNING = (
    Path(__file__).parent / "fixtures/scheduler/scontrol-show-job-d-22.05-multinode-gpu.txt"
).read_bytes()
COMPLETED = RUNNING.replace(b"JobState=RUNNING", b"JobState=COMPLETED").replace(
    b"EndTime=Unknown", b"EndTime=2026-12-01T15:27:30"
)
PENDING = RUNNING.replace(b"JobState=RUNNING", b"JobState=PENDING").replace(
    b"NodeList=gb-n[001-002]", b"NodeList=(null)"
)
FAILS = SourceError("scontrol exited 1: slurm_load_jobs error: Socket timed out")


class Scripted:
    """A JobSource answering each call with the next of its scripted answers."""

    def __init__(self, listings: list[bytes], lookups: list[bytes | SourceError]) -> None:
        self.listings, self.lookups = listings, lookups
        self.asked: list[str] = []

    def describe(self) -> dict[str, Any]:
        return {"command": ["scripted"]}

    def missing(self) -> str | None:
        return None

    async def jobs(self) -> bytes:
        return self.listings.pop(0)

    async def job(self, job_id: str) -> bytes:
        self.asked.append(job_id)
        answer = self.lookups.pop(0)
        if isinstance(answer, SourceError):
            raise answer
        return answer


@pytest.mark.parametrize(
    ("listings", "lookups", "published"),
    [
        # Forgotten by slurmctld: ended unseen, after the last poll that listed it running.
        ([RUNNING, NO_JOBS], [b""], ["RUNNING", "ENDED 1-2"]),
        # A listing that missed a job slurmctld still holds: its record, as Slurm printed it.
        ([RUNNING, NO_JOBS], [COMPLETED], ["RUNNING", "COMPLETED"]),
        # Still held, back to waiting (requeued): nothing ended; forgotten later, it is.
        ([RUNNING, NO_JOBS, NO_JOBS], [PENDING, b""], ["RUNNING", "ENDED 1-3"]),
        # The lookup failed: asked again next poll; the end is still the first poll missing it.
        ([RUNNING, NO_JOBS, NO_JOBS], [FAILS, b""], ["RUNNING", "ENDED 1-2"]),
        # Listed to its end: no lookup at all.
        ([RUNNING, COMPLETED, NO_JOBS], [], ["RUNNING", "COMPLETED"]),
    ],
    ids=["forgotten", "listing-missed-it", "requeued-then-forgotten", "lookup-failed", "listed"],
)
def test_a_running_job_no_longer_listed_is_ended_only_on_slurms_word(
    listings: list[bytes],
    lookups: list[bytes | SourceError],
    published: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Poll n reads the clock as n ns, so the bounds of an unseen end name polls.
    clock = iter(range(1, 100))
    monkeypatch.setattr(
        poller_module,
        "time",
        SimpleNamespace(time_ns=lambda: next(clock), monotonic=time.monotonic),
    )
    sent = Collected()
    source = Scripted(list(listings), list(lookups))
    poller = SlurmPoller(SchedulerCollectorConfig(), sent, slurm=source)
    for _ in listings:
        assert asyncio.run(poller.poll_once())
    got = []
    for m in sent.on("scheduler"):
        out = wire.decode_scheduler_output(m.value)
        state = next(w[9:] for w in out.text.split() if w.startswith("JobState="))
        got.append(state if out.gone_ns is None else f"ENDED {out.polled_ns}-{out.gone_ns}")
    assert got == published
    assert source.asked == ["1"] * len(lookups) and not source.lookups
    assert poller.stats.lookup_failures == sum(isinstance(a, SourceError) for a in lookups)
    assert poller.stats.ended_unseen == sum(p.startswith("ENDED") for p in published)
