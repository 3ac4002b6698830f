"""Reading a capture directory: what an engineer collected around an incident.

Layout (formats as the tools write them): `cables.csv` (NetBox cable import), optional
`hosts.csv` (NIC addresses), `gids/<host>.txt` (`show_gids` of a host: its NICs' RoCE GIDs),
`gnmi/*.json|*.jsonl` (gnmic file output, json or event format),
`logs/<job_id>/*` (ranks' stdout/stderr and hosts' kernel logs), `scheduler/*` (what Slurm or
Kubernetes printed about where the jobs ran: `scontrol show job -d`, `squeue --json`,
`sacct --json`, `kubectl get pods -o json`, any file name). A missing cabling plan is an
error, since nothing can be placed without it; everything else is optional.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from railtrace.streams.records import valid_job_id
from railtrace.topology.cabling import CablePlan, parse_cables_csv, parse_hosts_csv
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric, build_fabric
from railtrace.topology.gids import gid_table
from railtrace.topology.gpunics import GpuNicRule, TopoError, parse_topo_matrix, rule_for

GNMI_SUFFIXES = (".json", ".jsonl")


class CaptureError(ValueError):
    """The capture cannot be replayed at all (as opposed to bad lines, which are dead-lettered)."""


@dataclass(slots=True)
class Capture:
    root: Path
    fabric: Fabric
    plan_errors: list[str] = field(default_factory=list)
    gnmi_files: list[Path] = field(default_factory=list)
    log_files: dict[str, list[Path]] = field(default_factory=dict)
    scheduler_files: list[Path] = field(default_factory=list)
    plan: CablePlan = field(default_factory=CablePlan)
    #: What of the capture was left out, and why (a folder under logs/ that is no job id).
    skipped: list[str] = field(default_factory=list)

    @property
    def log_file_count(self) -> int:
        return sum(len(v) for v in self.log_files.values())

    def log_source(self, path: Path) -> str:
        """The source name of a log file: its path in the capture (`logs/<job>/host-a/rank.log`).
        Each file must have its own, since the parser keeps one position per source and drops
        lines it has seen: two hosts' `rank.log` under one name lost a third of a job's facts.
        """
        return path.relative_to(self.root).as_posix()


def open_capture(root: Path, gpu_nic_rules: Sequence[GpuNicRule] = ()) -> Capture:
    """Load the plan and list the inputs; raises CaptureError when there is nothing to replay.
    `gpu_nic_rules` (the settings' `site.gpu_nics`) map GPUs to NICs for the hosts that
    `gpu-nics/` has no file of their own for."""
    if not root.is_dir():
        raise CaptureError(f"{root} is not a directory; expected a capture with cables.csv")
    cables = root / "cables.csv"
    if not cables.is_file():
        raise CaptureError(
            f"{root} has no cables.csv: the cabling plan (NetBox cable import CSV) is required"
        )
    plan = parse_cables_csv(cables.read_text(errors="replace"))
    errors = list(plan.errors)
    if not plan.cables:
        raise CaptureError(f"{cables} holds no usable cable: " + "; ".join(errors[:3]))
    addresses: dict[str, Endpoint] = {}
    hosts = root / "hosts.csv"
    if hosts.is_file():
        addresses, host_errors = parse_hosts_csv(hosts.read_text(errors="replace"))
        errors.extend(host_errors)
    fabric = build_fabric(plan, addresses)
    errors.extend(_read_gids(root / "gids", fabric))
    errors.extend(_read_gpu_nics(root / "gpu-nics", fabric))
    errors.extend(_apply_gpu_nic_rules(gpu_nic_rules, fabric))
    gnmi_dir = root / "gnmi"
    gnmi = sorted(p for p in gnmi_dir.glob("*") if p.suffix in GNMI_SUFFIXES and p.is_file())
    logs: dict[str, list[Path]] = {}
    skipped: list[str] = []
    logs_dir = root / "logs"
    if logs_dir.is_dir():
        for job_dir in sorted(p for p in logs_dir.iterdir() if p.is_dir()):
            files = sorted(p for p in job_dir.rglob("*") if p.is_file())
            if not files:
                continue
            if not valid_job_id(job_dir.name):
                skipped.append(
                    f"logs/{job_dir.name}/ ({len(files)} files): {job_dir.name!r} is not a job "
                    "id (letters, digits and ._:@+-, at most 128): rename the folder to the "
                    "job's id"
                )
                continue
            logs[job_dir.name] = files
    scheduler_dir = root / "scheduler"
    scheduler = sorted(
        p for p in scheduler_dir.rglob("*") if p.is_file() and not p.name.startswith(".")
    )
    return Capture(root, fabric, errors, gnmi, logs, scheduler, plan, skipped)


def _read_gids(folder: Path, fabric: Fabric) -> list[str]:
    """`gids/<host>.txt`, each host's `show_gids` output, onto the fabric: what maps the RoCE
    GIDs of NCCL's errors to NICs beyond the addresses hosts.csv gives. Returns what was
    ignored, and why."""
    if not folder.is_dir():
        return []
    tables: dict[str, str] = {}
    errors: list[str] = []
    for path in sorted(folder.glob("*.txt")):
        if path.stem not in fabric.host_nics:
            errors.append(f"gids/{path.name}: {path.stem!r} is not a cabled host; ignored")
            continue
        tables[path.stem] = path.read_text(errors="replace")
    fabric.gid_nic, bad = gid_table(tables)
    return errors + bad


def _read_gpu_nics(folder: Path, fabric: Fabric) -> list[str]:
    """`gpu-nics/<host>.txt` and `gpu-nics/default.txt` (every other host): `nvidia-smi topo
    -m` as it prints, onto the fabric. Returns what was ignored, and why."""
    errors: list[str] = []
    if not folder.is_dir():
        return errors
    cabled = {nic for nics in fabric.host_nics.values() for nic in nics}
    for path in sorted(folder.glob("*.txt")):
        name = f"gpu-nics/{path.name}"
        host = path.stem
        if host != "default" and host not in fabric.host_nics:
            errors.append(f"{name}: {host!r} is neither `default` nor a cabled host; ignored")
            continue
        try:
            found = parse_topo_matrix(path.read_text(errors="replace"))
        except TopoError as exc:
            errors.append(f"{name}: {exc}; ignored")
            continue
        named = {n for nics in found.by_gpu.values() for n in nics}
        own = cabled if host == "default" else set(fabric.host_nics[host])
        if not named & own:
            errors.append(
                f"{name}: names no NIC that cables.csv cables ({', '.join(sorted(named)[:4])}"
                "...); every rail of its hosts is taken as used"
            )
        if host == "default":
            fabric.default_gpu_nics = found
        else:
            fabric.gpu_nics[host] = found
    return errors


def _apply_gpu_nic_rules(rules: Sequence[GpuNicRule], fabric: Fabric) -> list[str]:
    """Each cabled host without a matrix of its own takes the map of the first rule its name
    matches, ahead of `gpu-nics/default.txt`: a rule is written for a host model, the default
    file for whatever is left. Returns what was ignored, and why, one line per rule."""
    if not rules:
        return []
    hits: dict[int, list[str]] = {}
    for host in sorted(fabric.host_nics):
        rule = rule_for(host, rules)
        if rule is not None and host not in fabric.gpu_nics:
            hits.setdefault(id(rule), []).append(host)
    errors: list[str] = []
    for i, rule in enumerate(rules):
        hosts = hits.get(id(rule), [])
        where = f"site.gpu_nics[{i}] (hosts {rule.hosts!r})"
        if not hosts:
            errors.append(f"{where}: matches no cabled host without a gpu-nics/ file; unused")
            continue
        found = rule.as_map()
        named = {n for nics in rule.nics for n in nics}
        blind = [h for h in hosts if not named & set(fabric.host_nics[h])]
        if blind:
            errors.append(
                f"{where}: names no NIC that cables.csv cables on {len(blind)} of its "
                f"{len(hosts)} hosts (e.g. {blind[0]}: {', '.join(fabric.host_nics[blind[0]][:4])}"
                "); every rail of those hosts is taken as used"
            )
        for host in hosts:
            fabric.gpu_nics[host] = found
    return errors
