"""What Slurm says about the simulated jobs: `scontrol show job -d` as Slurm 23.02+ prints it
(the record layout of tests/fixtures/scheduler/scontrol-show-job-d-2025-*.txt), so a capture
taken at NCCL_DEBUG=WARN or unset still says where each job ran.

The node list is compressed the way Slurm prints it (`hgx-su01-[01-32],hgx-su02-[01-08]`) by
the randomized world's writer, independently of the expansion railtrace reads it with.
"""

from __future__ import annotations

from datetime import UTC, datetime

from railtrace.simulate.scenario import NS, Scenario, SimJob
from railtrace.world.capture import hostlist


def _stamp(ns: int) -> str:
    return datetime.fromtimestamp(ns // NS, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def scontrol_record(job: SimJob) -> str:
    nodes = hostlist(job.hosts)
    start = _stamp(job.started_ns)
    limit = _stamp(job.started_ns + 2 * 86_400 * NS)
    n = len(job.hosts)
    return "\n".join(
        [
            f"JobId={job.job_id} JobName=pretrain",
            "   UserId=train(1000) GroupId=train(1000) MCS_label=N/A",
            "   Priority=4294901759 Nice=0 Account=llm QOS=normal",
            "   JobState=RUNNING Reason=None Dependency=(null)",
            "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0",
            "   RunTime=00:10:00 TimeLimit=2-00:00:00 TimeMin=N/A",
            f"   SubmitTime={start} EligibleTime={start}",
            f"   AccrueTime={start}",
            f"   StartTime={start} EndTime={limit} Deadline=N/A",
            "   Partition=gpu AllocNode:Sid=login01:4242",
            "   ReqNodeList=(null) ExcNodeList=(null)",
            f"   NodeList={nodes}",
            f"   BatchHost={job.hosts[0]}",
            f"   NumNodes={n} NumCPUs={n * 224} NumTasks={n * 8} CPUs/Task=28 ReqB:S:C:T=0:0:*:*",
            f"   TRES=cpu={n * 224},mem={n * 2000}G,node={n},billing={n * 224},gres/gpu={n * 8}",
            "   Socks/Node=* NtasksPerN:B:S:C=8:0:*:* CoreSpec=*",
            f"   JOB_GRES=gpu:{n * 8}",
            f"     Nodes={nodes} CPU_IDs=0-223 Mem=2048000 GRES=gpu:8(IDX:0-7)",
            "   MinCPUsNode=224 MinMemoryNode=2000G MinTmpDiskNode=0",
            "   Features=(null) DelayBoot=00:00:00",
            "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)",
            "   Command=/shared/llm/pretrain.sbatch",
            "   WorkDir=/shared/llm",
            f"   StdOut=/shared/llm/slurm-{job.job_id}.out",
            "   TresPerNode=gres/gpu:8",
            "",
        ]
    )


def scontrol_show_jobs(sc: Scenario) -> str:
    """Every simulated job, as `scontrol show job -d` lists them (a blank line between)."""
    return "\n".join(scontrol_record(job) for job in sc.jobs)
