"""The scheduler readers on real outputs (tests/fixtures/scheduler/, each file's source in its
README): which hosts and GPUs a job holds, when it ran, and a dead letter for what cannot be
used, with the rest of the file kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest

from railtrace.streams.records import JobPlacement
from railtrace.streams.scheduler import read_placements

FIXTURES = Path(__file__).parent / "fixtures" / "scheduler"


def read(name: str) -> list[JobPlacement]:
    got = read_placements(name, (FIXTURES / name).read_bytes())
    assert got.dead_letters == []
    return got.placements


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()) * 10**9


def test_scontrol_multinode_job_expands_its_nodelist() -> None:
    (job,) = read("scontrol-show-job-d-2019-multinode-running.txt")
    assert (job.job_id, job.state, job.scheduler) == ("1", "RUNNING", "slurm")
    assert [h.name for h in job.hosts] == ["node-63", "node-64", "node-65"]
    assert job.start_ns == job.ts_ns == at("2019-01-31T10:35:53")
    assert job.end_ns is None  # a running job's EndTime is its time limit, not an end


def test_scontrol_detail_lines_give_each_nodes_gpu_indexes() -> None:
    (old,) = read("scontrol-show-job-d-2019-gpu-gres_idx.txt")  # GRES_IDX=gpu(IDX:0,2-3,5)
    assert [(h.name, h.gpus, h.gpu_count) for h in old.hosts] == [("node-06", (0, 2, 3, 5), 4)]
    (new,) = read("scontrol-show-job-d-2019-12-array-gpu-idx.txt")  # GRES=gpu(IDX:5)
    assert new.hosts[0].gpus == (5,)
    (typed,) = read("scontrol-show-job-d-2025-job_gres-typed-gpu.txt")  # gpu:rtx2080:1(IDX:1)
    assert typed.hosts[0].gpus == (1,)


def test_scontrol_completed_job_has_its_end() -> None:
    (job,) = read("scontrol-show-job-d-2019-array-completed.txt")
    assert job.state == "COMPLETED"
    assert (job.start_ns, job.end_ns) == (at("2019-01-31T12:26:08"), at("2019-01-31T16:19:20"))


@pytest.mark.parametrize(
    "name",
    [
        "scontrol-show-job-d-2019-pending-nodelist-null.txt",
        "slurmrestd-job-pending-24.11-v0.0.42.json",
    ],
)
def test_pending_jobs_are_counted_but_place_nothing(name: str) -> None:
    got = read_placements(name, (FIXTURES / name).read_bytes())
    assert (got.placements, got.dead_letters, got.waiting) == ([], [], 1)


def test_scontrol_one_line_per_job_output_reads_every_job() -> None:
    got = read_placements(
        "o.txt", (FIXTURES / "scontrol-show-job-o-d-oneliner-2015.txt").read_bytes()
    )
    text = (FIXTURES / "scontrol-show-job-o-d-oneliner-2015.txt").read_text()
    jobs = [line for line in text.splitlines() if line.startswith("JobId=")]
    assert len(got.placements) + got.waiting == len(jobs) and not got.dead_letters


def test_scontrol_times_are_read_in_the_zone_they_were_printed_in() -> None:
    data = (FIXTURES / "scontrol-show-job-d-2019-multinode-running.txt").read_bytes()
    cet = read_placements("s", data, timezone(timedelta(hours=1))).placements[0]
    assert cet.start_ns == at("2019-01-31T09:35:53")


def test_squeue_json_of_2105_and_2405_shapes() -> None:
    (old,) = read("squeue-json-21.08.json")  # job_state a string, times plain integers
    assert (old.job_id, old.state, [h.name for h in old.hosts]) == ("26515966", "RUNNING", ["cs75"])
    assert old.start_ns == 1684114921 * 10**9
    new = read("squeue-json-24.05.json")  # job_state a list, times {set, infinite, number}
    assert [(j.job_id, [h.name for h in j.hosts]) for j in new] == [
        ("7097809", ["node038", "node039"]),
        ("7106658", ["gpu003"]),
    ]
    assert new[1].hosts[0].gpus == (0, 1)
    assert new[0].start_ns == 1761521830 * 10**9


def test_slurmrestd_jobs_give_per_node_gpus() -> None:
    (job,) = read("slurmrestd-job-gpus-multinode-25.05-v0.0.43.json")
    assert [(h.name, h.gpus) for h in job.hosts] == [("gpu1", (0, 1, 2, 3)), ("gpu2", (0, 1, 2, 3))]
    (v40,) = read("slurmrestd-job-gpus-multinode-23.11-v0.0.40.json")
    assert [(h.name, h.gpus) for h in v40.hosts] == [("ia1", (0, 1)), ("ia2", (0, 1))]


def test_sacct_json_gives_start_and_end_of_finished_jobs() -> None:
    (job,) = read("sacct-json-23.02.json")
    assert (job.job_id, job.state) == ("12079670", "COMPLETED")
    assert (job.start_ns, job.end_ns) == (1741667820 * 10**9, 1741668146 * 10**9)
    (failed,) = read("slurmrestd-slurmdb-job-failed-24.11-v0.0.42.json")
    assert failed.state == "FAILED" and failed.end_ns is not None


def test_sacct_json_of_2205_places_each_job_once_not_its_steps() -> None:
    """22.05's sacct prints through slurmdbd's openapi/dbv0.0.38: `state.current` a string,
    `time.start` / `time.end` integers (end 0 while running), `nodes` a hostlist string on the
    job but an object on each step, and GPUs only as the job's total in `tres.allocated`."""
    name = "sacct-json-22.05-debian12-completed-failed-running-pending.json"
    data = (FIXTURES / name).read_bytes()
    got = read_placements(name, data)
    assert (got.dead_letters, got.waiting) == ([], 1)  # job 4: PENDING, "None assigned"
    both = ["gb-n001", "gb-n002"]
    assert [
        (j.job_id, j.state, [h.name for h in j.hosts], j.start_ns, j.end_ns, j.origin.line_no)
        for j in got.placements
    ] == [
        ("1", "COMPLETED", both, at("2026-12-05T13:58:22"), at("2026-12-05T13:58:27"), 1),
        ("2", "FAILED", both, at("2026-12-05T13:58:31"), at("2026-12-05T13:58:33"), 2),
        ("3", "RUNNING", both, at("2026-12-05T13:58:44"), None, 3),
    ]
    # Each placed job has a batch step on gb-n001 and an srun step on both nodes: they are
    # parts of the job, and give no placement of their own.
    jobs = orjson.loads(data)["jobs"]
    assert [[s["nodes"]["range"] for s in job["steps"]] for job in jobs[:3]] == [
        ["gb-n001", "gb-n[001-002]"]
    ] * 3
    # tres.allocated says gres/gpu=8 for job 1 (4 on each node), but as the job's total: its
    # split over the hosts is not printed, so no host gets GPUs or a count.
    assert {"type": "gres", "name": "gpu", "id": 1001, "count": 8} in jobs[0]["tres"]["allocated"]
    assert {(h.gpus, h.gpu_count) for j in got.placements for h in j.hosts} == {((), None)}


