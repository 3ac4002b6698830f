"""A Slurm job's environment dump in its own log places the job when nothing else does."""

from __future__ import annotations

from pathlib import Path

from railtrace.streams.logs import LogParser, parse_lines
from railtrace.streams.records import JobPlacement

REAL = Path(__file__).parent / "fixtures" / "scheduler" / "env-dump-22.05-sbatch-srun-l.log"


def test_a_real_sbatch_env_dump_places_the_job_once() -> None:
    facts, stats = parse_lines(REAL.read_bytes().splitlines(), job_id="1", source="slurm-1.out")
    (placed,) = [f for f in facts if isinstance(f, JobPlacement)]  # two lines, one node list
    assert (placed.job_id, placed.scheduler, placed.origin.line_no) == ("1", "env", 1)
    assert [h.name for h in placed.hosts] == ["gb-n001", "gb-n002"]
    assert stats.dead_letters == []


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
