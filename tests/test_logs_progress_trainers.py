"""Step reports of NeMo, PyTorch Lightning, DeepSpeed, the Hugging Face Trainer, nanoGPT,
lit-llama and nanochat -> Progress.

Lines marked SYNTHETIC are built from the trainers' format strings (tqdm's bar layout and its
CR / cursor-up writes, NeMo's, DeepSpeed's, nanoGPT's and nanochat's log formats) where no
public sample shows them.
"""

from __future__ import annotations

import pytest
from logs_support import JOB, of_type, parse_real, real_lines, utc_ns

from railtrace.streams.attribution.pace import STEP_TIME, Pace, measure_of, pace_of
from railtrace.streams.logs import LogParser, parse_lines
from railtrace.streams.records import CollectiveTimeout, LogOrigin, Progress

SOURCE = "rank0.log"


def parse(lines: list[str]):
    return parse_lines(lines, job_id=JOB, source=SOURCE, year_hint=2026)


def progress(name: str) -> list[Progress]:
    facts, stats = parse_real(name)
    assert stats.dead_letters == []
    return of_type(facts, Progress)


def hf_render(step: int, pace: str, total: int = 1000) -> str:
    """SYNTHETIC: one render of the Trainer's bar as tqdm writes it to a file (CR first)."""
    return f"\r  {step * 100 // total}%|▏         | {step}/{total} [00:52<50:17, {pace}]"


# -- real samples, end to end ------------------------------------------------------------------


def test_nemo2_printer_gives_its_iteration_step_time_and_max_steps():
    reports = progress("bionemo_recipes_740_nemo2_progress_printer.log")
    assert [(p.step, p.step_ms, p.total_steps) for p in reports] == [
        (120, pytest.approx(31.46), 149),
        (121, pytest.approx(31.63), 149),
        (122, pytest.approx(32.15), 149),
        (123, pytest.approx(31.57), 149),
        (124, pytest.approx(31.70), 149),
        (125, pytest.approx(31.47), 149),
    ]
    assert reports[0].origin == LogOrigin("bionemo_recipes_740_nemo2_progress_printer.log", 1)
    assert {p.tokens_per_s for p in reports} == {None}


def test_hf_trainer_bar_gives_s_per_it_as_step_time_and_max_steps_as_the_end():
    facts, stats = parse_real("llamafactory_2902_hf_bar_then_watchdog.log")
    reports = of_type(facts, Progress)
    assert [(p.step, p.step_ms, p.total_steps, p.origin.line_no) for p in reports] == [
        (10, 4950.0, 620, 3),
        (11, 4920.0, 620, 4),
        (12, 4920.0, 620, 5),
    ]
    # The loss dict above them is no report; the render glued to the watchdog line is that line.
    (timeout,) = of_type(facts, CollectiveTimeout)
    assert (timeout.seq, timeout.origin.line_no) == (1516, 6)
    assert stats.dead_letters == []


def test_lightning_bar_gives_it_per_s_as_step_time_and_no_end_since_its_total_is_one_epoch():
    (p,) = progress("lightning_9242_epoch_bar_it_per_s.log")
    assert (p.step, p.step_ms, p.total_steps) == (100, pytest.approx(1000 / 4.70), None)
    assert p.origin.line_no == 2


def test_nemo1_bar_in_s_per_it_is_read_to_the_second_from_its_elapsed_time():
    (p,) = progress("nemo_launcher_55_megatron_bar_s_per_it.log")
    # 9:07:58 over 795 steps: the bar's own unsmoothed rate, which it printed as 41.36 s/it.
    assert (p.step, p.step_ms, p.total_steps) == (795, pytest.approx(32878_000 / 795), None)
    assert p.step_ms == pytest.approx(41_360, abs=5)


def test_relayed_lightning_bars_skip_validation_renders_and_read_the_last_render_of_a_line():
    reports = progress("sagemaker_workshop_6_lightning_rsyslog_escaped_cr.log")
    assert [(p.origin.line_no, p.step) for p in reports] == [
        (1, 1),
        (9, 2),
        (10, 2),
        (11, 2),
        (13, 2),
    ]
    assert [p.step_ms for p in reports] == pytest.approx(
        [1000 / 6.54, 1000 / 12.33, 1000 / 12.33, 1000 / 12.10, 1000 / 12.05]
    )


@pytest.mark.parametrize(
    "name",
    [
        "nemo_11900_bar_unknown_total_empty_metrics.log",
        "nemo_13887_lightning_sanity_and_training_bars.log",
        "deepspeed_1825_running_average_only.log",
    ],
)
def test_bars_and_lines_without_a_pace_are_no_report_and_no_dead_letter(name: str):
    facts, stats = parse_real(name)
    assert of_type(facts, Progress) == []
    assert stats.dead_letters == []