def test_a_bad_job_is_a_dead_letter_and_the_others_are_kept() -> None:
    doc = orjson.loads((FIXTURES / "squeue-json-24.05.json").read_bytes())
    doc["jobs"][0]["nodes"] = "node[038-0"  # the hostlist cut off
    got = read_placements("squeue.json", orjson.dumps(doc))
    assert [j.job_id for j in got.placements] == ["7106658"]
    (dead,) = got.dead_letters
    assert (dead.source, dead.line_no) == ("squeue.json", 1)
    assert "7097809" in dead.reason and "not closed" in dead.reason


def test_a_bad_scontrol_record_is_a_dead_letter_and_the_next_is_read() -> None:
    good = (FIXTURES / "scontrol-show-job-d-2019-multinode-running.txt").read_text()
    bad = good.replace("NodeList=node-[63-65]", "NodeList=node-[65-63]")
    got = read_placements("s.txt", (bad + "\n" + good).encode())
    assert len(got.placements) == 1
    (dead,) = got.dead_letters
    assert dead.line_no == 1 and "backwards" in dead.reason


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\xff\xfe garbage", "not UTF-8"),
        (b"{not json", "not JSON"),
        (b'{"kind": "Service"}', "neither"),
        (b"Sun Mar 3 squeue: error: Invalid user", "not a scheduler output"),
    ],
)
def test_unreadable_files_are_dead_letters_with_the_reason(data: bytes, says: str) -> None:
    got = read_placements("scheduler/x", data)
    assert got.placements == []
    assert says in got.dead_letters[0].reason


