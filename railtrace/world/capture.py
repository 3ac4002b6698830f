"""A world's incident written as a capture directory, with the truth beside it.

The capture holds what `railtrace replay` reads from the field: `cables.csv`, `hosts.csv`,
`gnmi/` (one gnmic file per switch), `logs/<job>/` and `scheduler/` (Slurm's `scontrol show
job -d`); `truth.json` says what happened and is never read by replay. The site's time zone,
which log stamps without an offset are in, is in the truth: the benchmark hands it to replay as
a site's settings would.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from railtrace.world import gnmic
from railtrace.world.dimensions import Dimensions, draw
from railtrace.world.incident import NS, Incident, Job, Strike, plan
from railtrace.world.joblogs import job_files
from railtrace.world.shape import Cable, build, cables_csv, hosts_csv

ZONES = ("UTC", "America/Los_Angeles", "America/New_York", "Europe/Amsterdam", "Asia/Tokyo")
_TAIL = re.compile(r"^(.*?)(\d+)$")


def hostlist(hosts: list[str]) -> str:
    """Hosts folded the way Slurm prints a node list: runs of one prefix and width in
    brackets (`gpu[0001-0004,0007]`), in the order given."""
    groups: list[tuple[str, int, list[int]]] = []
    for host in hosts:
        m = _TAIL.match(host)
        if m is None:
            groups.append((host, -1, []))
            continue
        prefix, digits = m.group(1), m.group(2)
        if groups and groups[-1][0] == prefix and groups[-1][1] == len(digits):
            groups[-1][2].append(int(digits))
        else:
            groups.append((prefix, len(digits), [int(digits)]))
    parts = []
    for prefix, width, numbers in groups:
        if width < 0:
            parts.append(prefix)
            continue
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        runs: list[str] = []
        start = prev = numbers[0]
        for n in [*numbers[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(
                f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}"
            )
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)


def _scontrol(job: Job) -> str:
    def stamp(ns: int) -> str:
        return datetime.fromtimestamp(ns // NS, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")

    nodes, n = hostlist(job.hosts), len(job.hosts)
    start = stamp(job.started_ns)
    return "\n".join(
        [
            f"JobId={job.job_id} JobName=train",
            "   UserId=ml(2001) GroupId=ml(2001) MCS_label=N/A",
            "   Priority=1 Nice=0 Account=research QOS=normal",
            "   JobState=RUNNING Reason=None Dependency=(null)",
            "   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0",
            "   RunTime=01:00:00 TimeLimit=7-00:00:00 TimeMin=N/A",
            f"   SubmitTime={start} EligibleTime={start}",
            f"   AccrueTime={start}",
            f"   StartTime={start} EndTime=Unknown Deadline=N/A",
            "   Partition=gpu AllocNode:Sid=login1:777",
            "   ReqNodeList=(null) ExcNodeList=(null)",
            f"   NodeList={nodes}",
            f"   BatchHost={job.hosts[0]}",
            f"   NumNodes={n} NumCPUs={n * 192} NumTasks={n * 8} CPUs/Task=24 ReqB:S:C:T=0:0:*:*",
            f"   TRES=cpu={n * 192},mem={n * 1800}G,node={n},billing={n * 192},gres/gpu={n * 8}",
            "   Socks/Node=* NtasksPerN:B:S:C=8:0:*:* CoreSpec=*",
            f"   JOB_GRES=gpu:{n * 8}",
            f"     Nodes={nodes} CPU_IDs=0-191 Mem=1843200 GRES=gpu:8(IDX:0-7)",
            "   MinCPUsNode=192 MinMemoryNode=1800G MinTmpDiskNode=0",
            "   Features=(null) DelayBoot=00:00:00",
            "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)",
            "   Command=/home/ml/train.sbatch",
            "   WorkDir=/home/ml",
            f"   StdOut=/home/ml/slurm-{job.job_id}.out",
            "   TresPerNode=gres/gpu:8",
            "",
        ]
    )


def _cable_json(cable: Cable | None) -> dict[str, Any] | None:
    if cable is None:
        return None
    return {
        "name": cable.name,
        "tier": cable.tier,
        "a": {"device": cable.a.device, "interface": cable.a.name},
        "b": {"device": cable.b.device, "interface": cable.b.name},
    }


#: What the verdict's diagnosis should name for each fault.
SIDE = {
    "link-down": "switch-port",
    "flap": "switch-port",
    "errors": "link-errors",
    "speed-down": "link-speed",
    "nic-down": "host-nic",
    "gpu-xid": "gpu",
    "pfc-storm": "pfc-source",
}


#: Faults that change a link's oper-status, which telemetry reports as it happens.
LINK_STATE_FAULTS = frozenset({"link-down", "flap", "nic-down"})


def _prompt_evidence(strike: Strike) -> list[str]:
    """The prompt evidence the world wrote for a struck job: its cable's state change
    (`link-state`), NCCL's transport error in its logs (`nccl`, printed whatever NCCL_DEBUG
    says, since PyTorch repeats it as the "Last error"), the kernel's Xid (`kernel`)."""
    out = []
    if strike.cable is not None and strike.fault in LINK_STATE_FAULTS:
        out.append("link-state")
    if strike.transport_errors and strike.cable is not None:
        out.append("nccl")
    if strike.node is not None and strike.gpu is not None:
        out.append("kernel")
    return out