def test_deepspeed_timer_gives_the_global_step_and_the_last_steps_samples_per_second():
    facts, _ = parse_real("deepspeed_3742_timer_step_and_megatron_ds.log")
    deepspeed, megatron = of_type(facts, Progress)
    assert deepspeed == Progress(
        utc_ns(2023, 7, 25, 21, 3, 17, 269_000_000),
        JOB,
        None,
        34,
        None,
        8.00912418308922,
        LogOrigin("deepspeed_3742_timer_step_and_megatron_ds.log", 1),
        None,
    )
    # Megatron-DeepSpeed's own line is read too (its `step=35, ...` neighbour is no report).
    assert (megatron.step, megatron.step_ms, megatron.origin.line_no) == (34, 4103.1, 4)


def test_deepspeed_07_timer_gives_the_step_printed_after_the_epoch():
    reports = progress("deepspeed_2629_timer_epoch_step_variant.log")
    assert [(p.step, p.tokens_per_s) for p in reports] == [
        (17, 159.628891629629),
        (18, 145.0889530760849),
        (19, 157.80592669930536),
    ]


def test_hf_trainer_bars_behind_a_line_counter_give_their_pace():
    reports = progress("llamafactory_8261_line_numbered_hf_bars.log")
    assert [(p.step, p.step_ms, p.total_steps, p.origin.line_no) for p in reports] == [
        (10, 2830.0, 1752, 1),
        (11, 2820.0, 1752, 2),
        (12, 2790.0, 1752, 3),
        (20, 2860.0, 1752, 5),  # the loss dict of line 4 behind the same counter is none
    ]


def test_nanogpt_iter_line_gives_its_iteration_and_the_iterations_time():
    reports = progress("nanogpt_110_iter_loss_time.log")
    assert [
        (p.step, p.step_ms, p.tokens_per_s, p.total_steps, p.origin.line_no) for p in reports
    ] == [
        (1631, 561.94, None, None, 3),
        (1632, 563.15, None, None, 4),
        (1633, 562.11, None, None, 5),
    ]


def test_lit_llama_iter_line_gives_its_time_and_its_tokens_per_second_per_device():
    (p,) = progress("lit_llama_380_port_error.log")
    assert (p.step, p.step_ms, p.tokens_per_s, p.origin.line_no) == (83594, 6235.95, 1771.0, 1)


def test_nanochat_step_line_gives_dt_tok_per_sec_and_the_last_step_it_will_print():
    reports = progress("nanochat_147_step_dt_tok_per_sec.log")
    # nanochat counts steps from 0: of 21400 steps the last it prints is 21399.
    assert [(p.step, p.step_ms, p.tokens_per_s, p.total_steps) for p in reports] == [
        (4, 989.44, 529_882.0, 21399),
        (5, 991.09, 529_000.0, 21399),
        (6, 992.91, 528_029.0, 21399),
    ]


@pytest.mark.parametrize(
    "name",
    [
        "nanogpt_110_iter_loss_time.log",
        "lit_llama_380_port_error.log",
        "nanochat_147_step_dt_tok_per_sec.log",
        "llamafactory_8261_line_numbered_hf_bars.log",
    ],
)
def test_the_pace_check_measures_these_reports_by_their_step_time(name: str):
    reports = progress(name)
    assert reports
    for p in reports:
        assert measure_of(p) == STEP_TIME
        assert pace_of(p, STEP_TIME) == p.step_ms


# -- carriage returns: many renders, one line ----------------------------------------------------


def test_line_of_cr_separated_renders_gives_only_its_last_render_at_the_lines_stamp():
    # SYNTHETIC: a shipper's stamp, then tqdm's renders as a file holds them.
    renders = [hf_render(n, f"{4.90 + n / 100:.2f}s/it") for n in range(10, 16)]
    facts, stats = parse(["2026-05-18T16:04:46.400Z " + "".join(renders)])
    (p,) = of_type(facts, Progress)
    assert (p.ts_ns, p.step, p.step_ms, p.total_steps) == (
        utc_ns(2026, 5, 18, 16, 4, 46, 400_000_000),
        15,
        pytest.approx(5050.0),
        1000,
    )
    assert (stats.facts, stats.dead_letters) == (1, [])


