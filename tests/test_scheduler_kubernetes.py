"""Kubernetes pods as the training operators make them (tests/fixtures/scheduler/, each file's
source in its README): which pods hold the job's hosts, each pod's node rank from what the
operator wrote into it, and a dead letter for a pod that cannot be read, the job's other pods
kept. Pods built here carry the labels and env the operators' own code writes (named per
case); their hosts and sizes are made up."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from railtrace.streams.records import JobPlacement
from railtrace.streams.scheduler import read_placements, uncabled

FIXTURES = Path(__file__).parent / "fixtures" / "scheduler"
#: `kubectl get pods -o json` of a 32-node, 8-GPU-per-node Indexed Job on AKS (the Flux
#: Operator's MiniCluster), from converged-computing/performance-study; two of its pods and
#: a DaemonSet pod of the same listing.
AKS_GPU_JSON = "kubectl-pods-json-indexed-job-gpu-aks-performance-study.json"
#: The console YAML of a Kubeflow PyTorchJob worker, from DaoCloud's AI Lab docs.
DCE_PYTORCH_YAML = "kubectl-pod-pytorchjob-worker-hami-vgpu-succeeded-dce-console.yaml"
#: The MPIJob pods of https://github.com/kubernetes-sigs/kueue/issues/8471 (mpi-operator
#: v0.7.0, runLauncherAsWorker), cut by the poster to their metadata.
KUEUE_MPIJOB_YAML = "kubectl-pod-mpijob-launcher-worker-metadata-only-kueue-8471.yaml"


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()) * 10**9


def placed(got: list[JobPlacement]) -> list[tuple[str, str, list[tuple[str, int | None]]]]:
    return [(p.job_id, p.host, [(h.name, h.node_rank) for h in p.hosts]) for p in got]


def test_kubectl_json_of_a_gpu_indexed_job_places_each_pod_with_its_gpus_and_index() -> None:
    got = read_placements(AKS_GPU_JSON, (FIXTURES / AKS_GPU_JSON).read_bytes())
    started = at("2024-08-31T15:05:54")
    assert [(p.job_id, p.state, p.start_ns) for p in got.placements] == [
        ("flux-sample", "Running", started)
    ] * 2
    assert [(h.name, h.gpu_count, h.node_rank) for p in got.placements for h in p.hosts] == [
        ("aks-nodepool1-11506138-vmss00001j", 8, 0),
        ("aks-nodepool1-11506138-vmss00001b", 8, 1),
    ]
    # The listing's DaemonSet pod (a Mellanox driver installer) belongs to no job.
    (dead,) = got.dead_letters
    assert dead.line_no == 3 and dead.reason.startswith("pod install-mlx-driver-254sl: no label")


def test_the_completion_index_is_read_from_the_annotation_older_clusters_print_alone() -> None:
    # Kubernetes before 1.28 gives an Indexed Job's pod its index as an annotation only.
    doc = orjson.loads((FIXTURES / AKS_GPU_JSON).read_bytes())
    for pod in doc["items"][:2]:
        del pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
    got = read_placements("pods.json", orjson.dumps(doc))
    assert [p.hosts[0].node_rank for p in got.placements] == [0, 1]


@pytest.mark.parametrize("name", [AKS_GPU_JSON, DCE_PYTORCH_YAML])
def test_the_same_pods_in_json_and_in_yaml_give_the_same_placements(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    doc = orjson.loads(data) if name.endswith(".json") else yaml.safe_load(data)
    as_json = read_placements("pods", orjson.dumps(doc))
    as_yaml = read_placements("pods", yaml.safe_dump(doc).encode())
    assert as_json.placements and as_json.placements == as_yaml.placements
    assert as_json.dead_letters == as_yaml.dead_letters


def _pod(
    name: str,
    labels: dict[str, str],
    node: str,
    env: list[tuple[str, str | None]] | None = None,
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A running pod; an env entry of value None is written without a value, as the
    operators write a blanked variable (Go's omitempty)."""
    container: dict[str, Any] = {
        "name": "main",
        "env": [{"name": k} if v is None else {"name": k, "value": v} for k, v in env or []],
    }
    if limits is not None:
        container["resources"] = {"limits": limits}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [container], "nodeName": node},
        "status": {"phase": "Running", "startTime": "2026-01-08T14:46:45Z"},
    }