def test_real_slurm_2205_text_and_json_agree_on_a_multinode_gpu_job() -> None:
    (text,) = read("scontrol-show-job-d-22.05-multinode-gpu.txt")
    got = read_placements(
        "sq", (FIXTURES / "squeue-json-22.05-running-and-pending.json").read_bytes()
    )
    assert got.waiting == 1 and not got.dead_letters  # job 2 waits for resources
    (json_,) = got.placements
    expected = [("gb-n001", tuple(range(8))), ("gb-n002", tuple(range(8)))]
    assert [(h.name, h.gpus) for h in text.hosts] == expected
    assert [(h.name, h.gpus) for h in json_.hosts] == expected
    assert text.start_ns == json_.start_ns == at("2026-12-01T15:26:30")


def test_a_pytorchjob_pod_is_placed_on_its_node() -> None:
    (pod,) = read("kubectl-pod-pytorchjob-worker-hami-vgpu-succeeded-dce-console.yaml")
    assert (pod.job_id, pod.scheduler, pod.state) == (
        "neko-tensorboard-job-test-202404181843-skxivllb",
        "kubernetes",
        "Succeeded",
    )
    assert pod.host == "worker-a800-1" and [h.name for h in pod.hosts] == ["worker-a800-1"]
    assert pod.hosts[0].gpu_count is None  # HAMi's nvidia.com/vgpu is not a whole GPU
    assert (pod.start_ns, pod.end_ns) == (at("2024-04-18T10:43:36"), at("2024-04-18T10:46:34"))


def test_pods_cut_to_their_metadata_are_dead_letters_naming_each_pod() -> None:
    name = "kubectl-pod-mpijob-launcher-worker-metadata-only-kueue-8471.yaml"
    got = read_placements(name, (FIXTURES / name).read_bytes())
    assert got.placements == []
    assert [(d.line_no, d.reason) for d in got.dead_letters] == [
        (1, "pod pi-launcher-tntsp: no spec"),
        (2, "pod pi-worker-0: no spec"),
    ]


def _pod(name: str, node: str | None, phase: str, **env: str) -> dict:
    spec: dict = {
        "containers": [
            {
                "name": "trainer",
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": {"limits": {"nvidia.com/gpu": "8"}},
            }
        ]
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"training.kubeflow.org/job-name": "llm"}},
        "spec": spec,
        "status": {"phase": phase, "startTime": "2026-11-30T08:00:00Z"},
    }


def test_a_pod_list_in_json_gives_each_pods_node_gpus_and_rank() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            _pod("llm-master-0", "gb-n001", "Running", PET_NODE_RANK="0", PET_NPROC_PER_NODE="8"),
            _pod("llm-worker-0", "gb-n002", "Running", PET_NODE_RANK="1", PET_NPROC_PER_NODE="8"),
            _pod("llm-worker-1", None, "Pending"),
            _pod("llm-worker-2", None, "Running"),
        ],
    }
    got = read_placements("pods.json", orjson.dumps(doc))
    assert [
        (p.job_id, p.host, p.hosts[0].gpu_count, p.hosts[0].node_rank) for p in got.placements
    ] == [
        ("llm", "gb-n001", 8, 0),
        ("llm", "gb-n002", 8, 1),
    ]
    assert got.waiting == 1  # pending, not yet on a node
    (dead,) = got.dead_letters
    assert (dead.line_no, dead.reason) == (4, "pod llm-worker-2: Running but no spec.nodeName")


def test_yaml_with_aliases_is_refused_before_it_can_expand() -> None:
    bomb = b"kind: List\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a]\n"
    (dead,) = read_placements("pods.yaml", bomb).dead_letters
    assert "alias at line 3" in dead.reason
