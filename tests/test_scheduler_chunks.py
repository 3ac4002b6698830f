"""A scheduler output cut into one chunk per job (what the live path publishes, one message
per job, keyed by it) reads, chunk by chunk, to exactly what the whole output reads to: the
same placements with the same origins, and the same bad records refused."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from railtrace.streams.scheduler import read_placements, split

FIXTURES = Path(__file__).parent / "fixtures" / "scheduler"
OUTPUTS = sorted(
    p.name
    for p in FIXTURES.iterdir()
    if p.suffix in {".txt", ".json", ".yaml", ".log"} and not p.name.startswith("nvidia-smi")
)


def _by_chunk(name: str, data: bytes) -> tuple[list[object], list[tuple[int, str]], int]:
    placements: list[object] = []
    dead: list[tuple[int, str]] = []
    waiting = 0
    for chunk in split(data):
        got = read_placements(name, chunk.data, first=chunk.first)
        placements += got.placements
        dead += [(d.line_no, d.source) for d in got.dead_letters]
        waiting += got.waiting
    return placements, dead, waiting


@pytest.mark.parametrize("name", OUTPUTS)
def test_every_real_output_reads_alike_whole_and_chunk_by_chunk(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    whole = read_placements(name, data)
    placements, dead, waiting = _by_chunk(name, data)
    assert placements == whole.placements
    assert dead == [(d.line_no, d.source) for d in whole.dead_letters]
    assert waiting == whole.waiting


def test_an_output_of_several_jobs_is_one_chunk_per_job() -> None:
    text = (FIXTURES / "scontrol-show-job-o-d-oneliner-2015.txt").read_bytes()
    chunks = split(text)
    jobs = [read_placements("o", c.data).placements for c in chunks]
    assert len(chunks) == len(read_placements("o", text).placements) > 1
    assert all(len(j) == 1 for j in jobs)
    listed = orjson.loads((FIXTURES / "squeue-json-22.05-running-and-pending.json").read_bytes())
    assert len(split(orjson.dumps(listed))) == len(listed["jobs"])


def test_a_bad_record_between_good_ones_is_refused_at_its_own_line() -> None:
    good = (FIXTURES / "scontrol-show-job-d-2019-multinode-running.txt").read_text().strip()
    bad = "JobId=77 JobName=x\n   JobState=RUNNING NodeList=gb-n[001-\n"
    data = f"{good}\n\n{bad}\n{good}\n".encode()
    placements, dead, _ = _by_chunk("s", data)
    whole = read_placements("s", data)
    assert len(placements) == 2 and placements == whole.placements
    assert (
        dead == [(good.count("\n") + 3, "s")] == [(d.line_no, d.source) for d in whole.dead_letters]
    )


@pytest.mark.parametrize("data", [b"\xff\xfe garbage", b'{"jobs": [', b"just words", b""])
def test_what_cannot_be_cut_is_one_chunk_whole(data: bytes) -> None:
    assert [(c.first, c.data) for c in split(data)] == [(1, data)]


def test_files_joined_with_cat_read_the_record_after_a_byte_order_mark() -> None:
    # Found by the scheduler fuzz run: the second file's BOM hid its first record.
    one = (FIXTURES / "scontrol-show-job-d-2019-multinode-running.txt").read_bytes()
    two = (FIXTURES / "scontrol-show-job-d-22.05-multinode-gpu.txt").read_bytes()
    data = one + b"\n\xef\xbb\xbf" + two
    whole = read_placements("s", data)
    assert len(whole.placements) == 2 and not whole.dead_letters
    assert _by_chunk("s", data)[0] == whole.placements


def test_a_job_nested_past_what_orjson_writes_is_still_cut_and_read() -> None:
    # Found by the fuzz run: orjson reads 1,024 levels but writes 254; split raised.
    doc = orjson.loads((FIXTURES / "squeue-json-24.05.json").read_bytes())
    deep: object = 1
    for _ in range(300):
        deep = [deep]
    doc["jobs"][0]["comment"] = deep
    data = json.dumps(doc).encode()
    whole = read_placements("sq", data)
    chunks = split(data)
    assert len(chunks) == len(orjson.loads(data)["jobs"]) > 1
    assert _by_chunk("sq", data)[0] == whole.placements != []


def test_a_yaml_stream_whose_first_document_is_flow_style_junk_is_read_as_yaml() -> None:
    # Found by the fuzz run: a first document that starts with `{` sent the file to JSON.
    pods = (
        FIXTURES / "kubectl-pod-pytorchjob-worker-hami-vgpu-succeeded-dce-console.yaml"
    ).read_bytes()
    data = b"{junk: [1, 2]}\n---\n" + pods  # YAML flow style, not JSON
    got = read_placements("pods.yaml", data)
    alone = read_placements("pods.yaml", pods)
    assert [p.job_id for p in got.placements] == [p.job_id for p in alone.placements] != []
    assert _by_chunk("pods.yaml", data)[0] == got.placements
