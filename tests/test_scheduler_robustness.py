"""What the fuzz run of the scheduler reader found (benchmarks/fuzzing/scheduler_reader.py):
each damage costs its own record at most, never the file, never an exception, never seconds."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from railtrace.streams.scheduler import read_placements

FIXTURES = Path(__file__).parent / "fixtures" / "scheduler"
GOOD = (FIXTURES / "scontrol-show-job-d-2019-multinode-running.txt").read_text()  # JobId=1
SQUEUE = orjson.loads((FIXTURES / "squeue-json-24.05.json").read_bytes())


def _text_with(bad: str) -> bytes:
    return (bad + "\n\n" + GOOD).encode("utf-8", "surrogateescape")


def _ids(data: bytes) -> list[str]:
    return [p.job_id for p in read_placements("s", data).placements]


@pytest.mark.parametrize(
    "bad",
    [
        GOOD.replace("JobId=1 ", "JobId=2 ").replace(
            "NodeList=node-[63-65]", "NodeList=n[" + "9" * 5000 + "]"
        ),
        GOOD.replace("JobId=1 ", "JobId=2 ").replace(
            "StartTime=2019-01-31T10:35:53", "StartTime=2019-13-45T10:35:53"
        ),
        GOOD.replace("JobId=1 ", "JobId=2 ").replace(
            "GRES_IDX=", "GRES=gpu(IDX:" + "7" * 5000 + ")"
        ),
        GOOD.replace("JobId=1 JobName=name1", "   JobName=name1"),  # the record lost its JobId
    ],
    ids=["5000-digit-range", "month-13", "5000-digit-gpu-index", "no-jobid-first"],
)
def test_a_damaged_scontrol_record_costs_itself_only(bad: str) -> None:
    got = read_placements("s", _text_with(bad))
    assert [p.job_id for p in got.placements] == ["1"]
    assert len(got.dead_letters) == 1 and got.dead_letters[0].reason


def test_a_long_line_without_a_key_is_read_in_linear_time() -> None:
    # 30,000 letters with no '=' took the old look-ahead regex 6 s: it rescanned the run from
    # every position for a key.
    long = GOOD.replace("JobId=1 ", "JobId=2 ").replace(
        "   Command=", "   " + "x" * 100_000 + "\n   Command="
    )
    started = time.process_time()
    assert sorted(_ids(_text_with(long))) == ["1", "2"]
    assert time.process_time() - started < 1.0


def test_a_byte_that_is_not_utf8_costs_no_record() -> None:
    data = _text_with(GOOD.replace("JobId=1 ", "JobId=2 ")).replace(b"Command=", b"Command=\xff")
    got = read_placements("s", data)
    assert sorted(p.job_id for p in got.placements) == ["1", "2"]
    assert "not UTF-8" in got.dead_letters[0].reason


def test_json_orjson_refuses_is_still_read() -> None:
    text = orjson.dumps(SQUEUE).decode()
    huge = text.replace('"job_id":7097809', '"job_id":7097809,"priority":1e999', 1)
    assert _ids(huge.encode()) == ["7097809", "7106658"]
    got = read_placements("s", (text + "\n{junk").encode())  # a second output appended
    assert [p.job_id for p in got.placements] == ["7097809", "7106658"]
    assert "text after the JSON document" in got.dead_letters[0].reason


@pytest.mark.parametrize(
    "damage",
    [
        {"job_state": [[[[{}]]]] * 3},
        {"job_state": {"deep": None}},
        {"nodes": 7},
    ],
)
def test_a_job_of_the_wrong_types_is_one_dead_letter(damage: dict) -> None:
    doc = orjson.loads(orjson.dumps(SQUEUE))
    doc["jobs"][0].update(damage)
    got = read_placements("s", orjson.dumps(doc))
    assert [p.job_id for p in got.placements] == ["7106658"]
    assert len(got.dead_letters) == 1


def test_a_document_nested_past_1024_levels_is_refused_saying_so() -> None:
    """No JSON reader here goes deeper (orjson stops at 1,024, Python's json at its recursion
    limit), and no scheduler prints such a file: the whole file is one dead letter."""
    text = orjson.dumps(SQUEUE).decode()
    deep = "[" * 3000 + '"RUNNING"' + "]" * 3000
    got = read_placements(
        "s", text.replace('"job_state":["RUNNING"]', '"job_state":' + deep, 1).encode()
    )
    assert got.placements == []
    assert "depth limit exceeded" in got.dead_letters[0].reason


def test_a_job_of_a_few_hundred_levels_is_one_dead_letter() -> None:
    text = orjson.dumps(SQUEUE).decode()
    deep = "[" * 500 + '"RUNNING"' + "]" * 500
    got = read_placements(
        "s", text.replace('"job_state":["RUNNING"]', '"job_state":' + deep, 1).encode()
    )
    assert [p.job_id for p in got.placements] == ["7106658"]
    assert len(got.dead_letters) == 1


def _pod(**spec: object) -> dict:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"job-name": "j"}},
        "spec": {"nodeName": "gb-n001", **spec},
        "status": {"phase": "Running"},
    }


@pytest.mark.parametrize(
    "pod",
    [
        _pod(containers=[{"env": 7}]),
        _pod(containers=[{"env": [{"name": "PET_NODE_RANK", "value": "\u00b2"}]}]),
        {**_pod(), "status": {"phase": "Succeeded", "containerStatuses": [{"state": [1]}]}},
        {**_pod(), "status": {"phase": "Running", "startTime": "9999-12-31T23:59:59-23:59"}},
        _pod(nodeName="gb n\ufffd"),
    ],
    ids=["env-not-a-list", "superscript-rank", "state-a-list", "time-past-9999", "bad-node"],
)
def test_an_odd_pod_is_read_or_refused_alone(pod: dict) -> None:
    good = _pod()
    good["metadata"] = {"name": "q", "labels": {"job-name": "k"}}
    got = read_placements("pods.json", orjson.dumps({"kind": "List", "items": [pod, good]}))
    assert "k" in [p.job_id for p in got.placements]
    assert all(d.reason for d in got.dead_letters)


FUZZ = Path(__file__).parent / "fixtures" / "fuzz"


@pytest.mark.parametrize(
    ("name", "jobs"),
    [
        ("scheduler-scontrol-bom-before-first-record.txt", ["1", "153291"]),
        ("scheduler-scontrol-first-record-starts-with-bracket.txt", ["1", "153291"]),
        ("scheduler-scontrol-20000-blanks-in-a-line.txt", ["7"]),
        ("scheduler-scontrol-one-record-not-utf8.txt", None),
    ],
)
def test_reduced_fuzz_inputs_keep_their_good_records(name: str, jobs: list[str] | None) -> None:
    started = time.process_time()
    got = read_placements(name, (FUZZ / name).read_bytes())
    assert time.process_time() - started < 1.0
    if jobs is not None:
        assert [p.job_id for p in got.placements] == jobs
    else:
        assert len(got.placements) == 3


def test_a_yaml_value_yaml_would_resolve_costs_nothing() -> None:
    pod = (
        b"kind: Pod\nmetadata: {name: p, labels: {job-name: j}}\nspec: {nodeName: gb-n001}\n"
        b"status: {phase: Running, startTime: 2026-13-45}\nx: " + b"9" * 5000 + b"\n"
    )
    got = read_placements("p.yaml", pod)
    assert got.placements == [] and "2026-13-45" in got.dead_letters[0].reason  # that pod only


def test_plain_names_count_towards_the_host_bound() -> None:
    from railtrace.streams.scheduler.hostlist import MAX_HOSTS, HostlistError, expand

    with pytest.raises(HostlistError, match="more than"):
        expand(",".join(["n"] * (MAX_HOSTS + 1)))
