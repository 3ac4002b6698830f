"""A job's environment printed into its own log places the job when nothing else does: a node
list names its hosts, and a process's dump (`env`, a Python `os.environ`, torchrun's listing)
the node it ran on, with that node's GPUs and place and the host MASTER_ADDR names."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from logs_support import real_lines

from railtrace.streams.logs import LogParser, parse_lines
from railtrace.streams.logs.envplace import placed_hosts
from railtrace.streams.records import JobFact, JobPlacement, PlacedHost

SBATCH = Path(__file__).parent / "fixtures" / "scheduler" / "env-dump-22.05-sbatch-srun-l.log"


#: A placement as (its host, its hosts with their GPUs and node rank, its origin line).
Placed = tuple[str, list[tuple[str, tuple[int, ...], int | None]], int]


def placements(facts: list[JobFact]) -> list[Placed]:
    """The placements among `facts`, as `Placed`."""
    return [
        (f.host, [(h.name, h.gpus, h.node_rank) for h in f.hosts], f.origin.line_no)
        for f in facts
        if isinstance(f, JobPlacement)
    ]


def read(name: str, host_hint: str = "") -> list[JobFact]:
    """A real fixture read as the replay reads a file: every line, then the end of input."""
    parser = LogParser("1", name, 2024, host_hint)
    facts = [f for line in real_lines(name) for f in parser.feed(line)]
    assert parser.stats.dead_letters == []
    return facts + parser.pause()


def test_a_real_sbatch_env_dump_places_the_job_once() -> None:
    facts, stats = parse_lines(SBATCH.read_bytes().splitlines(), job_id="1", source="slurm-1.out")
    (placed,) = [f for f in facts if isinstance(f, JobPlacement)]  # two lines, one node list
    assert (placed.job_id, placed.scheduler, placed.origin.line_no) == ("1", "env", 1)
    assert [h.name for h in placed.hosts] == ["gb-n001", "gb-n002"]
    assert stats.dead_letters == []


@pytest.mark.parametrize(
    ("name", "host_hint", "expected"),
    [
        (  # `env | grep nid` in an srun shell: HOSTNAME there was the login node's (daint103)
            "cscs_production_305_env_grep_slurmd_nodename.log",
            "",
            [("", [("nid04027", (), None)], 11), ("nid04027", [("nid04027", (), None)], 11)],
        ),
        (  # one task's srun environment, as the reporter indented it
            "hpx_692_srun_task_env.log",
            "",
            [("", [("t-cn0117", (), None)], 13), ("t-cn0117", [("t-cn0117", (), 0)], 1)],
        ),
        (  # a torchrun worker printing its variables as a dict: MASTER_ADDR is the other node
            "pytorch_137402_torchrun_worker_environ_dict.log",
            "",
            [("GPU36DC", [("GPU36DC", (), None), ("GPU3B62", (), None)], 1)],
        ),
        (  # os.environ pretty-printed under srun: Slurm's GPU indexes, not CUDA's renumbering
            "lightning_16236_pprint_environ_slurm_step_gpus.log",
            "",
            [("", [("eu-g4-015", (), None)], 10), ("eu-g4-015", [("eu-g4-015", (2, 3), 0)], 1)],
        ),
        (  # torchrun's agent: its node rank, on the host the file belongs to
            "pytorch_76367_torchrun_agent_rendezvous_result.log",
            "pytorch-dist-nlp-worker-0",
            [("pytorch-dist-nlp-worker-0", [("pytorch-dist-nlp-worker-0", (), 1)], 1)],
        ),
        (  # ...and nothing without that host: master_addr=localhost names none
            "pytorch_76367_torchrun_agent_rendezvous_result.log",
            "",
            [],
        ),
    ],
)
def test_a_real_env_dump_places_the_node_its_process_ran_on(
    name: str, host_hint: str, expected: list[Placed]
) -> None:
    facts = read(name, host_hint)
    assert placements(facts) == expected
    assert all(
        f.scheduler == "env" and f.job_id == "1" for f in facts if isinstance(f, JobPlacement)
    )
    assert "daint103" not in repr(facts)


def test_torchruns_listing_behind_glog_prefixes_is_read_per_agent_process() -> None:
    """SYNTHETIC: PyTorch 2.4's agent stamps every line of its listing (the format of
    NVIDIA-NeMo/Run#251 without NeMo-Run's own prefix); another agent's line between them is
    another process's."""
    glog = (
        "I0601 20:17:08.128000 {} site-packages/torch/distributed/elastic/agent/server/api.py:525]"
    )
    lines = [
        f"{glog.format(546423)} [default] Rendezvous complete for workers. Result:",
        f"{glog.format(546423)}   restart_count=0",
        f"{glog.format(616467)} [default] Starting worker group",
        f"{glog.format(546423)}   master_addr=gpu-a1",
        f"{glog.format(546423)}   group_rank=1",
        f"{glog.format(546423)}",
    ]
    parser = LogParser("1", "logs/1/gpu-b7:/var/log/train.log", 2024, "gpu-b7")
    facts = [f for line in lines for f in parser.feed(line)]
    assert placements(facts) == [("gpu-b7", [("gpu-b7", (), 1), ("gpu-a1", (), None)], 1)]