def _read(*pods: dict[str, Any]) -> Any:
    return read_placements("pods.json", orjson.dumps({"kind": "List", "items": list(pods)}))


def _kueue_pods() -> tuple[dict[str, str], dict[str, str]]:
    docs = list(yaml.safe_load_all((FIXTURES / KUEUE_MPIJOB_YAML).read_bytes()))
    return docs[0]["metadata"]["labels"], docs[1]["metadata"]["labels"]


GPUS = {"nvidia.com/gpu": "8"}
#: mpi-operator's launcher that is no worker: NVIDIA_VISIBLE_DEVICES blanked (v2beta1).
BLANKED = [("NVIDIA_VISIBLE_DEVICES", None), ("NVIDIA_DRIVER_CAPABILITIES", None)]


def test_an_mpi_launcher_that_is_no_worker_holds_none_of_the_jobs_hosts() -> None:
    launcher_labels, worker_labels = _kueue_pods()
    del launcher_labels["training.kubeflow.org/replica-index"]  # no runLauncherAsWorker
    got = _read(
        _pod("pi-launcher-tntsp", launcher_labels, "cpu-node-7", BLANKED),
        _pod("pi-worker-0", worker_labels, "gpu-node-1", limits=GPUS),
    )
    assert placed(got.placements) == [
        ("pi", "", []),
        ("pi", "gpu-node-1", [("gpu-node-1", None)]),
    ]
    # The launcher's CPU node is not reported as a host cables.csv lacks.
    assert uncabled(got.placements, {"gpu-node-1"}) == []


def test_an_mpi_launcher_run_as_a_worker_is_one_of_the_jobs_hosts() -> None:
    # As kueue#8471's job ran it: mpi-operator v0.7 gives such a launcher replica index 0.
    launcher_labels, _ = _kueue_pods()
    got = _read(_pod("pi-launcher-tntsp", launcher_labels, "node-0"))
    assert placed(got.placements) == [("pi", "node-0", [("node-0", None)])]


@pytest.mark.parametrize(
    ("labels", "env", "limits", "hosts"),
    [
        # mpi-operator v2beta1: job-role, GPUs asked for but hidden from a non-worker launcher.
        (
            {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "launcher"},
            BLANKED,
            GPUS,
            [],
        ),
        # training-operator MPIJob v1: replica-type, and job-role master on the launcher.
        (
            {
                "training.kubeflow.org/job-name": "pi",
                "training.kubeflow.org/job-role": "master",
                "training.kubeflow.org/replica-type": "launcher",
            },
            BLANKED,
            None,
            [],
        ),
        # The same launcher asking for GPUs is in the hostfile (isGPULauncher).
        (
            {
                "training.kubeflow.org/job-name": "pi",
                "training.kubeflow.org/replica-type": "launcher",
            },
            [],
            GPUS,
            ["launcher-node"],
        ),
        # mpi-operator's MPIJob v1 API: the launcher is a batch Job of its own, `pi-launcher`.
        (
            {"mpi-job-name": "pi", "mpi-job-role": "launcher", "job-name": "pi-launcher"},
            [],
            None,
            [],
        ),
        # mpi-operator's v1alpha2.
        (
            {"mpi_job_name": "pi", "mpi_role_type": "launcher", "job-name": "pi-launcher"},
            [],
            None,
            [],
        ),
    ],
    ids=["v2beta1-gpus-blanked", "training-operator-v1", "gpu-launcher", "mpi-v1", "mpi-v1alpha2"],
)
def test_every_mpi_operator_generation_names_the_job_and_its_launcher(
    labels: dict[str, str],
    env: list[tuple[str, str | None]],
    limits: dict[str, str] | None,
    hosts: list[str],
) -> None:
    (launcher,) = _read(_pod("pi-launcher", labels, "launcher-node", env, limits)).placements
    assert launcher.job_id == "pi"
    assert [h.name for h in launcher.hosts] == hosts


def _pytorch(env: list[tuple[str, str | None]], **labels: str) -> dict[str, Any]:
    job = {"training.kubeflow.org/job-name": "llm", **labels}
    return _pod("llm-worker-1", job, "gpu-node-3", env, GPUS)


