"""benchmarks/log_corpus.py's tally, on two real excerpts whose lines were counted by hand."""

from __future__ import annotations

import sys
from pathlib import Path

from logs_support import REAL

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.log_corpus
from benchmarks.log_corpus import DEAD, FACT, NOTHING, Tally, table, tally_corpus, tally_file


def outcomes(tally: Tally) -> tuple[int, int, int, int]:
    return (tally.counts[FACT], tally.counts[DEAD], tally.counts[NOTHING], tally.blank)


def test_nccl_lines_count_as_nccl_whether_or_not_they_yield_a_fact() -> None:
    name = "nccl_1905_shipper_stamp_qp_fatal_hca.log"
    tallies = tally_file(name, (REAL / name).read_bytes(), 2024)
    # Two transport failures; the `communicator encountered a fatal error` WARN yields nothing.
    assert {family: outcomes(t) for family, t in tallies.items()} == {"nccl": (2, 0, 1, 0)}


def test_lines_that_yield_nothing_take_their_family_from_their_shape() -> None:
    name = "gpu_operator_1146_syslog_dmesg_stamp_xid48_64.log"
    tallies = tally_file(name, (REAL / name).read_bytes(), 2024)
    # Two Xid lines, four `RmInitAdapter failed` lines of the same driver.
    assert {family: outcomes(t) for family, t in tallies.items()} == {"kernel": (2, 0, 4, 0)}


def test_corpus_table_sums_files_per_family_and_in_total() -> None:
    names = ["nccl_1905_shipper_stamp_qp_fatal_hca.log", "nccl_docs_ras_mismatch_op_counts.log"]
    tallies = tally_corpus([REAL / n for n in names], 2024)
    lines = table(tallies, len(names)).splitlines()
    # The RAS excerpt: a summary row and 6 named ranks, 10 other lines with text, 3 blank lines.
    assert "| ras | 17 | 7 (41.2%) | 0 (0.0%) | 10 (58.8%) | 3 |" in lines
    assert lines[-1] == "| **all (2 files)** | 20 | 9 (45.0%) | 0 (0.0%) | 11 (55.0%) | 3 |"
