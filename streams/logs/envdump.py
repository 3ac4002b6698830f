"""A Slurm job's environment printed into its own log (`env`, `printenv`, a prolog that dumps
it): SLURM_JOB_NODELIST names every host of the job, which is all a job at NCCL_DEBUG=WARN
offers to place it when no scheduler output was collected.

Only whole `NAME=value` lines count (after the line's timestamp, and srun's `-l` task prefix
`0: `), so a script that merely mentions the variable is not taken for its value.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, JobPlacement, LogOrigin, PlacedHost
from ..scheduler.hostlist import HostlistError, expand
from .common import Malformed, remember

_NODELIST = re.compile(r"^(?:\d+: )?(?:export )?(SLURM_JOB_NODELIST|SLURM_NODELIST)=(\S+)\s*$")
#: Distinct node lists remembered per file: one job has one, a file of several steps a few.
MAX_NODELISTS = 16


class EnvRules:
    """A JobPlacement for each distinct node list a file prints (ranks print the same one)."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        self._seen: dict[str, None] = {}

    def snapshot(self) -> dict[str, Any]:
        return {"seen": list(self._seen)}

    def load(self, snap: dict[str, Any]) -> None:
        self._seen = dict.fromkeys(str(v) for v in snap["seen"])

    def handle(self, text: str, ts_ns: int, line_no: int) -> list[JobFact]:
        m = _NODELIST.match(text.strip())
        if m is None:
            return []
        value = m.group(2)
        if value in self._seen:
            return []
        try:
            names = expand(value)
        except HostlistError as exc:
            raise Malformed("env-nodelist", f"{m.group(1)}: {exc}") from None
        remember(self._seen, value, None, MAX_NODELISTS)
        return [
            JobPlacement(
                ts_ns=ts_ns,
                job_id=self._job_id,
                host="",
                hosts=tuple(PlacedHost(n) for n in names),
                scheduler="env",
                state="",
                start_ns=None,
                end_ns=None,
                origin=LogOrigin(self._source, line_no),
            )
        ]