def test_a_trainers_line_that_prints_rank_is_no_placement() -> None:
    """SYNTHETIC trainer lines: `RANK=` with the step's numbers after it is no variable of an
    environment, and one `NAME=value` line alone is no dump, even in a file whose host is known."""
    lines = [
        "RANK=3 loss=2.1043 lr=3.0e-04",
        "RANK=3 loss=2.0917 lr=3.0e-04",
        "[rank3]: step 120 RANK=3 HOSTNAME=gpu-a1",
        "RANK=3",
        "epoch 1 step 121",
        "{'loss': 2.0811, 'RANK': 3, 'epoch': 0.16}",
    ]
    parser = LogParser("1", "rank3.log", 2024, "gpu-b7")
    facts = [f for line in lines for f in parser.feed(line)] + parser.pause()
    assert placements(facts) == []


@pytest.mark.parametrize(
    "lines",
    [
        [  # SYNTHETIC: `srun -l env`, the two tasks' lines interleaved
            "0: SLURMD_NODENAME=gpu-a1",
            "1: SLURMD_NODENAME=gpu-b7",
            "0: SLURM_STEP_GPUS=0,1",
            "1: SLURM_STEP_GPUS=2,3",
            "1: SLURM_NODEID=1",
            "0: SLURM_NODEID=0",
            "0: started",
            "1: started",
        ],
        [  # SYNTHETIC: `srun env` without labels, one whole dump after the other
            "SLURMD_NODENAME=gpu-a1",
            "SLURM_STEP_GPUS=0,1",
            "SLURM_NODEID=0",
            "SLURMD_NODENAME=gpu-b7",
            "SLURM_STEP_GPUS=2,3",
            "SLURM_NODEID=1",
            "started",
        ],
    ],
    ids=["labelled", "back-to-back"],
)
def test_the_dumps_of_two_processes_on_two_nodes_place_both_nodes_unmixed(
    lines: list[str],
) -> None:
    facts, _ = parse_lines(lines, job_id="1", source="slurm-1.out")
    assert sorted((p[0], p[1]) for p in placements(facts)) == [
        ("gpu-a1", [("gpu-a1", (0, 1), 0)]),
        ("gpu-b7", [("gpu-b7", (2, 3), 1)]),
    ]


def test_a_dump_is_read_when_its_process_goes_on_or_the_input_pauses() -> None:
    dump = ["SLURMD_NODENAME=gpu-a1", "SLURM_PROCID=0"]
    parser = LogParser("1", "s")
    assert [f for line in dump for f in parser.feed(line)] == []
    (placed,) = parser.feed("loading checkpoint")  # the process printed something else
    assert isinstance(placed, JobPlacement) and placed.host == "gpu-a1"
    parser = LogParser("1", "s")
    assert [f for line in dump for f in parser.feed(line)] == []
    (again,) = parser.pause()  # a log shipper's message ended with the dump
    assert again == placed
    assert parser.pause() == []


def test_a_restored_parser_finishes_the_dump_its_snapshot_held() -> None:
    parser = LogParser("1", "s", host_hint="gpu-b7")
    assert parser.feed("RANK=5") == [] and parser.feed("LOCAL_RANK=1") == []
    again = LogParser.restore(orjson.loads(orjson.dumps(parser.snapshot())))
    assert again.feed("LOCAL_WORLD_SIZE=4") == []
    (placed,) = again.feed("training")
    assert isinstance(placed, JobPlacement) and placed.hosts == (PlacedHost("gpu-b7"),)
    assert placed.origin.line_no == 1


