"""The `LogParser.feed` check: a window of good lines of one file, garbage lines between its
records (bytes or str), and every good line's facts must still come out."""

from __future__ import annotations

import random
from pathlib import Path

from railtrace.streams.logs import LogParser
from railtrace.streams.records import JobFact

from .cases import Case, Item, Result, crash_of
from .corpus import Corpus
from .log_facts import compare_line, expect_lines, year_of
from .mutate import junk, mutate_bytes


class LogsReader:
    """LogParser.feed over a window of good lines of one file with garbage lines between its
    records (never inside a record the parser holds open across lines)."""

    name = "logs"

    def __init__(self, corpus: Corpus) -> None:
        self.files = [f for f in corpus.logs if f.lines]
        self.year = corpus.year

    def generate(self, rng: random.Random, index: int) -> Case:
        f = rng.choice(self.files)
        w = rng.randint(1, 20)
        start = rng.randrange(max(1, len(f.lines) - w + 1))
        window = f.lines[start : start + w]
        eol = rng.choice((b"\n",) * 5 + (b"\r\n",))
        window = [ln[:-1] + eol if eol != b"\n" else ln for ln in window]
        job, source = "fuzzjob", f"logs/fuzzjob/{Path(f.name).name}"
        expected = expect_lines(job, source, self.year, window)
        others = [g for g in self.files if g.name != f.name]
        pool = [
            ln for g in rng.sample(others, 4) for ln in rng.sample(g.lines, min(5, len(g.lines)))
        ]
        items: list[Item] = []
        slots = [0] + [i + 1 for i, ok in enumerate(expected.boundaries) if ok]
        garbage: dict[int, list[Item]] = {}
        for _ in range(rng.randint(0, 16)):
            garbage.setdefault(rng.choice(slots), []).append(self._garbage(rng, pool))
        for i, line in enumerate(window):
            items += garbage.get(i, [])
            items.append(Item(line, good=i))
        items += garbage.get(len(window), [])
        ctx = {"file": f.name, "job": job, "source": source, "as_str": rng.random() < 0.2}
        return Case(self.name, index, items, ctx)

    def _garbage(self, rng: random.Random, pool: list[bytes]) -> Item:
        roll = rng.random()
        if roll < 0.15:
            data, how = junk(rng)
        else:
            data, how = mutate_bytes(rng, rng.choice(pool), pool)
        if rng.random() < 0.25:
            how += "+as-str"
            return Item(data, how=how, where="str")
        return Item(data, how=how)

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + ".log")
        out.write_bytes(
            b"".join(i.data if i.data.endswith(b"\n") else i.data + b"\n" for i in case.items)
        )
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        ctx = case.ctx
        goods = case.goods()
        expected = expect_lines(ctx["job"], ctx["source"], year_of(case), [g.data for g in goods])
        parser = LogParser(ctx["job"], ctx["source"], year_hint=year_of(case))
        earlier: list[JobFact] = []
        g = 0
        for item in case.items:
            data: str | bytes = item.data
            if item.where == "str":
                data = item.data.decode("utf-8", "surrogateescape")
            elif ctx["as_str"] and item.good >= 0:
                data = item.data.decode("utf-8", "replace")  # what the bytes path reads
            try:
                out = parser.feed(data)
            except Exception as exc:
                res.crash, res.exc = crash_of(exc)
                return res
            if item.good >= 0:
                lost, sup = compare_line(
                    expected.facts[g], expected.types[g], expected.context[g], out, earlier
                )
                res.checked += 1
                res.superseded += sup
                res.lost += [f"{m} | good line {item.data[:200]!r}" for m in lost]
                g += 1
            earlier += out
        res.dead = parser.stats.malformed
        return res
