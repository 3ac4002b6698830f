"""Which links a job may cross, rebuilt from its stored facts through the attribution's own
path model, so the API's blast radius and job views agree with the verdicts.

Rebuilding a job costs a query and a path walk, so results are kept per job until the job has
a different number of stored facts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from railtrace.store import Store
from railtrace.store.rows import STRUCTURE_FACT_KINDS
from railtrace.streams.attribution import Correlator
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import LinkWeights, PathFinder


class JobLinks:
    """Job id -> the links its traffic may cross, with the chance it does."""

    def __init__(self, fabric: Fabric, paths: PathFinder, capacity: int = 1024) -> None:
        self.fabric = fabric
        self.paths = paths
        self.capacity = capacity
        self._cache: OrderedDict[str, tuple[int, LinkWeights]] = OrderedDict()
        self._lock = threading.Lock()

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
            correlator.observe(fact)
        return correlator.job_links(job_id)
