"""Slurm read through its client tools: `scontrol show job -d` or `squeue --json`.

The tools run with TZ=UTC and SLURM_TIME_FORMAT=standard, so the times scontrol prints
(local time, no zone) are read as what they are whatever the host's zone or the user's
environment. A tool that does not answer within `timeout_s` is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from typing import Any

from .config import SchedulerCollectorConfig
from .source import SourceError

#: What scontrol says, exit 1, of a job id slurmctld does not hold (any more).
INVALID_JOB = "Invalid job id specified"


class ToolSource:
    """`scontrol` or `squeue`, as `config.command` says."""

    def __init__(self, config: SchedulerCollectorConfig) -> None:
        self.config = config

    def argv(self, job_id: str | None = None) -> list[str]:
        tool = self.config.command
        path = str(self.config.bin_dir / tool) if self.config.bin_dir else tool
        one = [] if job_id is None else [job_id]
        if tool == "scontrol":
            return [path, "show", "job", "-d", *one]
        return [path, "--json", "--states=all", *(["-j", job_id] if job_id else [])]

    def env(self) -> dict[str, str]:
        env = {**os.environ, "TZ": "UTC", "SLURM_TIME_FORMAT": "standard", "LC_ALL": "C"}
        if self.config.slurm_conf is not None:
            env["SLURM_CONF"] = str(self.config.slurm_conf)
        return env

    def describe(self) -> dict[str, Any]:
        return {"command": self.argv()}

    def missing(self) -> str | None:
        tool = self.argv()[0]
        if shutil.which(tool) is None:
            return (
                f"{tool} not found: install Slurm's client tools on this host (Debian: apt-get "
                "install slurm-client) or set collect.scheduler.bin_dir"
            )
        return None

    async def jobs(self) -> bytes:
        return await self._run(self.argv())

    async def job(self, job_id: str) -> bytes:
        try:
            return await self._run(self.argv(job_id))
        except SourceError as exc:
            if INVALID_JOB in str(exc):  # scontrol's word; squeue lists no job instead
                return b""
            raise

    async def _run(self, argv: list[str]) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env(),
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.config.timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        if proc.returncode != 0:
            said = (err or out).decode("utf-8", "replace").strip().splitlines()
            raise SourceError(
                f"{self.config.command} exited {proc.returncode}: {said[0] if said else ''}"[:300]
            )
        return out
