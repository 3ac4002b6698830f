"""Kubernetes pods as kubectl prints them (tests/fixtures/scheduler/, each file's source in its
README): each pod's node, GPUs and index, alike from JSON and YAML."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import yaml

from railtrace.streams.scheduler import read_placements

FIXTURES = Path(__file__).parent / "fixtures" / "scheduler"
#: `kubectl get pods -o json` of a 32-node, 8-GPU-per-node Indexed Job on AKS (the Flux
#: Operator's MiniCluster), from converged-computing/performance-study; two of its pods and
#: a DaemonSet pod of the same listing.
AKS_GPU_JSON = "kubectl-pods-json-indexed-job-gpu-aks-performance-study.json"
#: The console YAML of a Kubeflow PyTorchJob worker, from DaoCloud's AI Lab docs.
DCE_PYTORCH_YAML = "kubectl-pod-pytorchjob-worker-hami-vgpu-succeeded-dce-console.yaml"


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()) * 10**9


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


@pytest.mark.parametrize("name", [AKS_GPU_JSON, DCE_PYTORCH_YAML])
def test_the_same_pods_in_json_and_in_yaml_give_the_same_placements(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    doc = orjson.loads(data) if name.endswith(".json") else yaml.safe_load(data)
    as_json = read_placements("pods", orjson.dumps(doc))
    as_yaml = read_placements("pods", yaml.safe_dump(doc).encode())
    assert as_json.placements and as_json.placements == as_yaml.placements
    assert as_json.dead_letters == as_yaml.dead_letters
