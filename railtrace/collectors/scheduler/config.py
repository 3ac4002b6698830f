"""Configuration of the scheduler collector, a section of the one Settings object.

Which Slurm client runs, how often, and where its configuration is: the collector runs the
tools as they are on the host (munge authenticates it as the user it runs as), so a host
that can run `scontrol show job` can run it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class SchedulerCollectorConfig(BaseModel):
    """`command`: `scontrol` (`scontrol show job -d`: every job Slurm still holds, with the
    GPU indexes per node) or `squeue` (`squeue --json --states=all`). `cluster` names the
    source of the records (`scontrol:<cluster>`), so two clusters' jobs never share one.
    `partitions`: only the jobs of these Slurm partitions (the GPU ones: a CPU job's hosts
    are not in cables.csv, and each would be a dead letter); empty: every job. `slurm_conf`
    sets SLURM_CONF for the tools, `bin_dir` where they are (else PATH). A failing poll is
    retried after `interval_s` doubled per failure in a row, up to `backoff_max_s`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["scontrol", "squeue"] = "scontrol"
    cluster: str = Field(default="slurm", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    partitions: tuple[Annotated[str, Field(pattern=r"^[^\s,]+$")], ...] = ()
    interval_s: float = Field(default=30.0, gt=0)
    timeout_s: float = Field(default=30.0, gt=0)
    backoff_max_s: float = Field(default=300.0, gt=0)
    slurm_conf: Path | None = None
    bin_dir: Path | None = None
