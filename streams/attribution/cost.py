"""What a stall cost, and what answering before the watchdog saved, in GPU-hours.

Operators of these clusters are asked "when one card stops, how much of the other 99's time
did you protect". A stalled job holds every one of its GPUs idle from the stall until someone
acts. Without railtrace the first word is PyTorch's watchdog, which gives up on the collective
only after its timeout (10 minutes by default) and then says nothing of where; railtrace names
a cause at `decided_at`. So, per stalled job:

- lost: GPUs x (decided_at - stalled_at), the time the job sat still before the answer (a
  verdict that names no cause answered nothing: its job waits for the watchdog);
- to the watchdog: GPUs x (watchdog - stalled_at), what waiting for the watchdog costs;
- saved: the difference, never below 0 (an answer after the watchdog saved nothing).

The watchdog's time is the first timeout or watchdog line the job printed, when it printed one;
else the stall plus the timeout its lines state, else plus `cost.watchdog_timeout_s`. The
GPUs are the job's ranks (one per GPU), else the GPUs its scheduler placed, else its hosts
times `cost.gpus_per_host`. A slow job is not stalled: its cost is not counted here.

Pure functions over a JobView and a Verdict, shared by the API, Slack and the store's
projection, so every view of the same incident says the same number.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from railtrace.streams.attribution.jobs import JobView
from railtrace.streams.records import CauseKind, JobState, Verdict

NS = 1_000_000_000


class CostRules(BaseModel):
    """How the GPU time a stall cost is counted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    watchdog_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="When the job's lines state no timeout: PyTorch's default NCCL process "
        "group timeout is 10 minutes (`torch.distributed` default_pg_nccl_timeout), as is "
        "Megatron's `--distributed-timeout-minutes`.",
    )
    gpus_per_host: int = Field(
        default=8,
        ge=1,
        description="GPUs of a host when neither the job's ranks nor its scheduler say how "
        "many it uses: an HGX B200/B300 server has 8.",
    )


@dataclass(frozen=True, slots=True)
class Watchdog:
    """When the job's watchdog fired, or would fire; `seen` when a line of the job said so."""

    at_ns: int
    seen: bool


@dataclass(frozen=True, slots=True)
class IncidentCost:
    """A stalled job's GPU time, from its stall to the answer and to the watchdog."""

    gpus: int
    to_verdict_s: float
    to_watchdog_s: float
    watchdog_seen: bool
    #: Whether railtrace named a cause; without one the job waits for the watchdog.
    answered: bool = True

    @property
    def lost_gpu_hours(self) -> float:
        """GPU-hours idle from the stall until railtrace named a cause."""
        return self.gpus * self.to_verdict_s / 3600

    @property
    def watchdog_gpu_hours(self) -> float:
        """GPU-hours idle from the stall until the watchdog fired (or would fire)."""
        return self.gpus * self.to_watchdog_s / 3600

    @property
    def saved_gpu_hours(self) -> float:
        """GPU-hours of waiting the answer spared, none when it came after the watchdog."""
        return max(0.0, self.watchdog_gpu_hours - self.lost_gpu_hours)


def job_gpus(view: JobView, rules: CostRules) -> int:
    """The GPUs a job holds, as surely as the evidence tells (see the module docstring)."""
    if view.ranks:
        return view.ranks
    return sum(len(view.host_gpus.get(h, ())) or rules.gpus_per_host for h in view.hosts)


def watchdog_of(
    view: JobView, stalled_at: int, rules: CostRules, seen_by: int | None = None
) -> Watchdog:
    """When the watchdog fired after the stall at `stalled_at`, from what was read by `seen_by`
    (all when None), else when its timeout would have it fire."""

    def read(ts: int) -> bool:
        return seen_by is None or ts <= seen_by

    fired = [t.ts_ns for t in view.timeouts if t.ts_ns >= stalled_at and read(t.ts_ns)]
    fired += [w.ts_ns for w in view.watchdogs if w.ts_ns >= stalled_at and read(w.ts_ns)]
    if fired:
        return Watchdog(min(fired), True)
    # An earlier hang's line still tells the job's timeout.
    stated = [t.timeout_ms for t in view.timeouts if t.timeout_ms and read(t.ts_ns)]
    timeout_ns = int(max(stated) * 1_000_000) if stated else int(rules.watchdog_timeout_s * NS)
    return Watchdog(stalled_at + timeout_ns, False)


def incident_cost(verdict: Verdict) -> IncidentCost | None:
    """The cost of a stalled job whose stall and answer are dated; None otherwise."""
    if (
        verdict.state != JobState.STALLED
        or verdict.stalled_at_ns is None
        or verdict.decided_at_ns is None
        or verdict.watchdog_at_ns is None
        or not verdict.gpus
    ):
        return None
    to_watchdog_s = max(0, verdict.watchdog_at_ns - verdict.stalled_at_ns) / NS
    answered = verdict.cause_kind != CauseKind.UNKNOWN
    return IncidentCost(
        gpus=verdict.gpus,
        to_verdict_s=(
            max(0, verdict.decided_at_ns - verdict.stalled_at_ns) / NS
            if answered
            else to_watchdog_s
        ),
        to_watchdog_s=to_watchdog_s,
        watchdog_seen=verdict.watchdog_seen,
        answered=answered,
    )


def span_text(seconds: float) -> str:
    """A duration as an on-call person reads it: seconds, then minutes, then hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def cost_text(c: IncidentCost) -> str:
    """The cost in one sentence, the same in the terminal, Slack and on the page."""
    fired = "fired" if c.watchdog_seen else "fires"
    expected = "" if c.watchdog_seen else "expected, "
    watchdog = (
        f"the watchdog {fired} {span_text(c.to_watchdog_s)} after the stall "
        f"({expected}{c.watchdog_gpu_hours:.1f} GPU-h)"
    )
    if not c.answered:
        return f"{c.gpus} GPUs idle until {watchdog}: no cause named, nothing saved"
    return (
        f"{c.gpus} GPUs idle {span_text(c.to_verdict_s)} before this answer "
        f"({c.lost_gpu_hours:.1f} GPU-h); {watchdog}: {c.saved_gpu_hours:.1f} GPU-h saved"
    )