def truth(inc: Incident, zone: str) -> dict[str, Any]:
    jobs = {}
    for job in inc.jobs:
        strike = inc.strike_of(job)
        state = "healthy" if strike is None else strike.state
        if strike is None or state == "healthy":
            cause = None
        elif strike.node is not None:
            cause = "node"
        elif strike.cable is not None:
            cause = "link"
        else:
            cause = "unknown"
        affected = strike is not None and state != "healthy"
        undecidable = None
        if state == "slow" and inc.dims.trainer == "silent":
            undecidable = "the trainer prints no step line: a slowdown cannot be seen"
        jobs[job.job_id] = {
            "hosts": len(job.hosts),
            "ranks": job.ranks,
            "state": state,
            "fault": strike.fault if strike else None,
            "diagnosis": SIDE.get(strike.fault) if affected and strike else None,
            "cause": cause,
            "link": _cable_json(strike.cable) if affected and strike else None,
            "node": strike.node if affected and strike else None,
            "place": strike.place if strike else None,
            # Why the evidence cannot tell the culprit, when it cannot: only `unknown` (or a
            # flagged tie holding the culprit) is then right.
            "undecidable": undecidable,
            # What told of the fault at once, apart from counters and step reports: the
            # fault-to-verdict target holds for these.
            "evidence": _prompt_evidence(strike) if affected and strike else [],
            "fault_at_ns": strike.at_ns if strike else None,
            "stalled_at_ns": job.stalled_ns,
            "slow_at_ns": job.slowed_ns,
            "slowdown": round(job.slowdown, 3),
            "watchdog_at_ns": (
                job.stalled_ns + inc.watchdog_s * NS if job.stalled_ns is not None else None
            ),
        }
    buckets = inc.dims.buckets()
    if inc.strikes and inc.strikes[0].place is not None:
        # Where the fault really struck: a two-tier fabric puts a drawn "spine" on an uplink.
        buckets["place"] = inc.strikes[0].place
    return {
        "world": True,
        "dimensions": inc.dims.as_json(),
        "buckets": buckets,
        "site_zone": zone,
        "nodes": inc.dims.nodes,
        "jobs": jobs,
        "link_faults": [
            {"kind": f.kind, "link": _cable_json(f.cable), "at_ns": f.at_ns, "ratio": f.ratio}
            for f in inc.link_faults
        ],
        "resets": [{"device": d, "at_ns": t} for d, t in inc.resets],
        "silenced": inc.silenced,
    }


def write_world(
    out_dir: Path, seed: int, nodes: int | None = None, watchdog_s: int = 600, **fixed: Any
) -> dict[str, Any]:
    """Draw the world of `seed` and write its incident into `out_dir`; returns the truth."""
    dims: Dimensions = draw(seed, nodes, **fixed)
    rng = random.Random(f"world-{seed}")
    cluster = build(dims, random.Random(f"names-{seed}"))
    inc = plan(dims, cluster, seed, watchdog_s)
    zone_name = rng.choice(ZONES)
    zone = ZoneInfo(zone_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cables.csv").write_text(cables_csv(cluster))
    (out_dir / "hosts.csv").write_text(hosts_csv(cluster))
    gnmic.write(out_dir, inc, random.Random(f"telemetry-{seed}"))
    for job in inc.jobs:
        folder = out_dir / "logs" / job.job_id
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in job_files(
            inc, job, zone, random.Random(f"logs-{seed}-{job.job_id}")
        ).items():
            (folder / name).write_text(text)
    (out_dir / "scheduler").mkdir(exist_ok=True)
    (out_dir / "scheduler" / "scontrol-show-job.txt").write_text(
        "\n".join(_scontrol(job) for job in inc.jobs)
    )
    result = truth(inc, zone_name)
    (out_dir / "truth.json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return result