def test_only_whole_assignment_lines_count() -> None:
    lines = [
        "echo SLURM_JOB_NODELIST=gpu[1-4]",  # a script that mentions it
        "2026-12-01T10:00:00Z 3: SLURM_JOB_NODELIST=gpu[1-2]",  # shipper stamp, srun -l prefix
        "export SLURM_NODELIST=gpu[3-4]",
    ]
    facts, _ = parse_lines(lines, job_id="7", source="s")
    assert [[h.name for h in f.hosts] for f in facts] == [["gpu1", "gpu2"], ["gpu3", "gpu4"]]


def test_a_damaged_node_list_is_a_dead_letter_and_the_next_line_is_read() -> None:
    parser = LogParser("7", "s")
    assert parser.feed("SLURM_JOB_NODELIST=gpu[1-") == []
    (dead,) = parser.stats.take_dead_letters()
    assert dead.extra["rule"] == "env-nodelist" and "not closed" in dead.reason
    (placed,) = parser.feed("SLURM_JOB_NODELIST=gpu[1-2]")
    assert isinstance(placed, JobPlacement)


def test_a_restored_parser_does_not_place_the_job_again() -> None:
    parser = LogParser("7", "s")
    assert parser.feed("SLURM_JOB_NODELIST=gpu[1-2]")
    again = LogParser.restore(parser.snapshot())
    assert again.feed("SLURM_JOB_NODELIST=gpu[1-2]") == []
    assert again.feed("SLURM_JOB_NODELIST=gpu[3-4]")  # another step's list is news


@pytest.mark.parametrize(
    ("values", "slurm", "kubernetes", "expected"),
    [
        # Slurm passes the submitting shell's HOSTNAME on: the file's host, not a login node.
        (
            {"HOSTNAME": "login1", "SLURM_PROCID": "3"},
            True,
            False,
            ("gpu-f", [("gpu-f", (), None)]),
        ),
        # A pod's HOSTNAME is the pod, its MASTER_ADDR a service: neither is a node.
        (
            {"HOSTNAME": "llm-worker-1", "MASTER_ADDR": "llm-master-0", "RANK": "9"},
            False,
            True,
            ("gpu-f", [("gpu-f", (), None)]),
        ),
        # torchrun on bare hosts: CUDA_VISIBLE_DEVICES is the node's set when every local
        # process sees it all...
        (
            {
                "HOSTNAME": "gpu-a1",
                "RANK": "1",
                "LOCAL_WORLD_SIZE": "2",
                "CUDA_VISIBLE_DEVICES": "4,5",
            },
            False,
            False,
            ("gpu-a1", [("gpu-a1", (4, 5), None)]),
        ),
        # ...and only one process's share when it lists fewer: left out, not narrowed.
        (
            {
                "HOSTNAME": "gpu-a1",
                "RANK": "1",
                "LOCAL_WORLD_SIZE": "2",
                "CUDA_VISIBLE_DEVICES": "5",
            },
            False,
            False,
            ("gpu-a1", [("gpu-a1", (), None)]),
        ),
        # An address is no host name; a named MASTER_ADDR is one of the job's hosts.
        ({"MASTER_ADDR": "10.0.0.7", "RANK": "0"}, False, False, ("gpu-f", [("gpu-f", (), None)])),
        (
            {"MASTER_ADDR": "gpu-a1", "NODE_RANK": "1", "RANK": "8"},
            False,
            False,
            ("gpu-f", [("gpu-f", (), 1), ("gpu-a1", (), None)]),
        ),
        # No rank, no node name: a container's own `env`, not a process of the job.
        ({"HOSTNAME": "3f2a1b9c"}, False, False, ("", [])),
    ],
)
def test_what_a_dump_says_of_its_node(
    values: dict[str, str], slurm: bool, kubernetes: bool, expected: tuple[str, list[object]]
) -> None:
    node, hosts = placed_hosts(values, slurm=slurm, kubernetes=kubernetes, file_host="gpu-f")
    assert (node, [(h.name, h.gpus, h.node_rank) for h in hosts]) == expected
