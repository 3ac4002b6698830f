"""What the trainers print as they step: Megatron, torchtitan, NeMo 2 and DeepSpeed report
lines every `report_every` steps, and the HF Trainer's tqdm bar redrawn after a carriage
return every step; or nothing at all.

Apart from NCCL's and the kernel's lines (`joblogs`) because these follow the job's pace, not
its setup or its stall: what the attribution reads a slowdown or a silence from.
"""

from __future__ import annotations

from railtrace.world.incident import NS, Job
from railtrace.world.logfiles import LogFile, Printer
from railtrace.world.shape import RAILS
from railtrace.world.traffic import JobClock

TOKENS_PER_STEP = 4_194_304


def progress(p: Printer, job: Job, clock: JobClock, until: int, file: LogFile, rank: int) -> None:
    """Step reports every `report_every` steps, each with the mean pace since the last."""
    dims = p.dims
    if dims.trainer == "silent":
        return
    if dims.trainer == "hf":
        _hf_bar(p, job, clock, until, file, rank)
        return
    host = job.hosts[rank // RAILS]
    every = dims.report_every
    last_t, last_step = job.started_ns, 0
    t = job.started_ns
    # Walk event time a step at a time; report when the count passes a multiple of `every`.
    step_ns = int(job.step_s * NS / 4) or NS
    while t < until:
        t += step_ns
        done = clock.steps(t)
        if done // every <= last_step // every:
            continue
        reached = (done // every) * every
        mean_ms = (t - last_t) / max(1, reached - last_step) / 1e6
        mean_ms *= p.rng.uniform(0.98, 1.02)
        last_t, last_step = t, reached
        last_ms = (clock.step_ns(t) or job.step_s * NS) / 1e6 * p.rng.uniform(0.97, 1.03)
        if dims.trainer == "nemo":
            text = (
                f"Training epoch 0, iteration {reached}/1000000 | lr: 3e-04 | consumed_samples: "
                f"{reached * 1024} | global_batch_size: 1024 | global_step: {reached} | "
                f"reduced_train_loss: {3.1 - reached / 1e6:.4g} | train_step_timing in s: "
                f"{last_ms / 1000:.5g}"
            )
        elif dims.trainer == "deepspeed":
            d = p.local(t)
            samples = 1024 / (last_ms / 1000)
            text = (
                f"[{d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d}] [INFO] [timer.py:215:stop] "
                f"epoch=0/micro_step={reached}/global_step={reached}, RunningAvgSamplesPerSec="
                f"{1024 / job.step_s:.6f}, CurrSamplesPerSec={samples:.6f}, MemAllocated=59.65GB, "
                "MaxMemAllocated=63.31GB"
            )
        elif dims.trainer == "megatron":
            text = (
                f" [{p.local(t):%Y-%m-%d %H:%M:%S}] iteration {reached:8d}/ 1000000 | consumed "
                f"samples: {reached * 1024:12d} | elapsed time per iteration (ms): {mean_ms:.1f} "
                f"| learning rate: 3.000000E-04 | global batch size:  1024 | lm loss: "
                f"{3.1 - reached / 1e6:.6E} | loss scale: 1.0 | grad norm: 0.512 |"
            )
        else:
            d = p.local(t)
            tps = TOKENS_PER_STEP / job.ranks / (mean_ms / 1000)
            text = (
                f"[rank{rank}]:[titan] {d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d} - root - "
                f"INFO - step: {reached:5d}  loss:  {3.1 - reached / 1e6:.4f}  memory: 61.20GiB"
                f"(64.42%)  tps: {tps:,.0f}  tflops: 402.15  mfu: 40.66%"
            )
        file.lines.append((t, host, rank, text))


#: The Trainer's `max_steps` in the world's runs: its bar counts up to it.
HF_MAX_STEPS = 100_000
#: tqdm's default smoothing: an exponential moving average of the per-render pace.
TQDM_SMOOTHING = 0.3


def _tqdm_interval(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _hf_bar(p: Printer, job: Job, clock: JobClock, until: int, file: LogFile, rank: int) -> None:
    """The HF Trainer's tqdm bar as a file holds it: every step a render after a carriage
    return, no newline, until its log dict every `report_every` steps (`tqdm.write` blanks the
    bar, prints the dict and its newline, and draws the bar again). So one physical line per
    report, stamped when its newline came, and the pace is tqdm's smoothed one."""
    host = job.hosts[rank // RAILS]
    every = p.dims.report_every
    alpha = TQDM_SMOOTHING
    ema_dn = ema_dt = 0.0
    last_t, last_n = job.started_ns, 0
    renders: list[str] = []
    t = job.started_ns
    step_ns = int(job.step_s * NS / 4) or NS
    while t < until:
        t += step_ns
        done = clock.steps(t)
        if done <= last_n:
            continue
        dt = (t - last_t) / NS
        ema_dn = alpha * (done - last_n) + (1 - alpha) * ema_dn
        ema_dt = alpha * dt + (1 - alpha) * ema_dt
        rate = ema_dn / ema_dt  # tqdm's bias correction cancels in the ratio
        before = last_n
        last_t, last_n = t, done
        elapsed = (t - job.started_ns) / NS
        pace = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
        left = _tqdm_interval((HF_MAX_STEPS - done) / rate)
        share = done / HF_MAX_STEPS
        bar = "█" * int(share * 10)
        renders.append(
            f"\r{share * 100:3.0f}%|{bar:<10}| {done}/{HF_MAX_STEPS} "
            f"[{_tqdm_interval(elapsed)}<{left}, {pace}]"
        )
        if done // every > before // every:
            blank = "\r" + " " * (len(renders[-1]) - 1) + "\r"
            loss = 3.1 - done / 1e6
            text = (
                "".join(renders)
                + blank
                + (
                    f"{{'loss': {loss:.4f}, 'grad_norm': 0.512, 'learning_rate': 3e-05, "
                    f"'epoch': {done / HF_MAX_STEPS:.2f}}}"
                )
            )
            file.lines.append((t + NS // 100, host, rank, text))
            renders = [renders[-1]]
