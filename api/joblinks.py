"""Which links a job may cross, rebuilt from its stored facts through the attribution's own
path model, so the API's blast radius and job views agree with the verdicts.

Rebuilding a job costs a query and a path walk, so results are kept per job until the job has
a different number of stored facts; which jobs exist, and their verdicts' headlines, are read
at most every few seconds, however many link pages ask.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from railtrace.store import JobActivity, JobSummary, Store
from railtrace.store.rows import STRUCTURE_FACT_KINDS
from railtrace.streams.attribution import Correlator
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import LinkWeights, PathFinder

#: How many jobs, latest active first, a blast radius considers.
MAX_JOBS = 200
#: How long the list of jobs and their verdict headlines is reused.
JOBS_TTL_S = 5.0


@dataclass(frozen=True, slots=True)
class Crossing:
    job: JobActivity
    weight: float
    verdict: JobSummary | None


class JobLinks:
    """Job id -> the links its traffic may cross, with the chance it does."""

    def __init__(self, fabric: Fabric, paths: PathFinder, capacity: int = 1024) -> None:
        self.fabric = fabric
        self.paths = paths
        self.capacity = capacity
        self._cache: OrderedDict[str, tuple[int, LinkWeights]] = OrderedDict()
        self._lock = threading.Lock()
        self._jobs: tuple[float, list[JobActivity], dict[str, JobSummary]] | None = None

    def warm(self, store: Store) -> int:
        """Rebuild the paths of the jobs a blast radius considers, before anyone asks: cold,
        the first link page after a start waited seconds (3.5 s on the 100M-sample benchmark)
        while every job was rebuilt. Returns how many jobs are now known."""
        activity, _ = self._known_jobs(store)
        for job in activity:
            self.of(store, job.job_id, job.facts)
        return len(activity)

    def crossing(self, store: Store, link_id: str, until_ns: int) -> list[Crossing]:
        """The jobs started by `until_ns` whose paths may cross `link_id`, most likely first:
        the link's blast radius."""
        activity, verdicts = self._known_jobs(store)
        out = []
        for job in activity:
            if job.first_ns > until_ns:
                continue
            weight = self.of(store, job.job_id, job.facts).get(link_id)
            if weight:
                out.append(Crossing(job, weight, verdicts.get(job.job_id)))
        out.sort(key=lambda c: (-c.weight, c.job.job_id))
        return out

    def _known_jobs(self, store: Store) -> tuple[list[JobActivity], dict[str, JobSummary]]:
        now = time.monotonic()
        cached = self._jobs
        if cached is not None and now - cached[0] < JOBS_TTL_S:
            return cached[1], cached[2]
        activity = store.job_activity(limit=MAX_JOBS)
        verdicts = {j.job_id: j for j in store.list_jobs(limit=1000)}
        self._jobs = (now, activity, verdicts)
        return activity, verdicts

    def of(self, store: Store, job_id: str, version: int | None = None) -> LinkWeights:
        """The job's links; `version` (its stored fact count) lets a known job skip the
        rebuild, None always rebuilds."""
        if version is not None:
            with self._lock:
                hit = self._cache.get(job_id)
                if hit is not None and hit[0] == version:
                    self._cache.move_to_end(job_id)
                    return hit[1]
        weights = self._rebuild(store, job_id)
        if version is not None:
            with self._lock:
                self._cache[job_id] = (version, weights)
                self._cache.move_to_end(job_id)
                while len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
        return weights

    def _rebuild(self, store: Store, job_id: str) -> LinkWeights:
        correlator = Correlator(self.fabric, paths=self.paths)
        for fact in store.job_facts_of(job_id, STRUCTURE_FACT_KINDS):
            correlator.fold(fact)  # only the paths are wanted: nothing is judged
        return correlator.job_links(job_id)
