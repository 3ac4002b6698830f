"""`railtrace collect scheduler`: the Slurm poller as the registry sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..health import TargetState
from ..spec import CollectorSpec, Role, counter_names
from .config import SchedulerCollectorConfig
from .metrics import JOBS_LISTED, SCHEDULER_COUNTERS, UP

if TYPE_CHECKING:
    from ..emit import Emit
    from ..metrics import CollectorMetrics


def build(config: SchedulerCollectorConfig, emit: Emit, metrics: CollectorMetrics) -> Role:
    """The poller; a Slurm it cannot reach as configured (`missing`) stops it at start."""
    from .metrics import scheduler_families
    from .poller import SlurmPoller

    poller = SlurmPoller(config, emit)
    missing = poller.slurm.missing()
    if missing is not None:
        raise ValueError(missing)

    def targets() -> dict[str, TargetState]:
        s = poller.stats
        state = "up" if s.down_since is None else "down"
        return {poller.source: TargetState(s.down_since, state, s.last_error or "")}

    return Role(poller.run, lambda: scheduler_families(metrics.role, poller), targets)


SPECS = (
    CollectorSpec[SchedulerCollectorConfig](
        name="scheduler",
        help="Poll Slurm (`scontrol show job -d`, or `squeue --json`) and publish where each "
        "job runs, when it starts, changes and ends (`collect.scheduler`).",
        config=SchedulerCollectorConfig,
        default=SchedulerCollectorConfig,
        metrics_listen="127.0.0.1:9469",
        build=build,
        families=(UP, JOBS_LISTED, *counter_names(SCHEDULER_COUNTERS)),
    ),
)