def test_renders_with_their_own_stamps_on_one_line_are_all_kept():
    # SYNTHETIC: torchtitan lines carry their own time, so CR between them loses nothing.
    titan = "[rank0]:[titan] 2026-05-18 16:04:{:02d},338 - root - INFO - step: {}  tps: 7,282  "
    line = "\r".join(titan.format(40 + n, n) for n in (1, 2, 3))
    facts, _ = parse([line])
    assert [p.step for p in of_type(facts, Progress)] == [1, 2, 3]


def test_loss_dict_written_between_renders_splits_them_into_two_reports():
    # SYNTHETIC: tqdm.write clears the bar, writes the dict with a newline, redraws the bar.
    clear = "\r" + " " * 48 + "\r"
    first = hf_render(9, "4.90s/it") + hf_render(10, "4.95s/it") + clear
    first += "{'loss': 0.8533, 'grad_norm': 4.87, 'learning_rate': 1.45e-05, 'epoch': 0.16}"
    second = hf_render(10, "4.95s/it") + hf_render(11, "4.92s/it")
    facts, stats = parse([first, second])
    assert [(p.step, p.origin.line_no) for p in of_type(facts, Progress)] == [(10, 1), (11, 2)]
    assert stats.dead_letters == []


def test_hf_evaluation_bar_drawn_below_the_training_bar_is_no_report():
    # SYNTHETIC: tqdm draws a second bar one row down: newline, render, cursor up.
    evaluation = "\n\r 50%|█████     | 1/2 [00:00<00:00,  4.26it/s]\x1b[A"
    facts, _ = parse([hf_render(10, "2.00s/it", total=100) + evaluation])
    assert [(p.step, p.step_ms) for p in of_type(facts, Progress)] == [(10, 2000.0)]
    only_evaluation, stats = parse([evaluation.lstrip("\n")])
    assert (of_type(only_evaluation, Progress), stats.dead_letters) == ([], [])


# -- hand-written variants of the bars ------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "step", "step_ms", "total"),
    [
        # no terminal: tqdm drops the |███| part (seen in Kubernetes logs of the Trainer)
        ("  4% 100/2238 [1:49:59<42:08:58, 70.97s/it]{'loss': 2.6446, 'epoch': 0.04}", 100,
         70_970.0, 2238),
        ("[rank0]:  5%|▌         | 50/1000 [01:23<26:12,  1.66s/it]", 50, 1660.0, 1000),
        ("[1,0]<stdout>: 20%|██        | 10/50 [00:03<00:12,  3.33it/s]", 10, 1000 / 3.33, 50),
    ],
)  # fmt: skip
def test_trainer_bar_variants_give_their_pace(line: str, step: int, step_ms: float, total: int):
    facts, stats = parse([line])  # SYNTHETIC
    (p,) = of_type(facts, Progress)
    assert (p.step, p.step_ms, p.total_steps) == (step, pytest.approx(step_ms), total)
    assert stats.dead_letters == []


@pytest.mark.parametrize(
    ("line", "step", "step_ms", "tokens_per_s", "total"),
    [
        # nanoGPT since it prints its MFU
        ("iter 200: loss 5.1234, time 105.23ms, mfu 38.12%", 200, 105.23, None, None),
        # a fork printing its learning rate between
        ("iter 200: loss 5.1234, lr 6.00e-04, time 105.23ms, mfu 38.12%", 200, 105.23, None,
         None),
        # nanochat's midtraining prints no total
        ("step 00004 (0.02%) | loss: 8.893647 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | "
         "mfu: 74.13 | total time: 0.00m", 4, 989.44, 529_882.0, None),
        # build-nanogpt: the step alone, padded, and tok/sec with decimals
        ("step     4 | loss: 9.640625 | lr 3.0000e-04 | norm: 8.2734 | dt: 320.54ms | "
         "tok/sec: 1635616.73", 4, 320.54, 1_635_616.73, None),
    ],
)  # fmt: skip
def test_nanogpt_and_nanochat_line_variants_give_their_pace(
    line: str, step: int, step_ms: float, tokens_per_s: float | None, total: int | None
):
    facts, stats = parse([line])  # SYNTHETIC, from the trainers' format strings
    (p,) = of_type(facts, Progress)
    assert (p.step, p.step_ms, p.tokens_per_s, p.total_steps) == (
        step,
        step_ms,
        tokens_per_s,
        total,
    )
    assert stats.dead_letters == []


