"""Driving the checks: an input made from (seed, reader, index), run under a time budget,
reduced to the garbage that still makes it fail, written out with a note; and a reader's run
of many inputs tallied."""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Protocol

from .cases import Case, Result, trace_of
from .corpus import Corpus
from .csv_reader import CsvReader
from .gnmi_readers import GnmiMessageReader, GnmiReader
from .logs_reader import LogsReader
from .replay_reader import ReplayReader
from .scheduler_reader import SchedulerReader

#: The readers by name, in the order a run takes them (the keys of `Harness.readers`).
READERS = ("cables", "hosts", "gnmi", "gnmi-message", "logs", "replay", "scheduler")


class InputTimeout(BaseException):
    """Raised by SIGALRM inside a reader; a BaseException so that no reader's `except
    Exception` (the log parser's "never raises" net) can swallow it."""


def on_alarm(_signum: int, _frame: FrameType | None) -> None:
    raise InputTimeout


class Reader(Protocol):
    """What the driver needs of each reader's harness."""

    def generate(self, rng: random.Random, index: int) -> Case: ...
    def run(self, case: Case) -> Result: ...
    def write(self, case: Case, path: Path) -> Path: ...


class Harness:
    def __init__(self, args: argparse.Namespace, corpus: Corpus, work: Path) -> None:
        self.args = args
        self.readers: dict[str, Reader] = {
            "cables": CsvReader("cables", corpus),
            "hosts": CsvReader("hosts", corpus),
            "gnmi": GnmiReader(corpus),
            "gnmi-message": GnmiMessageReader(corpus),
            "logs": LogsReader(corpus),
            "replay": ReplayReader(corpus, work),
            "scheduler": SchedulerReader(),
        }
        self.year = corpus.year

    def case(self, reader: str, index: int) -> Case:
        rng = random.Random(f"{self.args.seed}/{reader}/{index}")
        case = self.readers[reader].generate(rng, index)
        case.ctx.setdefault("year", self.year)
        return case

    def run(self, case: Case) -> tuple[Result, float]:
        reader = self.readers[case.reader]
        alarm = self.args.hang_limit > 0  # off under a test runner that owns SIGALRM
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, self.args.hang_limit)
        started = time.perf_counter()
        # The budget is CPU time: a reader that loops spends it, while a machine shared with
        # other work only stretches the wall clock (five replay inputs of 10 to 250 ms took
        # 2.4 to 3.1 s of wall time with four processes on two cores, and were called hangs).
        cpu_started = time.process_time()
        try:
            result: Result = reader.run(case)
        except InputTimeout as exc:
            result = Result(crash=f"hang: stopped after {self.args.hang_limit} s", exc=exc)
            result.hang = True
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        if result.crash is None and cpu > self.args.input_budget:
            result.crash = f"hang: {cpu:.2f} s of CPU over the {self.args.input_budget} s budget"
            result.hang = True
        return result, elapsed

    def reduce(self, case: Case, signature: str, budget: int = 150) -> Case:
        """Drop garbage (and, where records are independent, good records) while the input
        still fails the same way; then shorten what garbage is left."""
        if signature.startswith("hang"):
            return case
        tries = [0]
        lost_key = None
        first = self.run(case)[0]
        if first.lost:
            lost_key = first.lost[0].split(" | ")[:2]

        def fails(c: Case) -> bool:
            tries[0] += 1
            r = self.run(c)[0]
            if r.signature() != signature:
                return False
            return lost_key is None or r.lost[0].split(" | ")[:2] == lost_key

        items = list(case.items)
        droppable = case.reader in ("cables", "hosts", "gnmi", "scheduler")
        chunk = max(1, len(items) // 2)
        while chunk >= 1 and tries[0] < budget:
            i = 0
            changed = False
            while i < len(items) and tries[0] < budget:
                part = items[i : i + chunk]
                if any(p.good >= 0 and not droppable for p in part) or (
                    case.reader == "replay" and any(p.good >= 0 for p in part)
                ):
                    i += chunk
                    continue
                trial = items[:i] + items[i + chunk :]
                if trial and fails(case.copy(trial)):
                    items = trial
                    changed = True
                else:
                    i += chunk
            if not changed:
                chunk //= 2
        for n, item in enumerate(items):
            if item.good >= 0:
                continue
            data = item.data
            step = len(data) // 2
            while step >= 1 and tries[0] < budget:
                shorter = False
                for cut in (data[:-step], data[step:]):
                    trial_item = dataclasses.replace(item, data=cut)
                    trial = [*items[:n], trial_item, *items[n + 1 :]]
                    if fails(case.copy(trial)):
                        data, items, shorter = cut, trial, True
                        break
                if not shorter:
                    step //= 2
        return case.copy(items)

    def list_failure(self, case: Case, result: Result) -> None:
        """One line in DIR/failures.jsonl for every failing input: enough to regenerate it."""
        assert self.args.failures is not None
        out = Path(self.args.failures)
        out.mkdir(parents=True, exist_ok=True)
        line = {
            "reader": case.reader,
            "index": case.index,
            "failure": result.signature(),
            "lost": [x[:300] for x in result.lost[:3]],
            "reproduce": self._reproduce(case),
        }
        with (out / "failures.jsonl").open("a") as fh:
            fh.write(json.dumps(line) + "\n")

    def _reproduce(self, case: Case) -> str:
        return (
            f".venv/bin/python benchmarks/fuzz_readers.py --seed {self.args.seed} "
            f"--readers {case.reader} --index {case.index}"
        )

    def write_failure(self, case: Case, result: Result, reduced: Case) -> Path:
        assert self.args.failures is not None
        out = Path(self.args.failures)
        out.mkdir(parents=True, exist_ok=True)
        stem = out / f"{case.reader}-{case.index:06d}"
        reader = self.readers[case.reader]
        original = reader.write(case, stem.with_name(stem.name + ".orig"))
        small = reader.write(reduced, stem)
        again = self.run(reduced)[0]
        note = {
            "reader": case.reader,
            "seed": self.args.seed,
            "index": case.index,
            "failure": result.signature(),
            "reduced_still_fails": again.signature() == result.signature(),
            "lost": result.lost[:10],
            "crash_trace": trace_of(result.exc),
            "input": str(small.relative_to(out)),
            "original_input": str(original.relative_to(out)),
            "items": [
                {"good": i.good >= 0, "how": i.how, "where": i.where, "data": show_bytes(i.data)}
                for i in reduced.items
            ],
            "context": {k: v for k, v in case.ctx.items() if k != "good_rows"},
            "reproduce": self._reproduce(case),
        }
        stem.with_name(stem.name + ".note.json").write_text(
            json.dumps(note, indent=2, default=str) + "\n"
        )
        return small


def show_bytes(data: bytes) -> str:
    text = repr(data)
    return text if len(text) <= 600 else text[:600] + f"... ({len(data)} bytes)"


@dataclass
class Tally:
    inputs: int = 0
    checked: int = 0
    crashes: int = 0
    hangs: int = 0
    lost_inputs: int = 0
    lost_records: int = 0
    superseded: int = 0
    dead: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    signatures: Counter[str] = field(default_factory=Counter)
    examples: dict[str, int] = field(default_factory=dict)


def fuzz(h: Harness, reader: str, inputs: int, deadline: float) -> Tally:
    tally = Tally()
    written: Counter[str] = Counter()
    start = time.perf_counter()
    for index in range(inputs):
        if time.perf_counter() > deadline:
            break
        case = h.case(reader, index)
        result, elapsed = h.run(case)
        tally.inputs += 1
        tally.checked += result.checked
        tally.superseded += result.superseded
        tally.dead += result.dead
        tally.slowest = max(tally.slowest, elapsed)
        sig = result.signature()
        if sig is None:
            continue
        if result.hang:
            tally.hangs += 1
        elif result.crash:
            tally.crashes += 1
        else:
            tally.lost_inputs += 1
            tally.lost_records += len(
                [x for x in result.lost if not x.startswith("dead letters |")]
            )
        tally.signatures[sig] += 1
        tally.examples.setdefault(sig, index)
        if h.args.failures:
            h.list_failure(case, result)
            if written[sig] < h.args.per_signature:
                written[sig] += 1
                h.write_failure(case, result, h.reduce(case, sig))
    tally.seconds = time.perf_counter() - start
    return tally
