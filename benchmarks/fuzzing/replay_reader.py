"""The `open_capture` + `replay` check: a capture directory written for each input (the mini
incident's cables, addresses, telemetry and logs, garbage rows, messages, lines and files
among them, odd job folder names) replayed into a sink that keeps what it is given."""

from __future__ import annotations

import csv
import random
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from railtrace.replay import CaptureError, open_capture, replay
from railtrace.streams.records import (
    CablingEvent,
    DeadLetter,
    JobFact,
    LinkEvent,
    LinkSample,
    NodeEvent,
    Verdict,
)
from railtrace.topology.cabling import CABLE_COLUMNS

from .cases import Case, Item, Result, crash_of
from .corpus import Corpus
from .csv_reader import cable_alone, csv_cause
from .encoding import csv_line, text_as_read
from .gnmi_readers import message_alone
from .log_facts import compare_line, expect_lines, year_of
from .mutate import junk, mutate_bytes
from .mutate_json import mutate_json


class RecordingSink:
    """A replay Sink that keeps what it is given, for the checks."""

    def __init__(self) -> None:
        self.facts: list[JobFact] = []
        self.dead: list[DeadLetter] = []
        self.samples = 0
        self.events = 0
        self.verdicts: list[Verdict] = []

    def write_link_samples(self, rows: Sequence[tuple[LinkSample, str]]) -> None:
        self.samples += len(rows)

    def write_link_events(self, rows: Sequence[tuple[LinkEvent, str]]) -> None:
        self.events += len(rows)

    def write_job_facts(self, rows: Sequence[JobFact]) -> None:
        self.facts.extend(rows)

    def write_verdicts(self, rows: Sequence[Verdict]) -> None:
        self.verdicts.extend(rows)

    def write_dead_letters(self, rows: Sequence[DeadLetter]) -> None:
        self.dead.extend(rows)

    def write_cabling_events(self, rows: Sequence[CablingEvent]) -> None:
        pass

    def write_node_events(self, rows: Sequence[NodeEvent]) -> None:
        pass


WEIRD_NAMES = (
    "job with spaces",
    "%2e%2e",
    "..x",
    "-rf",
    "j\u00f6b\u202e",
    "x" * 200,
    "1234_5",
    "a:b@c+d",
    ".hidden",
)


