"""The scheduler collector: where each job runs, polled from Slurm.

`railtrace collect scheduler` runs `scontrol show job -d` (or `squeue --json`) on a host with
the Slurm client tools (`tools`), or asks slurmrestd's jobs endpoint (`restd`); it cuts the
output into one record per job and publishes each job's record, as Slurm printed it, when its
placement changes: when it starts, when its hosts or state change, when it ends, and when
Slurm forgot it before its end was seen (`poller`). The worker reads those records with the
same reader as a capture's `scheduler/` files. The settings import `config` only.
"""

from .config import SchedulerCollectorConfig

__all__ = ["SchedulerCollectorConfig"]
