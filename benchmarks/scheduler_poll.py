"""Benchmark: what one `railtrace collect scheduler` poll costs in CPU, by jobs listed.

Run: .venv/bin/python benchmarks/scheduler_poll.py [--jobs 100,1000,5000] [--polls 5]

The poll's own work after scontrol has printed: cut the output into job records, read each
with the capture's reader, compare it to what was last published, and publish what changed
(into memory here: no spool, no broker). The output is Slurm 22.05's real `scontrol show job
-d` record of a 2-node GPU job (tests/fixtures/scheduler/) repeated under new job ids. Prints,
per size, the CPU time of the first poll (every job published) and of a steady poll (nothing
changed: what every later poll costs), and what share of a core a 30 s interval takes. The
time scontrol itself takes (slurmctld answering) is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from railtrace.collectors.emit import Collected
from railtrace.collectors.scheduler.config import SchedulerCollectorConfig
from railtrace.collectors.scheduler.poller import SlurmPoller

RECORD = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/scheduler/scontrol-show-job-d-22.05-multinode-gpu.txt"
).read_text()
JOB_ID = RECORD.split()[0].removeprefix("JobId=")


def output(jobs: int) -> bytes:
    return "\n".join(
        RECORD.replace(f"JobId={JOB_ID}", f"JobId={1_000_000 + i}", 1) for i in range(jobs)
    ).encode()


def cpu_of(poller: SlurmPoller, data: bytes) -> float:
    began = time.process_time()
    listing = poller._listing(data)
    polled_ns = time.time_ns()

    async def publish() -> None:
        for r in listing.records:
            await poller._publish(r, polled_ns)

    asyncio.run(publish())
    return time.process_time() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", default="100,1000,5000")
    ap.add_argument("--polls", type=int, default=5, help="steady polls timed per size")
    args = ap.parse_args()
    print(f"{'jobs':>6} {'first poll s':>13} {'steady poll s':>14} {'core share at 30 s':>19}")
    for jobs in (int(n) for n in args.jobs.split(",")):
        data = output(jobs)
        sent = Collected()
        poller = SlurmPoller(SchedulerCollectorConfig(), sent)
        first = cpu_of(poller, data)
        assert len(sent.messages) == jobs, (len(sent.messages), jobs)
        steady = min(cpu_of(poller, data) for _ in range(args.polls))
        assert len(sent.messages) == jobs, "a steady poll published again"
        print(f"{jobs:>6} {first:>13.3f} {steady:>14.3f} {steady / 30:>18.2%}")


if __name__ == "__main__":
    main()