@pytest.mark.parametrize(
    ("line", "step_ms"),
    [
        # Lightning 2 prints it/s only: 0.01it/s for a 140 s step; elapsed / n says 140 s.
        ("Epoch 0:   1%|          | 300/30000 [11:40:00<1155:00:00,  0.01it/s, v_num=0]",
         140_000.0),
        ("Epoch 2:   3%|▎         | 900/30000 [35:00:00<1131:40:00,  0.00it/s, v_num=0]",
         140_000.0),
        # a few steps in, the two decimals are the more precise
        ("Epoch 0:   0%|          | 1/1000 [00:06<1:44:04,  0.16it/s, v_num=0]", 6250.0),
        # NeMo 1 adds its own step time, which wins over the bar's rate
        ("Epoch 0:   5%|▌         | 50/1000 [01:00<19:00,  0.83it/s, "
         "reduced_train_loss=2.590, train_step_timing in s=1.150]", 1150.0),
        ("Epoch 0: :   5%|▌         | 50/1000 [01:00<19:00, reduced_train_loss=2.590, "
         "global_step=49.00, train_step_timing in s=1.150]", 1150.0),
    ],
)  # fmt: skip
def test_lightning_bar_pace_is_the_most_precise_one_it_prints(line: str, step_ms: float):
    facts, _ = parse([line])  # SYNTHETIC
    (p,) = of_type(facts, Progress)
    assert p.step_ms == pytest.approx(step_ms)
    assert p.total_steps is None


def test_lightning_step_count_restarts_each_epoch_and_every_epoch_still_reports():
    facts, _ = parse(  # SYNTHETIC
        [
            "Epoch 0: 100%|██████████| 2000/2000 [10:00<00:00,  3.33it/s, v_num=0]",
            "Epoch 1:   0%|          | 1/2000 [00:00<10:00,  3.30it/s, v_num=0]",
        ]
    )
    assert [(p.step, p.step_ms, p.total_steps) for p in of_type(facts, Progress)] == [
        (2000, pytest.approx(1000 / 3.33), None),
        (1, pytest.approx(1000 / 3.30), None),
    ]


# -- what is not a report, and what is a broken one ------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 3: saving checkpoint to /ckpt/epoch=3-step=9000.ckpt",
        "Epoch 5: val_loss reached 0.52 (best 0.50), saving model [top 3]",
        "Epoch 0:   0%|          | 0/2000 [00:00<?, ?it/s]",
        "  0%|          | 0/620 [00:00<?, ?it/s]",
        "Validation DataLoader 0:  50%|█████     | 1/2 [00:06<00:06,  0.16it/s]",
        "Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.30s/it]",
        "Map: 100%|██████████| 80/80 [00:00<00:00, 678.72 examples/s]",
        "  5% of the samples were dropped [min_length=16]",
        "{'loss': 2.3441, 'grad_norm': 1.25, 'learning_rate': 4.9e-05, 'epoch': 0.04}",
        "{'train_runtime': 3600.5, 'train_samples_per_second': 8.9, 'train_steps_per_second': "
        "0.278, 'train_loss': 1.9, 'epoch': 1.0}",
        "Validation: iteration 5/10",
        "Training epoch 0, iteration 10/99 | lr: 3e-05 | global_step: 10 | reduced_train_loss: 1.2",
        "[2026-05-18 16:04:46,338] [INFO] [logging.py:128:log_dist] [Rank 0] step=10, skipped=0, "
        "lr=[0.0001], mom=[(0.9, 0.95)]",
        "[2026-05-18 16:04:46,338] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48",
        "step 250: train loss 4.1234, val loss 4.2345",  # nanoGPT's evaluation
        "Step 00250 | Validation bpb: 0.812345",  # nanochat's evaluation
        "Step 02000 | CORE metric: 0.1234",
        "[12] Loading checkpoint shards:  50%|█████     | 2/4 [00:05<00:05,  2.50s/it]",
    ],
)
def test_a_line_that_only_looks_like_a_trainers_yields_nothing_and_no_dead_letter(line: str):
    facts, stats = parse([line])
    assert facts == []
    assert (stats.malformed, stats.skipped) == (0, 1)


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("nccl_tests_244_two_hosts_plugin_lines.log", 0),  # `step: 2(factor) ... iters: 20`
        ("nccl_tests_291_v2251_socket_init_ras_listen.log", 0),  # `step: 1048576(bytes)`
        ("deepspeed_1825_running_average_only.log", 0),  # `step=40, skipped=2, lr=[...]`
        ("deepspeed_3742_timer_step_and_megatron_ds.log", 1),  # `time (ms) | forward_microstep:`
        ("vllm_2734_ray_pt21_vllm_info_stamp.log", 0),  # `Avg prompt throughput: 0.0 tokens/s`
        ("llamafactory_8261_line_numbered_hf_bars.log", 3),  # `[1757] {'loss': 0.0, ...}`
    ],
)
def test_real_lines_of_other_tools_with_steps_iters_or_times_are_no_report(name: str, index: int):
    facts, stats = parse([real_lines(name)[index].decode()])
    assert of_type(facts, Progress) == []
    assert stats.dead_letters == []


