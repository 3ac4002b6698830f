"""The host log scraper (`railtrace collect logs`) on real files in tmp_path and real asyncio:
appends, partial lines, rotation, truncation, restarts from the offsets state file, job ids,
and the raw-logs messages read back by the pipeline's own LogParser."""

from __future__ import annotations

import asyncio
import doctest
import importlib
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from railtrace.collectors.emit import Collected, Outgoing
from railtrace.collectors.hosts import LogScraper, LogScraperConfig, source_name
from railtrace.collectors.hosts.jobpath import PathTemplate, slurm_job_id
from railtrace.simulate.logs import job_logs
from railtrace.simulate.scenario import Fault, plan_scenario
from railtrace.streams import wire
from railtrace.streams.logs import LogParser, parse_lines

JOB = "4812"
NODE = "gpu-test-01"


class Clock:
    """A hand-moved monotonic clock, so flush and grace timing is decided by the test."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def config(tmp_path: Path, **kw: Any) -> LogScraperConfig:
    base: dict[str, Any] = {
        "paths": [str(tmp_path / "jobs" / "{job_id}" / "*.log")],
        "node": NODE,
        "state_file": tmp_path / "state" / "offsets.json",
        "idle_flush_ms": 0,
        "max_delay_ms": 0,
        "poll_interval_ms": 5,
        "rescan_interval_ms": 1,
        "rotate_grace_ms": 0,
    }
    base.update(kw)
    return LogScraperConfig(**base)


def src(tmp_path: Path, name: str = "rank0.log", job: str = JOB, gen: int = 0) -> str:
    """The source the scraper on NODE names `job_file(tmp_path, name, job)`'s content by."""
    return source_name(job, NODE, str(tmp_path / "jobs" / job / name), gen)


def job_file(tmp_path: Path, name: str = "rank0.log", job: str = JOB) -> Path:
    path = tmp_path / "jobs" / job / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def batches(messages: list[Outgoing]) -> list[wire.LogBatch]:
    return [wire.decode_log_batch(m.value) for m in messages if m.stream == "logs"]


def numbered(messages: list[Outgoing]) -> dict[str, list[tuple[int, str]]]:
    """source -> [(line_no, line)] in emitted order."""
    out: dict[str, list[tuple[int, str]]] = {}
    for b in batches(messages):
        out.setdefault(b.source, []).extend(
            (b.first_line_no + i, line) for i, line in enumerate(b.lines)
        )
    return out


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- appending, partial lines, batching --------------------------------------------------------


