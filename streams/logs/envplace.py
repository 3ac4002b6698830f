"""Where one process ran, from the variables of the environment it printed (one dump).

What launchers set and what each value is worth:

- the node: Slurm's SLURMD_NODENAME (slurmd's own name for it); else a step or job node list
  of one host; else HOSTNAME, outside Slurm and Kubernetes only (Slurm passes the submitting
  shell's HOSTNAME on: eth-cscs/production#305 shows a login node's name there, and a pod's
  HOSTNAME is the pod's name); else the host the log file belongs to;
- its GPU indexes: SLURM_STEP_GPUS, else SLURM_JOB_GPUS (Slurm's own indexes, not renumbered
  by a device cgroup); CUDA_VISIBLE_DEVICES only outside Slurm and Kubernetes (where it is
  renumbered) and only when it lists at least LOCAL_WORLD_SIZE devices, so it is the node's
  set rather than one process's share of it (a narrower set would leave rails out);
- its place in the job: GROUP_RANK (torchrun), NODE_RANK, SLURM_NODEID;
- MASTER_ADDR is one of the job's hosts when it names one (not an address, not localhost).

HOSTNAME and the file's host count only in the dump of a process of the job, one that carries
a rank (RANK, LOCAL_RANK, SLURM_PROCID, GROUP_RANK, ...): a container's `env` names its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..records import PlacedHost
from ..scheduler.hostlist import HostlistError, expand

#: The variables a dump is read for; the others only tell where the dump ends.
READ = frozenset(
    {
        "SLURMD_NODENAME",
        "SLURM_STEP_NODELIST",
        "SLURM_JOB_NODELIST",
        "SLURM_NODELIST",
        "HOSTNAME",
        "MASTER_ADDR",
        "SLURM_STEP_GPUS",
        "SLURM_JOB_GPUS",
        "CUDA_VISIBLE_DEVICES",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "NODE_RANK",
        "SLURM_NODEID",
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "SLURM_PROCID",
        "SLURM_LOCALID",
    }
)
#: Variables that make a dump a process of the job's (with a number for a value).
_RANKS = ("RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID")
_NUMBER = re.compile(r"\d{1,9}")
_INDEXES = re.compile(r"\d{1,4}(?:,\d{1,4})*")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_IPV4 = re.compile(r"[\d.]+")
_LOOPBACK = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def placed_hosts(
    values: Mapping[str, str], *, slurm: bool, kubernetes: bool, file_host: str
) -> tuple[str, tuple[PlacedHost, ...]]:
    """The node the process ran on ("" when the dump does not tell) and the job's hosts the
    dump names: that node with its GPUs and place, and the host MASTER_ADDR names.

    `values`: the dump's variables of `READ`; `slurm`, `kubernetes`: whether it holds any
    SLURM_* or KUBERNETES_* variable; `file_host`: the host its log file belongs to, or "".

    >>> placed_hosts({"SLURMD_NODENAME": "gpu7", "SLURM_STEP_GPUS": "2,3",
    ...               "SLURM_NODEID": "1"}, slurm=True, kubernetes=False, file_host="")
    ('gpu7', (PlacedHost(name='gpu7', gpus=(2, 3), gpu_count=None, node_rank=1),))
    """
    node = _node(values, slurm=slurm, kubernetes=kubernetes, file_host=file_host)
    hosts = []
    if node:
        hosts.append(PlacedHost(node, _gpus(values, slurm or kubernetes), node_rank=_rank(values)))
    master = "" if kubernetes else _host(values.get("MASTER_ADDR", ""))
    if master and master != node:
        hosts.append(PlacedHost(master))
    return node, tuple(hosts)


def _node(values: Mapping[str, str], *, slurm: bool, kubernetes: bool, file_host: str) -> str:
    named = _host(values.get("SLURMD_NODENAME", ""))
    if named:
        return named
    for name in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        try:
            listed = expand(values[name]) if name in values else []
        except HostlistError:
            continue  # the node-list rule dead-letters it
        if len(listed) == 1:
            return listed[0]
    if not any(_NUMBER.fullmatch(values.get(r, "")) for r in _RANKS):
        return ""
    hostname = "" if slurm or kubernetes else _host(values.get("HOSTNAME", ""))
    return hostname or file_host


def _gpus(values: Mapping[str, str], scheduled: bool) -> tuple[int, ...]:
    for name in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        if _INDEXES.fullmatch(values.get(name, "")):
            return _indexes(values[name])
    visible = values.get("CUDA_VISIBLE_DEVICES", "")
    local = values.get("LOCAL_WORLD_SIZE", "")
    if scheduled or not _INDEXES.fullmatch(visible) or not _NUMBER.fullmatch(local):
        return ()
    indexes = _indexes(visible)
    return indexes if len(indexes) >= int(local) else ()


def _indexes(value: str) -> tuple[int, ...]:
    return tuple(sorted({int(i) for i in value.split(",")}))


def _rank(values: Mapping[str, str]) -> int | None:
    for name in ("GROUP_RANK", "NODE_RANK", "SLURM_NODEID"):
        if _NUMBER.fullmatch(values.get(name, "")):
            return int(values[name])
    return None


def _host(value: str) -> str:
    """`value` when it names a host: not an IP address, not loopback."""
    if not _HOST.fullmatch(value) or _IPV4.fullmatch(value) or value.lower() in _LOOPBACK:
        return ""
    return value
