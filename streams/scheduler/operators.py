"""What the training operators write into the pods they make (labels, container env), and
what it tells of a pod's place in its job: which job, whether its host is one of the job's
hosts, and its node rank.

Read from the operators' own code, not guessed:

- Kubeflow's training-operator, PyTorchJob with a Master: every pod gets MASTER_ADDR (the
  master pod's Service, `<job>-master-0`), WORLD_SIZE and RANK; RANK is the pod's index, the
  master 0 and worker i at i + 1. Before v1.7 WORLD_SIZE counts pods; from v1.7 it is pods x
  nprocPerNode (the processes torchrun starts; 1 when it is `auto`) and PET_NODE_RANK
  repeats RANK. Without a
  Master (elastic) none of the three is set: torchrun's rendezvous ranks the nodes, so a
  pod's replica index is not its node rank.
- mpi-operator (v2beta1) labels its launcher `training.kubeflow.org/job-role: launcher`; its
  v1 API labelled it `mpi-job-role`, v1alpha1/v1alpha2 `mpi_role_type`, and the
  training-operator's MPIJob v1 `training.kubeflow.org/replica-type`. The launcher only runs
  mpirun, usually on a CPU node, unless the job runs it as a worker (below).
- Indexed Jobs, JobSet and Kubeflow Trainer v2: the Job controller's completion index, which
  Trainer v2 also hands to torchrun as PET_NODE_RANK (by a field reference, so only the label
  or annotation shows its value in a dump).

MASTER_ADDR is not read: it names the master pod's Service (or a JobSet pod's DNS name), not
a node, so it places nothing; the master's host comes from the master's own pod. Each pod is
read alone (a scheduler output travels one pod per message, `chunks.split`), so a worker
cannot tell either that its master was left out of a listing.
"""

from __future__ import annotations

import re
from typing import Any

from .common import RecordError

#: Labels that name a pod's job, the most specific first (an old mpi-operator's launcher was a
#: batch Job of its own, `<job>-launcher`, so its `job-name` is not the MPIJob's name).
JOB_LABELS = (
    "training.kubeflow.org/job-name",  # training-operator, mpi-operator v2beta1
    "jobset.sigs.k8s.io/jobset-name",  # JobSet, Kubeflow Trainer v2's TrainJob
    "mpi-job-name",  # mpi-operator, MPIJob v1
    "mpi_job_name",  # mpi-operator, MPIJob v1alpha1 and v1alpha2
    "batch.kubernetes.io/job-name",  # a plain indexed Job
    "job-name",
)
#: Labels that give a pod's role in its job, one per operator generation (see above).
ROLE_LABELS = (
    "training.kubeflow.org/job-role",
    "training.kubeflow.org/replica-type",
    "mpi-job-role",
    "mpi_role_type",
)
_REPLICA_INDEX = "training.kubeflow.org/replica-index"
#: The Job controller's completion index: an annotation since Indexed Jobs began (1.21), a
#: label too from Kubernetes 1.28.
_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
#: A JobSet's index of the Job within its replicated job: past 0, a completion index counts
#: from 0 again, so it is no node rank of the whole job.
_JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
#: Env that names the pod's node rank outright: the training-operator's and Trainer v2's
#: PET_NODE_RANK (torchrun's --node-rank), torchrun's own GROUP_RANK, Lightning's NODE_RANK.
_NODE_RANK_ENV = ("PET_NODE_RANK", "GROUP_RANK", "NODE_RANK")
#: A value that is one `$(VAR)` reference, which the kubelet fills in: unknown in a dump.
_REFERENCE = re.compile(r"\$\([-._a-zA-Z][-._a-zA-Z0-9]*\)\Z")
#: PET_NNODES of an elastic PyTorchJob: `min:max` nodes.
_NODE_RANGE = re.compile(r"([0-9]{1,9}):([0-9]{1,9})\Z")


def job_id(labels: dict[str, Any]) -> str | None:
    return next((labels[k] for k in JOB_LABELS if isinstance(labels.get(k), str)), None)


def runs_no_ranks(labels: dict[str, Any], env: dict[str, str], asks_gpus: bool) -> bool:
    """Whether the pod is an MPI launcher that only starts mpirun: its host (often a CPU node)
    is none of the job's hosts. A launcher runs ranks when the job runs it as a worker
    (runLauncherAsWorker), which shows as a replica index (mpi-operator gives the launcher
    index 0 only then, from v0.7), or as GPUs it asks for and can see: the training-operator
    lists a launcher that asks for GPUs in the hostfile, and mpi-operator blanks
    NVIDIA_VISIBLE_DEVICES in a launcher that is no worker, whatever it asked for."""
    if not any(labels.get(k) == "launcher" for k in ROLE_LABELS):
        return False
    if _REPLICA_INDEX in labels:
        return False
    return not asks_gpus or env.get("NVIDIA_VISIBLE_DEVICES") == ""


def node_rank(
    name: str, env: dict[str, str], labels: dict[str, Any], annotations: dict[str, Any]
) -> int | None:
    """The pod's place among the job's nodes, or None when nothing the pod carries says it.

    RANK is read as the node rank only where WORLD_SIZE counts pods, so that a process rank
    (torchrun's WORLD_SIZE is nodes x processes) is never taken for one: WORLD_SIZE equal to
    PET_NNODES, or no PET_NNODES at all (the training-operator before v1.7), and no
    LOCAL_RANK beside it (no operator sets LOCAL_RANK; a pod that does runs one process of
    several on its node, and RANK is that process's). Values the operators could not have
    written (a rank that is no count, or not below the job's size) make the pod unusable: it
    was not made the way this reading assumes. A `$(VAR)` reference is merely unknown.
    """
    nodes = _node_count(name, env)
    world = _count(name, "WORLD_SIZE", env.get("WORLD_SIZE"))
    rank = _count(name, "RANK", env.get("RANK"))
    if rank is not None and world is not None and rank >= world:
        raise RecordError(f"pod {name}: RANK {rank} is not below WORLD_SIZE {world}")
    for key in _NODE_RANK_ENV:
        if (given := _count(name, key, env.get(key))) is not None:
            if nodes is not None and given >= nodes:
                raise RecordError(f"pod {name}: {key} {given} is not below PET_NNODES {nodes}")
            return given
    pods = world is not None and (nodes is None or world == nodes)
    if rank is not None and pods and "LOCAL_RANK" not in env:
        return rank
    if labels.get(_JOBSET_JOB_INDEX, "0") != "0":
        return None
    index = labels.get(_COMPLETION_INDEX, annotations.get(_COMPLETION_INDEX))
    return _count(name, _COMPLETION_INDEX, index)


def _count(name: str, key: str, value: Any) -> int | None:
    """`value` as a small non-negative count written in ASCII digits ('²' is a digit to
    str.isdigit, and not to int), None when absent or a `$(VAR)` reference."""
    if value is None or (isinstance(value, str) and _REFERENCE.match(value)):
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value)
    raise RecordError(f"pod {name}: {key} {str(value)[:40]!r} is not a count")


def _node_count(name: str, env: dict[str, str]) -> int | None:
    """PET_NNODES as the most nodes the job may have (an elastic job's `min:max`)."""
    if (span := _NODE_RANGE.match(env.get("PET_NNODES", ""))) is not None:
        return int(span.group(2))
    return _count(name, "PET_NNODES", env.get("PET_NNODES"))