@pytest.mark.parametrize(
    ("pod", "rank"),
    [
        # training-operator before v1.7: WORLD_SIZE counts pods, RANK is the pod's index.
        (_pytorch([("MASTER_ADDR", "llm-master-0"), ("WORLD_SIZE", "3"), ("RANK", "2")]), 2),
        # From v1.7 WORLD_SIZE is pods x nprocPerNode; PET_NODE_RANK says the node rank.
        (
            _pytorch(
                [("WORLD_SIZE", "16"), ("RANK", "1"), ("PET_NODE_RANK", "1"), ("PET_NNODES", "2")]
            ),
            1,
        ),
        # A process's rank, not a node's: WORLD_SIZE counts processes.
        (_pytorch([("WORLD_SIZE", "16"), ("RANK", "9"), ("PET_NNODES", "2")]), None),
        # LOCAL_RANK beside RANK: one process of several on the node.
        (_pytorch([("WORLD_SIZE", "8"), ("RANK", "3"), ("LOCAL_RANK", "3")]), None),
        # RANK alone says nothing of what it counts.
        (_pytorch([("RANK", "2")]), None),
        # The user's RANK is replaced by the operator's, appended after it.
        (_pytorch([("RANK", "0"), ("WORLD_SIZE", "3"), ("RANK", "2")]), 2),
        # An elastic job's PET_NNODES is `min:max`.
        (_pytorch([("PET_NNODES", "1:4"), ("PET_NODE_RANK", "3")]), 3),
        # A `$(VAR)` reference is filled in by the kubelet: unknown here, the index tells.
        (
            _pytorch(
                [("RANK", "$(JOB_COMPLETION_INDEX)"), ("WORLD_SIZE", "4")],
                **{"batch.kubernetes.io/job-completion-index": "2"},
            ),
            2,
        ),
        # A JobSet's second Job counts its completion index from 0 again.
        (
            _pytorch(
                [],
                **{
                    "jobset.sigs.k8s.io/job-index": "1",
                    "batch.kubernetes.io/job-completion-index": "0",
                },
            ),
            None,
        ),
    ],
    ids=[
        "rank-of-pods",
        "pet-node-rank",
        "rank-of-processes",
        "local-rank",
        "rank-alone",
        "last-entry-wins",
        "elastic-range",
        "reference",
        "jobset-second-job",
    ],
)
def test_rank_is_a_node_rank_only_where_world_size_counts_pods(
    pod: dict[str, Any], rank: int | None
) -> None:
    (got,) = _read(pod).placements
    assert got.hosts[0].node_rank == rank


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ([("RANK", "one"), ("WORLD_SIZE", "2")], "RANK 'one' is not a count"),
        ([("RANK", "2"), ("WORLD_SIZE", "2")], "RANK 2 is not below WORLD_SIZE 2"),
        (
            [("PET_NODE_RANK", "4"), ("PET_NNODES", "4")],
            "PET_NODE_RANK 4 is not below PET_NNODES 4",
        ),
        ([("PET_NNODES", "two")], "PET_NNODES 'two' is not a count"),
        ([("WORLD_SIZE", "")], "WORLD_SIZE '' is not a count"),
    ],
)
def test_a_pod_with_garbled_env_is_a_dead_letter_and_its_jobs_other_pods_are_kept(
    env: list[tuple[str, str | None]], reason: str
) -> None:
    good = _pod("llm-worker-0", {"training.kubeflow.org/job-name": "llm"}, "gpu-node-2")
    got = _read(_pytorch(env), good)
    assert placed(got.placements) == [("llm", "gpu-node-2", [("gpu-node-2", None)])]
    (dead,) = got.dead_letters
    assert (dead.line_no, dead.reason) == (1, f"pod llm-worker-1: {reason}")


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ([{"value": "1"}], "an env entry has no name"),
        ([{"name": "RANK", "value": 1}], "env RANK is not a string"),
        ("RANK=1", "a container's env is not a list"),
    ],
)
def test_an_env_no_api_server_accepts_is_a_dead_letter(env: object, reason: str) -> None:
    pod = _pytorch([])
    pod["spec"]["containers"][0]["env"] = env
    got = _read(pod, _pytorch([]))
    assert len(got.placements) == 1
    (dead,) = got.dead_letters
    assert dead.reason == f"pod llm-worker-1: {reason}"