def test_appended_lines_go_out_in_order_with_their_line_numbers(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()

    async def go() -> None:
        s = LogScraper(config(tmp_path), out)
        append(path, "one\ntwo\nthree\n")
        await s.poll()
        append(path, "four\nfive\n")
        await s.poll()
        await s.poll()  # nothing new: nothing sent
        s.close()

    run(go())
    got = batches(out.messages)
    assert [(b.source, b.first_line_no, b.lines) for b in got] == [
        (src(tmp_path), 1, ("one", "two", "three")),
        (src(tmp_path), 4, ("four", "five")),
    ]
    assert {(m.stream, m.key, m.state_change) for m in out.messages} == {("logs", b"4812", False)}
    assert all(b.job_id == JOB and b.year == datetime.now(UTC).year for b in got)


def test_partial_last_line_is_held_until_its_newline(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()

    async def go() -> None:
        s = LogScraper(config(tmp_path), out)
        append(path, "first\nsec")
        await s.poll()
        assert numbered(out.messages) == {src(tmp_path): [(1, "first")]}
        append(path, "ond")
        await s.poll()
        assert len(out.messages) == 1  # still no newline
        append(path, "\nthird\n")
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages)[src(tmp_path)] == [
        (1, "first"),
        (2, "second"),
        (3, "third"),
    ]


def test_a_bar_line_longer_than_the_cap_keeps_its_label_and_newest_render(tmp_path: Path) -> None:
    """tqdm redraws after a CR every step and ends the line only with the log dict: the
    scraper keeps the line's first piece and its newest renders, read in many chunks."""
    path = job_file(tmp_path)
    out = Collected()
    renders = [f"\r  1%|          | {n}/100000 [00:01<39:28:18,  1.42s/it]" for n in range(1, 801)]
    line = "0: " + "".join(renders) + "\r{'loss': 0.8533, 'epoch': 0.01}\n"
    assert len(line) > 4 * 8192

    async def go() -> None:
        s = LogScraper(config(tmp_path, max_line_bytes=8192, read_chunk_bytes=4096), out)
        for i in range(0, len(line), 3000):
            append(path, line[i : i + 3000])
            await s.poll()
        append(path, "next\n")
        await s.poll()
        s.close()
        assert s.stats.lines_cut == 0

    run(go())
    ((_, got), (_, after)) = numbered(out.messages)[src(tmp_path)]
    assert len(got.encode()) <= 8192 and after == "next"
    assert got.startswith("0: \r") and got.endswith(
        renders[-1] + "\r{'loss': 0.8533, 'epoch': 0.01}"
    )
    facts, stats = parse_lines([got], job_id=JOB, source="s")
    assert [f.step for f in facts] == [800] and stats.malformed == 0


def test_full_batches_go_at_once_the_rest_after_the_idle_delay(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()
    clock = Clock()

    async def go() -> None:
        s = LogScraper(
            config(tmp_path, max_lines=2, idle_flush_ms=200, max_delay_ms=5000), out, clock
        )
        append(path, "".join(f"l{i}\n" for i in range(1, 6)))
        await s.poll()
        assert [(b.first_line_no, b.lines) for b in batches(out.messages)] == [
            (1, ("l1", "l2")),
            (3, ("l3", "l4")),
        ]
        clock.t += 0.1
        await s.poll()
        assert len(out.messages) == 2  # l5 waits: not yet idle for 200 ms
        clock.t += 0.15
        await s.poll()
        s.close()

    run(go())
    assert [(b.first_line_no, b.lines) for b in batches(out.messages)][-1] == (5, ("l5",))


def test_a_trickling_file_is_flushed_after_max_delay(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()
    clock = Clock()

    async def go() -> None:
        s = LogScraper(
            config(tmp_path, idle_flush_ms=200, max_delay_ms=500, max_lines=100), out, clock
        )
        for i in range(5):  # a line every 150 ms: never idle for 200 ms
            append(path, f"t{i}\n")
            await s.poll()
            sent.append(len(out.messages))
            clock.t += 0.15
        s.close()

    sent: list[int] = []
    run(go())
    got = batches(out.messages)
    assert sent == [0, 0, 0, 0, 1]  # the first line has waited 600 ms >= 500 at the 5th poll
    assert [(b.first_line_no, b.lines) for b in got] == [(1, ("t0", "t1", "t2", "t3", "t4"))]


def test_a_hang_line_goes_out_at_once_marked_as_state_change(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()
    clock = Clock()
    hang = (
        "[rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600042 ms"
    )

    async def go() -> None:
        s = LogScraper(config(tmp_path, idle_flush_ms=60_000, max_delay_ms=60_000), out, clock)
        append(path, "iteration 10\n")
        await s.poll()
        assert out.messages == []  # an ordinary line waits for the idle delay
        append(path, hang + "\n")
        await s.poll()
        append(path, "iteration 11\n")
        await s.poll()
        assert len(out.messages) == 1
        clock.t += 61
        await s.poll()
        s.close()

    run(go())
    assert [(m.state_change, wire.decode_log_batch(m.value).lines) for m in out.messages] == [
        (True, ("iteration 10", hang)),
        (False, ("iteration 11",)),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "gpu3:1234:1290 [2] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5> status=12",
        "gpu3:1234:1290 [2] transport/net_ib.cc:1696 NCCL ERROR something failed",
    ],
)
def test_nccl_warn_and_error_lines_are_state_changes(tmp_path: Path, line: str) -> None:
    path = job_file(tmp_path)
    out = Collected()

    async def go() -> None:
        s = LogScraper(config(tmp_path), out)
        append(path, f"{line}\nok\n")
        await s.poll()
        s.close()

    run(go())
    assert [m.state_change for m in out.messages] == [True]


# -- rotation and truncation -------------------------------------------------------------------


def test_rename_rotation_finishes_the_old_file_and_starts_a_new_source(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()
    clock = Clock()

    async def go() -> None:
        s = LogScraper(config(tmp_path, rotate_grace_ms=1000), out, clock)
        append(path, "a1\na2\n")
        await s.poll()
        append(path, "a3\na4-unfinished")
        os.rename(path, path.with_name("rank0.log.1"))  # logrotate: rename ...
        append(path, "b1\n")  # ... and create
        await s.poll()
        # The writer has not reopened yet: it still writes to the renamed file.
        append(path.with_name("rank0.log.1"), " and finished late\na5\n")
        clock.t += 0.5
        await s.poll()
        append(path.with_name("rank0.log.1"), "a6-never-finished")
        clock.t += 2  # quiet for longer than the grace: the old file is done
        await s.poll()
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {
        src(tmp_path): [
            (1, "a1"),
            (2, "a2"),
            (3, "a3"),
            (4, "a4-unfinished and finished late"),
            (5, "a5"),
            (6, "a6-never-finished"),
        ],
        src(tmp_path, gen=1): [(1, "b1")],
    }


def test_rotation_by_rename_alone_keeps_reading_until_the_new_file_appears(
    tmp_path: Path,
) -> None:
    path = job_file(tmp_path)
    out = Collected()

    async def go() -> None:
        s = LogScraper(config(tmp_path), out)
        append(path, "x1\n")
        await s.poll()
        os.rename(path, path.with_name("rank0.log.1"))
        append(path.with_name("rank0.log.1"), "x2\n")
        await s.poll()
        append(path, "y1\n")
        await s.poll()
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {
        src(tmp_path): [(1, "x1"), (2, "x2")],
        src(tmp_path, gen=1): [(1, "y1")],
    }


def copytruncate(path: Path) -> None:
    shutil.copyfile(path, path.with_name(path.name + ".1"))
    with open(path, "r+b") as fh:
        fh.truncate(0)


@pytest.mark.parametrize("regrown", [False, True])
def test_copytruncate_starts_a_new_source_from_line_one(tmp_path: Path, regrown: bool) -> None:
    """`regrown`: by the next poll the writer has already written more than the old size."""
    path = job_file(tmp_path)
    out = Collected()
    new_lines = [f"new line number {i} with some length" for i in range(6)] if regrown else ["n1"]

    async def go() -> None:
        s = LogScraper(config(tmp_path), out)
        # The writer appends (O_APPEND), as a job's shell redirection does.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, b"old1\nold2\nold3-unfinished")
            await s.poll()
            copytruncate(path)
            os.write(fd, "".join(f"{x}\n" for x in new_lines).encode())
            assert (path.stat().st_size > len("old1\nold2\nold3-unfinished")) == regrown
            await s.poll()
            await s.poll()
        finally:
            os.close(fd)
        s.close()

    run(go())
    got = numbered(out.messages)
    assert got == {
        src(tmp_path): [(1, "old1"), (2, "old2"), (3, "old3-unfinished")],
        src(tmp_path, gen=1): list(enumerate(new_lines, 1)),
    }
    # Fed to the pipeline's parsers, nothing of the new content is taken for a redelivery.
    parsers: dict[str, LogParser] = {}
    for b in batches(out.messages):
        p = parsers.setdefault(b.source, LogParser(b.job_id, b.source, b.year))
        for i, line in enumerate(b.lines):
            p.feed(line, b.first_line_no + i)
    assert sum(p.stats.redelivered for p in parsers.values()) == 0
    assert sum(p.stats.lines for p in parsers.values()) == 3 + len(new_lines)


def test_a_deleted_file_is_finished_and_forgotten(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    out = Collected()
    clock = Clock()

    async def go() -> None:
        s = LogScraper(config(tmp_path, forget_after_s=10), out, clock)
        append(path, "only\nlast-unfinished")
        await s.poll()
        path.unlink()
        await s.poll()
        clock.t += 11
        await s.poll()
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {src(tmp_path): [(1, "only"), (2, "last-unfinished")]}
    state = (tmp_path / "state" / "offsets.json").read_text()
    assert '"files": []' in state.replace("\n", "").replace("  ", " ").replace("[ ]", "[]")


# -- restarts ------------------------------------------------------------------------------------


@dataclass
class Interrupting:
    """An Emit that suspends inside each call (where a real delivery would wait for the
    broker) and records the message only when the call completes: what it recorded is exactly
    what the scraper was told was delivered. `hold` makes calls wait until cancelled."""

    messages: list[Outgoing] = field(default_factory=list)
    hold: Callable[[int], bool] = lambda _n: False
    entered: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, message: Outgoing) -> None:
        await asyncio.sleep(0)
        if self.hold(len(self.messages)):
            self.entered.set()
            await asyncio.sleep(3600)  # cancelled here: this message was never delivered
        self.messages.append(message)


async def wait_for(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def lines_of(path: Path) -> list[str]:
    return path.read_bytes().decode().split("\n")[:-1]


@pytest.mark.parametrize("where", ["inside-emit", "between-emits"])
def test_restart_from_the_state_file_neither_loses_nor_repeats_lines(
    tmp_path: Path, where: str
) -> None:
    path = job_file(tmp_path)
    cfg = config(tmp_path, max_lines=7, read_chunk_bytes=4096)
    append(path, "".join(f"before restart {i:05d}\n" for i in range(600)))
    first = Interrupting()
    if where == "inside-emit":
        first.hold = lambda n: n == 23

    async def go() -> None:
        task = asyncio.create_task(LogScraper(cfg, first).run())
        if where == "inside-emit":
            await wait_for(first.entered.is_set, "the held emit")
        else:
            await wait_for(lambda: len(first.messages) >= 23, "23 messages")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert 0 < sum(len(b.lines) for b in batches(first.messages)) < 600
        append(path, "".join(f"after restart {i:05d}\n" for i in range(100)) + "unfinished")
        second = Interrupting()
        task = asyncio.create_task(LogScraper(cfg, second).run())
        # The last whole line, not a pause: the scraper sends a file's lines in order, so a
        # line it sent twice (resuming from too early a position) came before this one.
        await wait_for(
            lambda: any(b.first_line_no + len(b.lines) > 700 for b in batches(second.messages)),
            "the last whole line",
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        first.messages.extend(second.messages)

    run(go())
    got = numbered(first.messages)
    assert list(got) == [src(tmp_path)]
    rows = got[src(tmp_path)]
    assert [n for n, _ in rows] == list(range(1, 701))
    assert [line for _, line in rows] == lines_of(path)


def test_restart_after_a_rotation_while_stopped_drains_the_renamed_file(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    cfg = config(tmp_path)
    out = Collected()

    async def go() -> None:
        s = LogScraper(cfg, out)
        append(path, "r1\nr2\n")
        await s.poll()
        s.close()
        # While the scraper is down: more lines, then logrotate renames and creates.
        append(path, "r3\n")
        os.rename(path, path.with_name("rank0.log-20260101"))
        append(path, "n1\n")
        s = LogScraper(cfg, out)
        for _ in range(3):
            await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {
        src(tmp_path): [(1, "r1"), (2, "r2"), (3, "r3")],
        src(tmp_path, gen=1): [(1, "n1")],
    }


def test_restart_after_a_truncation_while_stopped_starts_a_new_generation(
    tmp_path: Path,
) -> None:
    path = job_file(tmp_path)
    cfg = config(tmp_path)
    out = Collected()

    async def go() -> None:
        s = LogScraper(cfg, out)
        append(path, "g0-1\ng0-2\n")
        await s.poll()
        s.close()
        copytruncate(path)
        append(path, "g1-1 is a longer line than the whole old content\n")
        s = LogScraper(cfg, out)
        await s.poll()
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {
        src(tmp_path): [(1, "g0-1"), (2, "g0-2")],
        src(tmp_path, gen=1): [(1, "g1-1 is a longer line than the whole old content")],
    }


def test_an_unreadable_state_file_is_set_aside_and_files_are_read_again(tmp_path: Path) -> None:
    path = job_file(tmp_path)
    cfg = config(tmp_path)
    cfg.state_file.parent.mkdir(parents=True)
    cfg.state_file.write_text("{not json")
    append(path, "z1\n")
    out = Collected()

    async def go() -> None:
        s = LogScraper(cfg, out)
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {src(tmp_path): [(1, "z1")]}
    assert cfg.state_file.with_name("offsets.json.bad").read_text() == "{not json"


# -- job ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "path", "job"),
    [
        ("/var/log/jobs/{job_id}/*.log", "/var/log/jobs/4812/rank0.log", "4812"),
        ("/scratch/slurm-{job_id}.out", "/scratch/slurm-77.out", "77"),
        ("/data/**/job_{job_id}/rank?.log", "/data/a/b/job_x1/rank3.log", "x1"),
        ("/data/**/job_{job_id}/rank?.log", "/data/job_x2/rank3.log", "x2"),
        ("/var/log/jobs/{job_id}/*.log", "/var/log/jobs/4812/sub/rank0.log", None),
        ("/var/log/{{lit}}/{job_id}.log", "/var/log/{lit}/9.log", "9"),
        ("/var/log/*.log", "/var/log/a.log", None),
    ],
)
def test_path_template_reads_the_job_id(template: str, path: str, job: str | None) -> None:
    assert PathTemplate(template).job_id(path) == job


@pytest.mark.parametrize("bad", ["/x/{jobid}/*.log", "/x/{job_id}/{job_id}.log", ""])
def test_bad_path_templates_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        PathTemplate(bad)
    with pytest.raises(ValueError):
        LogScraperConfig(paths=[bad])


def test_template_finds_files_only_where_the_job_id_fits(tmp_path: Path) -> None:
    a = job_file(tmp_path, "r.log", "11")
    a.write_text("x\n")
    deeper = tmp_path / "jobs" / "12" / "sub" / "r.log"
    deeper.parent.mkdir(parents=True)
    deeper.write_text("x\n")
    template = PathTemplate(str(tmp_path / "jobs" / "{job_id}" / "*.log"))
    assert template.expand() == [str(a)]


def test_slurm_job_id_in_the_first_lines_names_the_job(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    named = out_dir / "train.out"
    named.write_text("+ env\nSLURM_JOB_ID=90210\nNCCL INFO hello\n")
    unnamed = out_dir / "other.out"
    unnamed.write_text("no id here\n")
    cfg = config(tmp_path, paths=[str(out_dir / "*.out")], slurm_scan_lines=3)
    out = Collected()

    async def go() -> LogScraper:
        s = LogScraper(cfg, out)
        await s.poll()
        assert s.stats.files_without_job == 0  # other.out may still print its id
        append(unnamed, "two\nthree\nSLURM_JOB_ID=5\n")  # too late: beyond the first 3 lines
        await s.poll()
        s.close()
        return s

    s = run(go())
    assert numbered(out.messages) == {
        source_name("90210", NODE, str(named), 0): [
            (1, "+ env"),
            (2, "SLURM_JOB_ID=90210"),
            (3, "NCCL INFO hello"),
        ]
    }
    assert {m.key for m in out.messages} == {b"90210"}
    assert s.stats.files_without_job == 1


def test_files_naming_no_job_use_the_fallback_when_configured(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "a.out").write_text("nothing\n")
    cfg = config(
        tmp_path, paths=[str(out_dir / "*.out")], fallback_job_id="unknown", job_id_wait_ms=0
    )
    out = Collected()

    async def go() -> None:
        s = LogScraper(cfg, out)
        await s.poll()
        s.close()

    run(go())
    assert numbered(out.messages) == {
        source_name("unknown", NODE, str(out_dir / "a.out"), 0): [(1, "nothing")]
    }


def test_slurm_job_id_helper() -> None:
    assert slurm_job_id(["x", "export SLURM_JOB_ID=12 ", "SLURM_JOB_ID=13"]) == "12"
    assert slurm_job_id(["SLURM_JOB_IDX=1", "MY_SLURM_JOB_ID=2"]) is None


# -- the pipeline reads what the scraper sends as it reads the whole file ------------------------


def test_simulated_nccl_logs_give_the_facts_of_the_whole_files(tmp_path: Path) -> None:
    sc = plan_scenario(16, Fault.LINK_DOWN, 5, watchdog_s=120)
    job = sc.affected
    assert job is not None
    files = job_logs(sc, job, random.Random("logs-5"))
    # The ranks' logs; a host's kernel log (`.dmesg`) is the Xid scraper's, not this one's.
    texts = {f.name: f.text(shipped=False).encode() for f in files if f.name.endswith(".log")}
    assert any(b"Watchdog caught collective operation timeout" in t for t in texts.values())
    rng = random.Random(7)
    out = Collected()

    async def go() -> None:
        s = LogScraper(config(tmp_path, max_lines=40), out)
        written = dict.fromkeys(texts, 0)
        while any(written[n] < len(t) for n, t in texts.items()):
            for name, text in texts.items():
                # Cut anywhere, mid-line included, as a writer's buffer flushes do.
                step = rng.randrange(1, 6000)
                chunk = text[written[name] : written[name] + step]
                with open(job_file(tmp_path, name, job.job_id), "ab") as fh:
                    fh.write(chunk)
                written[name] += len(chunk)
            await s.poll()
        await s.poll()
        s.close()

    run(go())
    sent = batches(out.messages)
    assert {b.source for b in sent} == {src(tmp_path, n, job.job_id) for n in texts}
    assert any(m.state_change for m in out.messages)
    for name, text in texts.items():
        source = src(tmp_path, name, job.job_id)
        mine = [b for b in sent if b.source == source]
        parser = LogParser(job.job_id, source, mine[0].year)
        streamed = []
        for b in mine:
            for i, line in enumerate(b.lines):
                streamed.extend(parser.feed(line, b.first_line_no + i))
        lines = text.decode().split("\n")[:-1]
        whole, _ = parse_lines(lines, job_id=job.job_id, source=source, year_hint=mine[0].year)
        assert streamed == whole
        assert len(whole) > 10
        assert parser.stats.redelivered == 0 and parser.position == len(lines)


@pytest.mark.parametrize(
    "module", ["railtrace.collectors.hosts.jobpath", "railtrace.collectors.hosts.logscraper"]
)
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


def test_two_nodes_files_of_one_name_are_two_sources(tmp_path: Path) -> None:
    """Every node of a job may write `stdout.log`: under one source the parser, which keeps
    one position per source, would drop the second node's lines as seen."""
    out = Collected()
    path = job_file(tmp_path, "stdout.log")
    path.write_text("one\ntwo\n")

    async def go(node: str) -> None:
        s = LogScraper(
            config(tmp_path, node=node, state_file=tmp_path / node / "offsets.json"), out
        )
        await s.poll()
        s.close()

    run(go("gpu-a"))
    run(go("gpu-b"))
    got = numbered(out.messages)
    assert got == {
        source_name(JOB, node, str(path), 0): [(1, "one"), (2, "two")]
        for node in ("gpu-a", "gpu-b")
    }


@pytest.mark.parametrize("node", ["", "gpu 7", "gpu7:0", "a/b"])
def test_a_node_name_that_would_make_sources_ambiguous_is_refused(node: str) -> None:
    with pytest.raises(ValueError, match="node"):
        LogScraperConfig(node=node)


@pytest.mark.parametrize("job", ["a b", "..", "x?y", "-1", "j" * 129])
def test_a_message_for_a_job_id_that_is_none_is_refused_on_the_wire(job: str) -> None:
    """Stored, such a job could never be asked for by URL: the worker dead-letters it."""
    good = wire.encode_log_batch(wire.LogBatch("4812", "logs/4812/r.log", 1, ("x",), 2026))
    assert wire.decode_log_batch(good).job_id == "4812"
    bad = good.replace(b'"4812"', orjson.dumps(job), 1)
    with pytest.raises(wire.WireError, match="is not a job id"):
        wire.decode_log_batch(bad)


def test_a_file_whose_path_names_a_job_id_that_is_none_is_skipped(tmp_path: Path) -> None:
    job_file(tmp_path, job="a b").write_text("one\n")
    job_file(tmp_path).write_text("two\n")
    out = Collected()

    async def go() -> LogScraper:
        s = LogScraper(config(tmp_path), out)
        await s.poll()
        s.close()
        return s

    s = run(go())
    assert numbered(out.messages) == {src(tmp_path): [(1, "two")]}
    assert s.stats.files_without_job == 1