@pytest.mark.parametrize(
    "broken",
    [
        "Training epoch 0, iteration 11/99 | global_step: 11 | train_step_timing in s: nan",
        "Training epoch 0, step 11 of 99 | global_step: 11 | train_step_timing in s: 0.0317",
        "[2026-05-18 16:04:47,338] [INFO] [timer.py:258:stop] epoch=0/micro_step=11/"
        "global_step=11, RunningAvgSamplesPerSec=16.1, CurrSamplesPerSec=0.0, MemAllocated=1GB",
        "[2026-05-18 16:04:47,338] [INFO] [timer.py:258:stop] RunningAvg=16.1, "
        "CurrSamplesPerSec=16.8, MemAllocated=1GB",
        "Epoch 0:   1%|          | 11/2000 [00:22<1:06:18,  2.00batch/s, v_num=0]",
        "Epoch 0:   1%|          | 11/2000 [00:22<1:06:18, reduced_train_loss=2.5, "
        "train_step_timing in s=fast]",
        "  1%|          | 11/1000 [00:22<33:00,  nans/it]",
        "iter 11: loss 3.9841, time nanms",
        "iter 11: loss 3.9841, time 0.56s, mfu 38.12%",
        "iter 11: loss 1.9491, time: 6235.95ms, speed: -1 toks/s/device",
        "step 00011/21400 (0.05%) | loss: 8.1 | lrm: 1.00 | dt: 0.99s | tok/sec: 529,000",
        "step 00011/21400 (0.05%) | loss: 8.1 | lrm: 1.00 | dt: 990.12ms | tok/sec: n/a",
    ],
)
def test_a_trainers_line_whose_pace_cannot_be_read_is_a_dead_letter(broken: str):
    good = "Epoch 0:   1%|          | 10/2000 [00:20<1:06:20,  2.00s/it, v_num=0]"
    lines = [good, broken, good.replace("10/2000", "12/2000")]
    facts, stats = parse(lines)
    assert [p.step for p in of_type(facts, Progress)] == [10, 12]
    (dead,) = stats.dead_letters
    assert (dead.extra["rule"], dead.line_no, dead.raw) == ("progress", 2, broken.encode())


# -- the pace check downstream ------------------------------------------------------------------


def test_bar_renders_judged_against_the_jobs_own_pace_show_a_slowdown():
    # SYNTHETIC: one stamped line per minute, each holding ten renders; the job slows down
    # from 5 s to 9 s a step after twelve lines.
    lines = []
    for minute in range(16):
        pace = "5.00s/it" if minute < 12 else "9.00s/it"
        renders = "".join(hf_render(minute * 10 + n, pace) for n in range(1, 11))
        lines.append(f"2026-05-18T16:{minute:02d}:00Z {renders}")
    parser = LogParser(JOB, SOURCE, 2026)
    pace = Pace()
    changes = [pace.add(p) for line in lines for p in of_type(parser.feed(line), Progress)]
    assert changes.index(True) == 14  # the third slow report
    assert pace.slow_since() == utc_ns(2026, 5, 18, 16, 12, 0)
    assert pace.normal == 5000.0


def test_nanochat_reports_show_a_slowdown_and_its_last_printed_step_ends_the_run():
    # The real line, shipper-stamped once a minute and renumbered up to the run's last step;
    # the job slows down from 989 ms to 1.4 s a step after twelve reports.
    real = real_lines("nanochat_147_step_dt_tok_per_sec.log")[0].decode()
    lines = []
    for minute in range(16):
        line = real.replace("step 00004/", f"step {21384 + minute:05d}/")
        if minute >= 12:
            line = line.replace("dt: 989.44ms", "dt: 1400.00ms")
        lines.append(f"2026-05-18T16:{minute:02d}:00Z {line}")
    parser = LogParser(JOB, SOURCE, 2026)
    pace = Pace()
    changes = [pace.add(p) for line in lines for p in of_type(parser.feed(line), Progress)]
    assert changes.index(True) == 14  # the third slow report
    assert (pace.normal, pace.slow_since()) == (989.44, utc_ns(2026, 5, 18, 16, 12, 0))
    # Step 21399 of 21400 was its last: the silence after it is no stall.
    assert pace.finished
    assert pace.stopped(utc_ns(2026, 5, 18, 18, 0, 0)) is None