class ReplayReader:
    """open_capture + replay over a capture directory written for each input: the mini
    incident's cables, addresses, telemetry and logs, with garbage rows, messages, lines and
    files among them."""

    name = "replay"

    def __init__(self, corpus: Corpus, work: Path) -> None:
        self.mini = corpus.mini
        self.corpus = corpus
        self.work = work
        self.cable_pool = [csv_line(r) for r in corpus.cable_rows[-60:]]
        self.good_cables = [csv_line(r) for r in corpus.mini.cable_rows]
        self.good_hosts = [csv_line(r) for r in corpus.mini.host_rows]
        self.host_pool = [csv_line(r) for r in corpus.host_rows]
        self.line_pool = [ln for f in corpus.logs[-20:] for ln in f.lines[:5]]

    def generate(self, rng: random.Random, index: int) -> Case:
        m = self.mini
        items: list[Item] = []
        # cables.csv: every good row (the logs and telemetry need them), garbage between.
        cable_pool = self.cable_pool
        for n, row in enumerate(self.good_cables):
            items.append(Item(row, good=n, where="cables.csv"))
        for _ in range(rng.randint(0, 6)):
            data, how = mutate_bytes(rng, rng.choice(cable_pool), cable_pool)
            items.insert(rng.randint(0, len(items)), Item(data, how=how, where="cables.csv"))
        if rng.random() < 0.8:
            for row in self.good_hosts:
                items.append(Item(row, good=0, where="hosts.csv"))
            if rng.random() < 0.5:
                host_pool = self.host_pool
                data, how = mutate_bytes(rng, rng.choice(host_pool), host_pool)
                items.append(Item(data, how=how, where="hosts.csv"))
        # telemetry: a window of each of a few switches' messages, garbage between.
        names = sorted(m.gnmi)
        foreign = [c.text for c in rng.sample(self.corpus.gnmi, 20)]
        for name in rng.sample(names, min(len(names), rng.randint(1, 2))):
            lines = m.gnmi[name]
            start = rng.randrange(max(1, len(lines) - 8))
            for line in lines[start : start + rng.randint(1, 8)]:
                items.append(Item(line, good=0, where=f"gnmi/{name}"))
            for _ in range(rng.randint(0, 4)):
                roll = rng.random()
                if roll < 0.5:
                    data, how = mutate_json(rng, rng.choice(foreign))
                elif roll < 0.9:
                    data, how = mutate_bytes(rng, rng.choice(foreign), foreign)
                else:
                    data, how = junk(rng)
                spot = rng.randint(0, len(items))
                items.insert(spot, Item(data, how=how, where=f"gnmi/{name}"))
        # logs: a window of each good file from its start, garbage lines between records.
        job = next(iter(m.logs))
        job_dir = rng.choice(WEIRD_NAMES) if rng.random() < 0.1 else job
        line_pool = self.line_pool
        for f in m.logs[job]:
            window = f.lines[: rng.randint(1, min(24, len(f.lines)))]
            expected = expect_lines(job_dir, f"logs/{job_dir}/{f.name}", self.corpus.year, window)
            where = f"logs/{job_dir}/{f.name}"
            slots = [0] + [i + 1 for i, ok in enumerate(expected.boundaries) if ok]
            garbage: dict[int, list[Item]] = {}
            for _ in range(rng.randint(0, 6)):
                data, how = mutate_bytes(rng, rng.choice(line_pool), line_pool)
                garbage.setdefault(rng.choice(slots), []).append(
                    Item(data.replace(b"\n", b" ") + b"\n", how=how, where=where)
                )
            for i, line in enumerate(window):
                items += garbage.get(i, [])
                items.append(Item(line, good=i, where=where))
            items += garbage.get(len(window), [])
        # whole garbage files
        for _ in range(rng.choice((0, 0, 0, 1, 2))):
            data, how = junk(rng) if rng.random() < 0.5 else mutate_json(rng, rng.choice(foreign))
            where = rng.choice(
                (
                    "gnmi/zz-garbage.json",
                    "gnmi/zz-garbage.jsonl",
                    f"logs/{job_dir}/zz-garbage.log",
                    "logs/other-job/zz.log",
                    "logs/stray-file.log",
                    "gnmi/.json",
                )
            )
            items.append(Item(data, how=f"file:{how}", where=where))
        return Case(self.name, index, items, {"year": self.corpus.year, "job_dir": job_dir})

    def files(self, case: Case) -> dict[str, bytes]:
        out: dict[str, list[bytes]] = {}
        for item in case.items:
            out.setdefault(item.where, []).append(item.data)
        files: dict[str, bytes] = {}
        for where, parts in out.items():
            if where == "cables.csv":
                files[where] = b",".join(c.encode() for c in CABLE_COLUMNS) + b",type,status\n"
            elif where == "hosts.csv":
                files[where] = b"device,interface,ip\n"
            else:
                files[where] = b""
            if where.startswith("logs/"):
                files[where] += b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)
            else:
                files[where] += b"\n".join(parts) + b"\n"
        return files

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + "-capture")
        shutil.rmtree(out, ignore_errors=True)
        for where, data in self.files(case).items():
            target = out / where
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        root = Path(tempfile.mkdtemp(prefix="fuzz-replay-", dir=self.work))
        try:
            return self._run(case, self.write(case, root / "cap"), res)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _run(self, case: Case, cap: Path, res: Result) -> Result:
        sink = RecordingSink()
        try:
            capture = open_capture(cap)
            report = replay(capture, sink)
        except CaptureError as exc:
            res.checked = 1
            res.lost.append(f"capture refused | {str(exc)[:400]}")
            return res
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
            return res
        res.dead = len(sink.dead) + len(capture.plan_errors)
        written = sum(report.dead_letters.values())
        if written != len(sink.dead):
            res.lost.append(
                f"dead letters uncounted | report says {written}, sink got {len(sink.dead)}"
            )
        self._check_cables(case, capture, res)
        # telemetry: at least as many values as the good messages give alone
        good_values = sum(
            len(message_alone(i.data)[0])
            for i in case.items
            if i.where.startswith("gnmi/") and i.good >= 0
        )
        if report.telemetry_values < good_values:
            res.lost.append(
                f"telemetry values | fewer than the good messages give | {report.telemetry_values}"
                f" decoded, the good messages alone give {good_values}"
            )
        self._check_facts(case, capture, sink, res)
        return res

    def _check_cables(self, case: Case, capture: Any, res: Result) -> None:
        cables = set(capture.plan.cables)
        header = ",".join(CABLE_COLUMNS) + ",type,status\n"
        for item in case.items:
            if item.where != "cables.csv" or item.good < 0:
                continue
            res.checked += 1
            want = cable_alone(header, tuple(next(csv.reader([item.data.decode()]))[:6]))
            if want in cables:
                continue
            if any(want.a in (c.a, c.b) or want.b in (c.a, c.b) for c in capture.plan.cables):
                res.superseded += 1
                continue
            text = text_as_read(self.files(case)["cables.csv"])
            cause = csv_cause(text, capture.plan_errors, "plain")
            res.lost.append(
                f"cable ({cause}) | {want} | not in the plan; errors {capture.plan_errors[:3]}"
            )

    def _check_facts(self, case: Case, capture: Any, sink: RecordingSink, res: Result) -> None:
        """Job facts, line by line: facts carry the file and line they came from."""
        by_origin: dict[tuple[str, int], list[JobFact]] = {}
        for f in sink.facts:
            by_origin.setdefault((f.origin.source, f.origin.line_no), []).append(f)
        files: dict[str, list[Item]] = {}
        for item in case.items:
            if item.where.startswith("logs/") and not item.how.startswith("file:"):
                files.setdefault(item.where, []).append(item)
        # A folder the capture reader says it left out, and why, is bad input reported.
        skipped = [str(s) for s in getattr(capture, "skipped", [])]
        # A job none of whose files carries a time has its facts dead-lettered as `untimed`
        # (never placed at 1970): reported bad input, not lost, whatever one file alone gives.
        untimed = {(d.source, d.line_no) for d in sink.dead if d.extra.get("rule") == "untimed"}
        for where, items in files.items():
            job = where.split("/")[1]
            if any(s.startswith(f"logs/{job}/") for s in skipped):
                res.dead += len(items)
                continue
            goods = [i.data for i in items if i.good >= 0]
            expected = expect_lines(job, where, year_of(case), goods)
            earlier: list[JobFact] = []
            g = 0
            for line_no, item in enumerate(items, 1):
                got = by_origin.get((where, line_no), [])
                if item.good >= 0 and not got and (where, line_no) in untimed:
                    res.checked += 1
                    res.dead += 1
                    g += 1
                elif item.good >= 0:
                    drop = expected.context[g] | {"job_id"}
                    lost, sup = compare_line(
                        expected.facts[g], expected.types[g], drop, got, earlier
                    )
                    res.checked += 1
                    res.superseded += sup
                    res.lost += [f"{m} | {where}:{line_no} {item.data[:160]!r}" for m in lost]
                    g += 1
                earlier += got
