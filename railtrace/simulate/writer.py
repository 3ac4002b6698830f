"""Writing a simulated incident to disk as a capture directory, plus its ground truth.

The capture is exactly what `railtrace replay` reads from the field: `cables.csv` (NetBox
bulk-import columns), `hosts.csv`, `gnmi/` (gnmic output files), `logs/<job_id>/` (as the jobs'
NCCL_DEBUG level prints them), `scheduler/` (Slurm's `scontrol show job -d`); the ground
truth goes to `truth.json`, which replay never reads.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from railtrace.simulate.gnmi import render
from railtrace.simulate.logs import job_logs
from railtrace.simulate.scenario import Fault, Scenario, plan_scenario
from railtrace.simulate.scheduler import scontrol_show_jobs
from railtrace.simulate.series import Item, port_series
from railtrace.streams.records import Diagnosis
from railtrace.topology.cabling import format_cables_csv
from railtrace.topology.ends import Endpoint, LinkRef
from railtrace.topology.reference import SU_NODES


def _hosts_csv(sc: Scenario) -> str:
    rows = ["device,interface,ip"] + [
        f"{ep.device},{ep.interface},{ip}" for ep, ip in sorted(sc.address.items())
    ]
    return "\n".join(rows) + "\n"


def _gnmi_format(sc: Scenario, device: str) -> str:
    """Leaves of odd-numbered SUs and the super-spines arrive in gnmic's event format (as from a
    site's existing gnmic Kafka/file output); everything else in its json format."""
    platform = sc.design.platform[device]
    if platform == "arista":
        return "event"
    if platform == "cumulus" and device in sc.design.leaves:
        su = sc.design.leaves.index(device) // sc.design.rails
        return "event" if su % 2 == 1 else "json"
    return "json"


def _link_json(ref: LinkRef | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    return {
        "id": ref.link_id,
        "a": {"device": ref.a.device, "interface": ref.a.interface},
        "b": {"device": ref.b.device, "interface": ref.b.interface},
    }


#: The side of the culprit each fault is, as a verdict's diagnosis should name it.
SIDE: dict[Fault, Diagnosis] = {
    Fault.LINK_DOWN: Diagnosis.SWITCH_PORT,
    Fault.FLAP: Diagnosis.SWITCH_PORT,
    Fault.CRC_BURST: Diagnosis.LINK_ERRORS,
    Fault.GRAY: Diagnosis.LINK_ERRORS,
    Fault.PFC_STORM: Diagnosis.PFC_SOURCE,
    Fault.NIC_DOWN: Diagnosis.HOST_NIC,
    Fault.OPTIC: Diagnosis.OPTIC,
    Fault.GPU_XID: Diagnosis.GPU,
    Fault.MISWIRE: Diagnosis.SWITCH_PORT,
    Fault.ECMP: Diagnosis.SWITCH_PORT,
    Fault.SPEED_DOWN: Diagnosis.LINK_SPEED,
}


def truth(sc: Scenario) -> dict[str, Any]:
    """What really happened, for scoring verdicts; never read by replay."""
    jobs = {}
    for job in sc.jobs:
        strike = sc.strike_of(job)
        state = "healthy"
        if job.stalled_ns is not None:
            state = "stalled"
        elif job.slowed_ns is not None:
            state = "slow"
        cause = None
        if strike is not None:
            cause = "node" if strike.node else "link" if strike.link else "unknown"
        jobs[job.job_id] = {
            "hosts": len(job.hosts),
            "ranks": job.ranks,
            "state": state,
            "fault": str(strike.kind) if strike else None,
            "diagnosis": str(SIDE.get(strike.kind, "")) if strike else None,
            "cause": cause,
            "link": _link_json(strike.link) if strike else None,
            "node": strike.node if strike else None,
            "fault_at_ns": strike.at_ns if strike else None,
            "stalled_at_ns": job.stalled_ns,
            "slow_at_ns": job.slowed_ns,
            "watchdog_at_ns": (
                job.stalled_ns + sc.watchdog_s * 1_000_000_000
                if job.stalled_ns is not None
                else None
            ),
        }
    return {
        "seed": sc.seed,
        "fault": str(sc.fault),
        "nodes": len(sc.design.hosts),
        "fault_at_ns": sc.fault_at_ns,
        "fault_link": _link_json(sc.fault_link),
        "fault_node": sc.fault_node,
        "jobs": jobs,
        "unrelated": [
            {"kind": str(a.kind), "link": _link_json(a.link), "at_ns": a.at_ns}
            for a in sc.unrelated
        ],
        "su_nodes": SU_NODES,
    }


def write_capture(
    out_dir: Path,
    nodes: int,
    fault: Fault,
    seed: int,
    watchdog_s: int = 600,
    sample_s: int = 10,
    progress: Callable[[int], None] | None = None,
    nccl_debug: str = "INFO",
) -> dict[str, Any]:
    """Simulate one incident into `out_dir`; returns the ground truth (also in truth.json).
    `nccl_debug` is the jobs' NCCL_DEBUG: INFO, WARN or unset (see simulate.logs); the
    incident itself is the same at every level."""
    sc = plan_scenario(nodes, fault, seed, watchdog_s=watchdog_s, sample_s=sample_s)
    rng = random.Random(f"logs-{seed}-{fault}")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cables.csv").write_text(format_cables_csv(sc.design.plan))
    (out_dir / "hosts.csv").write_text(_hosts_csv(sc))
    gnmi_dir = out_dir / "gnmi"
    gnmi_dir.mkdir(exist_ok=True)
    by_device: dict[str, list[Item]] = defaultdict(list)
    for item in port_series(sc):
        by_device[item.port.device].append(item)
    for device in sorted(by_device):
        fmt = _gnmi_format(sc, device)
        suffix = ".jsonl" if fmt == "event" else ".json"
        with (gnmi_dir / f"{device}{suffix}").open("wb") as fh:
            fh.writelines(render(iter(by_device[device]), sc.design.platform[device], fmt))
        if progress is not None:
            progress(1)
    for j, job in enumerate(sc.jobs):
        job_dir = out_dir / "logs" / job.job_id
        job_dir.mkdir(parents=True, exist_ok=True)
        shipped = j % 2 == 1
        for f in job_logs(sc, job, rng, nccl_debug):
            (job_dir / f.name).write_text(f.text(shipped and not f.name.endswith(".dmesg")))
    (out_dir / "scheduler").mkdir(exist_ok=True)
    (out_dir / "scheduler" / "scontrol-show-job.txt").write_text(scontrol_show_jobs(sc))
    result = truth(sc)
    result["nccl_debug"] = nccl_debug
    (out_dir / "truth.json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return result


__all__ = ["Endpoint", "truth", "write_capture"]
