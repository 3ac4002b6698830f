"""A readers run as the command line gives it: one input shown record by record (`--index`),
or every reader in turn with an equal share of what is left of the time limit, its tally
printed as it finishes and the table of all of them at the end."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .cases import trace_of
from .harness import Harness, Tally, fuzz, show_bytes


def show_one(h: Harness, readers: list[str], index: int) -> int:
    status = 0
    for reader in readers:
        case = h.case(reader, index)
        result, elapsed = h.run(case)
        print(f"{reader} #{index}: {result.signature() or 'ok'} ({elapsed * 1000:.1f} ms)")
        for item in case.items:
            tag = f"good {item.good}" if item.good >= 0 else f"garbage {item.how}"
            print(
                f"  [{tag}{' ' + item.where if item.where else ''}] {show_bytes(item.data)[:300]}"
            )
        for line in result.lost:
            print(f"  LOST {line}")
        if result.exc is not None:
            print(trace_of(result.exc))
        status |= result.signature() is not None
    return status


def run_all(h: Harness, readers: list[str], args: argparse.Namespace) -> int:
    if args.failures:
        Path(args.failures).mkdir(parents=True, exist_ok=True)
        (Path(args.failures) / "failures.jsonl").unlink(missing_ok=True)
    started = time.perf_counter()
    deadline = started + args.time_limit
    tallies: dict[str, Tally] = {}
    for n, reader in enumerate(readers):
        # An equal share of what is left of the time limit for each reader still to run.
        share = (deadline - time.perf_counter()) / (len(readers) - n)
        tallies[reader] = t = fuzz(h, reader, args.inputs, time.perf_counter() + share)
        rate = t.inputs / max(t.seconds, 1e-9)
        print(
            f"{reader}: {t.inputs} inputs in {t.seconds:.1f} s ({rate:,.0f}/s), "
            f"{t.crashes} crashes, {t.hangs} hangs, {t.lost_records} lost good records "
            f"(in {t.lost_inputs} inputs)",
            flush=True,
        )
    wall = time.perf_counter() - started
    print()
    print(f"seed {args.seed}, {args.inputs} inputs per reader asked, wall time {wall:.1f} s")
    head = (
        f"{'reader':<13} {'inputs':>8} {'good checked':>12} {'crashes':>7} {'hangs':>5} "
        f"{'lost good':>9} {'superseded':>10} {'dead letters':>12} {'inputs/s':>9} "
        f"{'slowest':>8} {'wall s':>7}"
    )
    print(head)
    for reader, t in tallies.items():
        print(
            f"{reader:<13} {t.inputs:>8} {t.checked:>12} {t.crashes:>7} {t.hangs:>5} "
            f"{t.lost_records:>9} {t.superseded:>10} {t.dead:>12} "
            f"{t.inputs / max(t.seconds, 1e-9):>9,.0f} {t.slowest:>7.2f}s {t.seconds:>7.1f}"
        )
    failed = False
    for reader, t in tallies.items():
        for sig, count in t.signatures.most_common():
            failed = True
            print(f"  {reader}: {count:>6} x {sig}   (first: --index {t.examples[sig]})")
    short = [r for r, t in tallies.items() if t.inputs < args.inputs]
    if short:
        print(f"time limit reached: fewer inputs than asked for {', '.join(short)}")
    if args.failures and failed:
        print(f"failing inputs written to {args.failures}")
    return 1 if failed or short else 0
