"""Trainers' step lines (Megatron-LM, torchtitan) -> Progress, the job's pace and heartbeat."""

from __future__ import annotations

import orjson
import pytest
from logs_support import JOB, of_type, utc_ns

from railtrace.streams.logs import LogParser, parse_lines
from railtrace.streams.records import LogOrigin, Progress

SOURCE = "rank0.log"
NCCL_A = "hgx-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"
NCCL_B = "hgx-b:200:201 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>"


def megatron(iteration: int, elapsed: str = "139113.4", stamp: str = "2024-05-18 16:04:46") -> str:
    """A Megatron-LM training_log line as `print_rank_last` writes it."""
    return (
        f" [{stamp}] iteration {iteration:8d}/  250000 | consumed samples: "
        f"{iteration * 64:12d} | elapsed time per iteration (ms): {elapsed} | learning rate: "
        "2.999E-04 | global batch size:    64 | lm loss: 7.532E+00 | loss scale: 1.0 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |"
    )


def titan(step: int, tps: str = "7,282", stamp: str = "2026-05-18 16:04:46,338") -> str:
    """A torchtitan metrics line (colour printing disabled), through torchrun's rank prefix."""
    return (
        f"[rank0]:[titan] {stamp} - root - INFO - step: {step:2}  loss:  7.8712  "
        f"memory: 13.27GiB(16.77%)  tps: {tps}  tflops: 421.72  mfu: 42.64%"
    )


def parse(lines: list[str]):
    return parse_lines(lines, job_id=JOB, source=SOURCE, year_hint=2024)


def test_megatron_line_gives_step_time_bracketed_time_and_host_of_the_last_nccl_line():
    facts, stats = parse([NCCL_A, NCCL_B, megatron(201)])
    (p,) = of_type(facts, Progress)
    assert p == Progress(
        utc_ns(2024, 5, 18, 16, 4, 46),
        JOB,
        "hgx-b",
        201,
        139113.4,
        None,
        LogOrigin(SOURCE, 3),
        250000,
    )
    assert stats.malformed == 0


def test_megatron_line_before_any_nccl_line_has_no_host():
    facts, _ = parse([megatron(7, elapsed="812.5")])
    (p,) = of_type(facts, Progress)
    assert (p.host, p.step, p.step_ms) == (None, 7, 812.5)


def test_torchtitan_line_gives_tokens_per_second_and_its_own_unbracketed_stamp():
    lines = [
        "[2026-05-18 16:00:00] launching",  # the clock's last stamp, not the step line's
        NCCL_A,
        titan(14, tps="1,207,282"),
    ]
    facts, stats = parse(lines)
    (p,) = of_type(facts, Progress)
    assert p.ts_ns == utc_ns(2026, 5, 18, 16, 4, 46, 338_000_000)
    assert (p.step, p.step_ms, p.tokens_per_s) == (14, None, 1_207_282.0)
    assert (p.host, p.origin) == ("hgx-a", LogOrigin(SOURCE, 3))
    assert stats.malformed == 0


@pytest.mark.parametrize(
    "elapsed",
    ["nan", "0.0", "-12.5"],
)
def test_megatron_line_whose_step_time_cannot_be_read_is_a_dead_letter(elapsed: str):
    lines = [NCCL_A, megatron(201), megatron(202, elapsed=elapsed), megatron(203)]
    facts, stats = parse(lines)
    assert [p.step for p in of_type(facts, Progress)] == [201, 203]
    assert stats.malformed == 1
    (dead,) = stats.dead_letters
    assert dead.extra["rule"] == "progress"
    assert dead.line_no == 3
    assert dead.raw == lines[2].encode()


def test_megatron_line_whose_time_unit_changed_is_a_dead_letter_not_a_silent_skip():
    changed = megatron(202).replace("(ms): 139113.4", "(s): 139.1")
    facts, stats = parse([megatron(201), changed, megatron(203)])
    assert [p.step for p in of_type(facts, Progress)] == [201, 203]
    (dead,) = stats.dead_letters
    assert (dead.extra["rule"], dead.line_no) == ("progress", 2)


@pytest.mark.parametrize(
    "line",
    [
        "saving checkpoint at iteration     200 to /ckpt in torch_dist format",
        " validation loss at iteration 2000 | lm loss value: 2.5E+00 | lm loss PPL: 1.2E+01 |",
        "[after training is done] iteration 250000 reached, exiting",
        "Skipping iteration 5 because of NaN loss",
        "number of iterations with step: 12 was reduced",
    ],
)
def test_a_line_that_only_mentions_iteration_yields_nothing_and_no_dead_letter(line: str):
    facts, stats = parse([line])
    assert facts == []
    assert (stats.malformed, stats.skipped) == (0, 1)


def test_parser_restored_mid_file_gives_the_same_facts_as_one_that_read_on():
    lines = [
        NCCL_A,
        megatron(201),
        NCCL_B,
        megatron(202, stamp="2024-05-18 16:07:05"),
        "an undated line",
        megatron(203, elapsed="bad"),
        titan(3),
        NCCL_A,
        megatron(204, stamp="2024-05-18 16:09:24"),
        titan(4, stamp="2026-05-18 16:05:46,338"),
    ]
    whole, whole_stats = parse(lines)
    assert len(of_type(whole, Progress)) == 5
    for cut in range(len(lines) + 1):
        first = LogParser(JOB, SOURCE, 2024)
        before = [f for line in lines[:cut] for f in first.feed(line)]
        resumed = LogParser.restore(orjson.loads(orjson.dumps(first.snapshot())))
        after = [f for line in lines[cut:] for f in resumed.feed(line)]
        assert before + after == whole, f"cut after line {cut}"
        assert (resumed.stats.lines, resumed.stats.facts, resumed.stats.malformed) == (
            whole_stats.lines,
            whole_stats.facts,
            whole_stats.malformed,
        )


# -- what torchtitan prints besides a plain step line -------------------------------------------


def test_torchtitan_line_with_its_default_colours_gives_progress():
    coloured = (
        "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - \x1b[31mstep: 14  "
        "\x1b[32mloss:  7.8712  \x1b[33mmemory: 13.27GiB(16.77%)  \x1b[34mtps: 7,282  "
        "\x1b[36mtflops: 421.72  \x1b[35mmfu: 42.64%\x1b[39m"
    )
    facts, stats = parse([coloured])
    (p,) = of_type(facts, Progress)
    assert (p.step, p.tokens_per_s) == (14, 7282.0)
    assert stats.malformed == 0


def test_torchtitan_validation_line_is_not_a_training_step_report():
    validation = (
        "[rank0]:[titan] 2026-05-18 16:05:46,338 - root - INFO - validate step:  2  "
        "loss:  7.1000  memory: 13.27GiB(16.77%)  tps: 21,000"
    )
    facts, stats = parse([titan(14), validation])
    assert [p.step for p in of_type(facts, Progress)] == [14]
    assert stats.malformed == 0


def test_torchtitan_line_keeps_the_shippers_leading_stamp():
    shipped = "2026-05-18T18:04:46.400+02:00 " + titan(15, stamp="2026-05-18 18:04:46,338")
    facts, _ = parse([shipped])
    (p,) = of_type(facts, Progress)
    assert p.ts_ns == utc_ns(2026, 5, 18, 16, 4, 46, 400_000_000)
