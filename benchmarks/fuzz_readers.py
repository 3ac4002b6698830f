"""Fuzz run of the capture readers: generated inputs, good records among garbage, two checks.

Run: .venv/bin/python benchmarks/fuzz_readers.py [--seed 1] [--inputs 100000]
     [--time-limit 3600] [--readers cables,hosts,gnmi,gnmi-message,logs,replay]
     [--failures DIR] [--index N --readers R]   (the last form re-runs one input, verbosely)

Good records come from a simulated 16-node incident (`railtrace.simulate.write_capture`) and
from the real excerpts in tests/fixtures/: cables.csv and hosts.csv rows, gnmic messages (json
and event format, one line or gnmic's multiline layout), and log lines (NCCL, PyTorch, trainer
steps, dmesg / journal Xid and mlx5 lines). Every input is a handful of untouched good records
with garbage between them: good records of *other* files mutated (bit flips, truncation,
inserted junk, invalid UTF-8, NULs, huge and negative numbers and timestamps, wrong JSON types,
deep nesting, duplicated or missing CSV fields, BOMs, CRs, very long lines, ...) and pure junk.
The whole input may also be dressed in a way that must not change its meaning (CRLF line ends,
a BOM, reordered or extra CSV columns, a column repeated).

Each input is fed to its reader and two things are checked:

* crash: any exception escaping the reader (for `decode_message`, anything but the DecodeError
  it documents for a malformed message), or an input taking longer than `--input-budget`
  seconds (a SIGALRM at `--hang-limit` seconds stops a runaway input and counts it as a hang);
* lost good record: what each good record gives when read without the garbage (its cable, its
  host address, its telemetry values and LLDP news, its job facts) must still come out of the
  input. Only what a reader documents as context may differ: a log line without a full date
  takes its time (and a PyTorch or kernel line its host) from the lines before it, which is
  found by reading the good lines after two different preludes and dropping the fields that
  differ; a cable end claimed by an earlier row, an address re-mapped by a later row, and a
  log fact the parser reports once (RankInfo per rank, a watchdog timeout per rank and
  collective, a rethrown error per time and peer) already reported by a garbage line count as
  "superseded", not lost.

Bad input is expected to come out as counted dead letters / plan errors; their number is
printed. Inputs are reproducible from (seed, reader, index); every failing input is written,
reduced to the garbage that still makes it fail, to `--failures DIR` with a JSON note of what
was expected and what came out.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import io
import json
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import orjson

from railtrace.replay import CaptureError, open_capture, replay
from railtrace.streams.logs import LogParser
from railtrace.streams.records import (
    CablingEvent,
    CollectiveTimeout,
    DeadLetter,
    Endpoint,
    JobFact,
    LinkEvent,
    LinkSample,
    NetError,
    RankInfo,
    Verdict,
)
from railtrace.streams.telemetry import DecodeError, GnmicDecoder, decode_message
from railtrace.streams.telemetry.lldp import LldpUpdate
from railtrace.topology.cabling import (
    CABLE_COLUMNS,
    HOSTS_COLUMNS,
    Cable,
    parse_cables_csv,
    parse_hosts_csv,
)

# Inputs, garbage and the corpus of good records are in benchmarks/fuzzing/, imported from the
# repository root as `benchmarks.fuzzing`, the name mypy checks it under.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.fuzzing.cases import Case, Item, Result, crash_of, trace_of
from benchmarks.fuzzing.corpus import ADDRESS_PREFIX, Corpus, build_corpus
from benchmarks.fuzzing.encoding import csv_line, text_as_read
from benchmarks.fuzzing.mutate import junk, mutate_bytes
from benchmarks.fuzzing.mutate_json import mutate_json

READERS = ("cables", "hosts", "gnmi", "gnmi-message", "logs", "replay")


class InputTimeout(BaseException):
    """Raised by SIGALRM inside a reader; a BaseException so that no reader's `except
    Exception` (the log parser's "never raises" net) can swallow it."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise InputTimeout


# ---------------------------------------------------------------------------------------------
# Readers
# ---------------------------------------------------------------------------------------------


def csv_cause(text: str, errors: Sequence[str], variant: str) -> str:
    """Why good rows went missing, in words that group the failures."""
    if variant in ("dup-same", "dup-other"):
        return "a column named twice in the header"
    for e in errors:
        if "unreadable CSV" in e:
            inner = e.split("unreadable CSV (", 1)[1].split(")")[0]
            return f"an unreadable row ({re.sub(r'[0-9]+', 'N', inner)}) dropped the rows after it"
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        rows = []
    if any("\n" in f for row in rows for f in row):
        return "a quote opened in a bad row swallowed the rows after it"
    return "other"


@functools.cache
def _cable_alone(header: str, row: tuple[str, ...]) -> Cable:
    """The cable one good row gives by itself."""
    return parse_cables_csv(header + csv_line([*row, "x", "y"]).decode() + "\n").cables[0]


@functools.cache
def _host_alone(header: str, row: tuple[str, ...]) -> tuple[str, Endpoint]:
    """The address and NIC one good hosts.csv row gives by itself."""
    addresses: dict[str, Endpoint] = parse_hosts_csv(header + csv_line(row).decode() + "\n")[0]
    return next(iter(addresses.items()))


class CsvReader:
    """cables.csv or hosts.csv: header variants, good rows, garbage rows between them."""

    EXTRA = ("label", "color", "length", "length_unit", "tenant", "comments")

    def __init__(self, name: str, corpus: Corpus) -> None:
        self.name = name
        self.cables = name == "cables"
        self.required = CABLE_COLUMNS if self.cables else HOSTS_COLUMNS
        rows = corpus.cable_rows if self.cables else corpus.host_rows
        self.rows = rows
        self.all_columns = (*self.required, "type", "status") if self.cables else self.required

    def generate(self, rng: random.Random, index: int) -> Case:
        columns = list(self.all_columns)
        variant = rng.choice(
            ("plain",) * 8
            + ("bom", "crlf", "spaced", "reordered", "extra", "dup-same", "dup-other", "missing")
        )
        header = list(columns)
        layout: list[tuple[str, int]] = [("col", i) for i in range(len(columns))]
        if variant == "reordered":
            rng.shuffle(layout)
        elif variant == "extra":
            for _ in range(rng.randint(1, 3)):
                layout.insert(
                    rng.randint(0, len(layout)), ("extra", rng.randrange(len(self.EXTRA)))
                )
        elif variant in ("dup-same", "dup-other"):
            which = rng.randrange(len(self.required))
            layout.insert(
                rng.randint(0, len(layout)), ("dup-same" if variant == "dup-same" else "dup", which)
            )
        elif variant == "missing":
            which = rng.randrange(len(self.required))
            layout = [c for c in layout if c != ("col", which)]
        header = [
            columns[i] if kind in ("col", "dup-same", "dup") else self.EXTRA[i]
            for kind, i in layout
        ]
        if variant == "spaced":
            header = [f" {h}  " for h in header]
        k = rng.randint(1, 12)
        chosen = self._distinct(rng, k)
        chosen_set = {id(r) for r in chosen}
        others = [r for r in self.rows if id(r) not in chosen_set]
        pool = [self._format(r, layout, rng) for r in rng.sample(others, min(8, len(others)))]
        items: list[Item] = []
        for n, row in enumerate(chosen):
            items.append(Item(self._format(row, layout, rng), good=n))
        for _ in range(rng.randint(0, 12)):
            items.insert(rng.randint(0, len(items)), self._garbage(rng, pool, others, layout))
        ctx = {
            "variant": variant,
            "header": csv_line(header).decode(),
            "eol": "\r\n" if variant == "crlf" else "\n",
            "bom": variant == "bom",
            "good_rows": [row[: len(self.required)] for row in chosen],
            "dup_column": self._dup_name(layout),
        }
        return Case(self.name, index, items, ctx)

    def _dup_name(self, layout: list[tuple[str, int]]) -> str | None:
        return next((self.required[i] for kind, i in layout if kind in ("dup", "dup-same")), None)

    def _distinct(self, rng: random.Random, k: int) -> list[list[str]]:
        seen: set[tuple[str, str]] = set()
        out: list[list[str]] = []
        for row in rng.sample(self.rows, min(len(self.rows), k * 2)):
            ends = (
                {(row[0], row[2]), (row[3], row[5])}
                if self.cables
                else {(row[2].split("/")[0], "")}
            )
            if ends & seen:
                continue
            seen |= ends
            out.append(row)
            if len(out) == k:
                break
        return out

    def _format(self, row: list[str], layout: list[tuple[str, int]], rng: random.Random) -> bytes:
        fields = []
        for kind, i in layout:
            if kind in ("col", "dup-same"):
                fields.append(row[i] if i < len(row) else "")
            elif kind == "dup":
                # The repeated column holds another row's value: which one counts is ambiguous.
                fields.append(rng.choice(self.rows)[i] + "-dup")
            else:
                fields.append(rng.choice(("", "blue", "3", "m", "x,y", 'say "hi"')))
        return csv_line(fields)

    def _garbage(
        self,
        rng: random.Random,
        pool: list[bytes],
        others: list[list[str]],
        layout: list[tuple[str, int]],
    ) -> Item:
        roll = rng.random()
        if roll < 0.1:
            data, how = junk(rng)
            return Item(data, how=how)
        base = rng.choice(pool)
        if roll < 0.3:
            fields = next(csv.reader([base.decode()]))
            op = rng.randrange(7)
            if op == 0:
                fields = fields[: rng.randrange(len(fields))]
                how = "csv:missing-fields"
            elif op == 1:
                fields += ["x"] * rng.randint(1, 5)
                how = "csv:extra-fields"
            elif op == 2 and self.cables:
                fields[1] = rng.choice(
                    ("dcim.frontport", "circuits.circuittermination", "", "DCIM.INTERFACE")
                )
                how = "csv:type"
            elif op == 3:
                fields = ["" if rng.random() < 0.5 else f for f in fields]
                how = "csv:empty-fields"
            elif op == 4:
                i = rng.randrange(len(fields))
                fields[i] = "x" * rng.choice((1000, 140_000))
                how = "csv:huge-field"
            elif op == 5:
                i = rng.randrange(len(fields))
                fields[i] = fields[i] + "\n" + fields[i]
                how = "csv:newline-in-quotes"
            else:
                fields = [f" {f} " for f in fields]
                how = "csv:blanks"
            return Item(csv_line(fields), how=how)
        data, how = mutate_bytes(rng, base, pool)
        return Item(data, how=how)

    def _mapped_later(self, case: Case, item: Item, ip: str) -> bool:
        """Whether a row after `item`, read by itself under the input's header, maps `ip`
        (addresses are compared as parsed: `fd00::07` is `fd00::7`)."""
        head = case.ctx["header"] + "\n"
        at = case.items.index(item)
        for later in case.items[at + 1 :]:
            try:
                mapped, _ = parse_hosts_csv(head + text_as_read(later.data) + "\n")
            except Exception:  # a crash is the run's business, not this check's
                continue
            if ip in mapped:
                return True
        return False

    def text(self, case: Case) -> str:
        eol = case.ctx["eol"].encode()
        body = case.ctx["header"].encode() + eol + eol.join(i.data for i in case.items) + eol
        return ("\ufeff" if case.ctx["bom"] else "") + text_as_read(body)

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + ".csv")
        out.write_bytes(self.text(case).encode("utf-8", "surrogateescape"))
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        header = ",".join(self.all_columns) + "\n"
        good = [i for i in case.items if i.good >= 0]
        rows = {i.good: case.ctx["good_rows"][i.good] for i in good}
        if self.cables:
            expected = {n: _cable_alone(header, tuple(r)) for n, r in rows.items()}
        else:
            expected_hosts = {n: _host_alone(header, tuple(r)) for n, r in rows.items()}
        text = self.text(case)
        try:
            if self.cables:
                plan = parse_cables_csv(text)
                errors = plan.errors
                cables = set(plan.cables)
            else:
                addresses, errors = parse_hosts_csv(text)
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
            return res
        res.dead = len(errors)
        variant = case.ctx["variant"]
        if variant == "missing":
            # The header lacks a required column: no row can be read, and it must say why.
            res.checked = 1
            got = plan.cables if self.cables else list(addresses)
            if got or not any("missing column" in e for e in errors):
                res.lost.append(f"header without a required column | not refused | {errors[:2]}")
            return res
        if variant in ("dup-same", "dup-other"):
            # A column named twice is ambiguous (the values may differ): refusing the header
            # with a reason that names the column is as good as reading it as intended.
            name = case.ctx["dup_column"]
            if any(name in e and _names_repeat(e) for e in errors):
                res.checked = 1
                return res
        for item in good:
            res.checked += 1
            if self.cables:
                want = expected[item.good]
                if want in cables:
                    continue
                if any(want.a in (c.a, c.b) or want.b in (c.a, c.b) for c in plan.cables):
                    res.superseded += 1  # an earlier row claimed one of its ends: first wins
                    continue
                res.lost.append(
                    f"cable ({csv_cause(text, errors, variant)}) | {want.a.device}:"
                    f"{want.a.interface}--{want.b.device}:{want.b.interface} | header variant "
                    f"{variant}; errors: {errors[:3]}"
                )
            else:
                ip, ep = expected_hosts[item.good]
                if addresses.get(ip) == ep:
                    continue
                if ip in addresses and self._mapped_later(case, item, ip):
                    res.superseded += 1  # a later row maps the same address: last wins
                    continue
                res.lost.append(
                    f"host address ({csv_cause(text, errors, variant)}) | {ip} -> "
                    f"{ep.device}:{ep.interface} | header variant {variant}; got "
                    f"{addresses.get(ip)}; errors: {errors[:3]}"
                )
        return res


@functools.lru_cache(maxsize=20_000)
def _alone(chunk: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The telemetry values and LLDP news of one good message read by itself."""
    lldp: list[LldpUpdate] = []
    values = GnmicDecoder().feed_text(text_as_read(chunk), "alone", lldp)
    return tuple(values), tuple(_lldp_key(u) for u in lldp)


def _names_repeat(error: str) -> bool:
    return any(w in error for w in ("twice", "duplicate", "repeated", "more than once"))


def _lldp_key(u: LldpUpdate) -> tuple[Any, ...]:
    return (u.device, u.ts_ns, tuple(u.leaves), tuple(u.deletes), u.replace)


class GnmiReader:
    """GnmicDecoder.feed_text (iter_messages and decode_message inside) over good messages
    with garbage messages and lines between them."""

    name = "gnmi"

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = corpus.gnmi

    def generate(self, rng: random.Random, index: int) -> Case:
        k = rng.randint(1, 6)
        chosen = rng.sample(range(len(self.chunks)), k)
        origins = {self.chunks[c].origin for c in chosen}
        others = [c.text for c in rng.sample(self.chunks, 12) if c.origin not in origins] or [b"{}"]
        items = [Item(self.chunks[c].text, good=n) for n, c in enumerate(chosen)]
        for _ in range(rng.randint(0, 8)):
            roll = rng.random()
            if roll < 0.15:
                data, how = junk(rng)
            elif roll < 0.55:
                data, how = mutate_json(rng, rng.choice(others))
            else:
                data, how = mutate_bytes(rng, rng.choice(others), others)
            items.insert(rng.randint(0, len(items)), Item(data, how=how))
        return Case(self.name, index, items, {"eol": rng.choice(("\n",) * 4 + ("\r\n",))})

    def text(self, case: Case) -> str:
        eol = str(case.ctx["eol"])
        return eol.join(text_as_read(i.data).replace("\n", eol) for i in case.items) + eol

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + ".jsonl")
        out.write_bytes(self.text(case).encode("utf-8", "surrogateescape"))
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        want_values: Counter[Any] = Counter()
        want_lldp: Counter[Any] = Counter()
        for item in case.goods():
            values, updates = _alone(item.data)
            want_values.update(values)
            want_lldp.update(updates)
        decoder = GnmicDecoder()
        lldp: list[LldpUpdate] = []
        try:
            got = decoder.feed_text(self.text(case), "fuzz.jsonl", lldp)
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
            return res
        res.dead = decoder.stats.dead_letter_count
        res.checked = len(case.goods())
        missing = want_values - Counter(got)
        missing_lldp = want_lldp - Counter(_lldp_key(u) for u in lldp)
        for value in sorted(missing, key=repr)[:3]:
            res.lost.append(f"telemetry value | {value} ({missing[value]}x)")
        for key in list(missing_lldp)[:3]:
            res.lost.append(f"lldp update | {key}")
        if missing or missing_lldp:
            reasons = [d.reason for d in decoder.stats.dead_letters[:3]]
            res.lost.append(f"dead letters | of this input | {reasons}")
        return res


class GnmiMessageReader:
    """decode_message on single JSON values, most of them gnmic messages made wrong."""

    name = "gnmi-message"

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = [c.text for c in corpus.gnmi]

    def generate(self, rng: random.Random, index: int) -> Case:
        base = rng.choice(self.chunks)
        body = ADDRESS_PREFIX.sub(b"", base)
        roll = rng.random()
        if roll < 0.1:
            data, how = base, "good"
        elif roll < 0.8:
            data, how = mutate_json(rng, body)
        else:
            data, how = mutate_bytes(rng, body, self.chunks)
        return Case(self.name, index, [Item(data, how=how)])

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + ".json")
        out.write_bytes(case.items[0].data)
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        try:
            # What every caller hands decode_message: orjson's reading of a payload.
            message = orjson.loads(case.items[0].data)
        except orjson.JSONDecodeError:
            res.dead = 1  # never a message: iter_messages / the worker dead-letter it first
            return res
        res.checked = 1
        try:
            decode_message(message)
        except DecodeError:
            res.dead = 1
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
        return res


# -- logs --------------------------------------------------------------------------------------

#: Two different pasts for a log line: another time, year and NCCL process before it. A field
#: of a good line's fact that differs between the two is taken from context, not from the line.
#: NCCL-prefixed, so they touch the clock and the current process but no multi-line record.
PRELUDES = (
    b"2001-02-03T04:05:06.000000Z probe-a:111:111 [0] NCCL INFO fuzz probe\n",
    b"2011-08-13T14:15:16.000000Z probe-b:222:222 [1] NCCL INFO fuzz probe\n",
)
ONCE_KEYS: dict[type, tuple[str, ...]] = {
    RankInfo: ("host", "pid", "comm_id", "rank"),
    CollectiveTimeout: ("rank", "seq", "op"),
    NetError: ("kind", "peer", "ts_ns", "host", "pid"),
}


def _fields(fact: Any) -> dict[str, Any]:
    return {f.name: getattr(fact, f.name) for f in dataclasses.fields(fact) if f.name != "origin"}


@dataclass
class Expected:
    """What a window of good lines gives alone: per line, its facts and the fields to ignore."""

    facts: list[list[dict[str, Any]]]
    types: list[list[type]]
    context: list[set[str]]
    boundaries: list[bool]  # after line i, no multi-line record is open


def expect_lines(job: str, source: str, year: int, lines: Sequence[bytes]) -> Expected:
    """`_expect_lines`, remembered: inputs share their good windows."""
    return _expect_lines(job, source, year, tuple(lines))


@functools.lru_cache(maxsize=20_000)
def _expect_lines(job: str, source: str, year: int, lines: tuple[bytes, ...]) -> Expected:
    """Read the good lines alone; for each, also read it after each of two preludes put right
    before it (the parser restored to its state there), so that the fields a line takes from
    the lines before it (time, year, NCCL process) are known."""
    parser = LogParser(job, source, year_hint=year)
    facts: list[list[dict[str, Any]]] = []
    types: list[list[type]] = []
    boundaries: list[bool] = []
    context: list[set[str]] = []
    before = parser.snapshot()
    for line in lines:
        out = parser.feed(line)
        facts.append([_fields(f) for f in out])
        types.append([type(f) for f in out])
        snap = parser.snapshot()
        boundaries.append(
            not snap["torch"]["awaiting_last_error"] and snap["ras"]["section"] is None
        )
        drop: set[str] = set()
        if not out:
            context.append(drop)
            before = snap
            continue
        probes = []
        for prelude in PRELUDES:
            probe = LogParser.restore(before)
            probe.feed(prelude)
            probes.append(probe.feed(line))
        before = snap
        a, b = probes
        if len(a) != len(b) or len(a) != len(out):
            drop = {"ts_ns", "started_ns", "host", "pid"}
        for fa, fb in zip(a, b, strict=False):
            da, db = _fields(fa), _fields(fb)
            drop |= {k for k in da if da[k] != db.get(k)}
        context.append(drop)
    return Expected(facts, types, context, boundaries)


def compare_line(
    want: list[dict[str, Any]],
    types: list[type],
    drop: set[str],
    got: list[JobFact],
    earlier: list[JobFact],
) -> tuple[list[str], int]:
    """The facts of one good line missing from `got` (what the line gave among garbage), and
    how many of them an earlier line already reported where the parser reports once."""
    lost: list[str] = []
    superseded = 0
    pool = [(type(f), {k: v for k, v in _fields(f).items() if k not in drop}) for f in got]
    for kind, fields in zip(types, want, strict=True):
        projected = {k: v for k, v in fields.items() if k not in drop}
        if (kind, projected) in pool:
            pool.remove((kind, projected))
            continue
        once = ONCE_KEYS.get(kind)
        if once is not None:
            key = {k: projected[k] for k in once if k in projected}
            if any(
                type(f) is kind and all(getattr(f, k) == v for k, v in key.items()) for f in earlier
            ):
                superseded += 1
                continue
        lost.append(f"{kind.__name__} | {projected}")
    return lost, superseded


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
        expected = expect_lines(ctx["job"], ctx["source"], self_year(case), [g.data for g in goods])
        parser = LogParser(ctx["job"], ctx["source"], year_hint=self_year(case))
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


def self_year(case: Case) -> int:
    return int(case.ctx.get("year", 2026))


# -- replay ------------------------------------------------------------------------------------


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
            len(_alone(i.data)[0])
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
            want = _cable_alone(header, tuple(next(csv.reader([item.data.decode()]))[:6]))
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
        for where, items in files.items():
            job = where.split("/")[1]
            if any(s.startswith(f"logs/{job}/") for s in skipped):
                res.dead += len(items)
                continue
            goods = [i.data for i in items if i.good >= 0]
            expected = expect_lines(job, where, self_year(case), goods)
            earlier: list[JobFact] = []
            g = 0
            for line_no, item in enumerate(items, 1):
                got = by_origin.get((where, line_no), [])
                if item.good >= 0:
                    drop = expected.context[g] | {"job_id"}
                    lost, sup = compare_line(
                        expected.facts[g], expected.types[g], drop, got, earlier
                    )
                    res.checked += 1
                    res.superseded += sup
                    res.lost += [f"{m} | {where}:{line_no} {item.data[:160]!r}" for m in lost]
                    g += 1
                earlier += got


# ---------------------------------------------------------------------------------------------
# Driving, reducing and writing failures
# ---------------------------------------------------------------------------------------------


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
        try:
            result: Result = reader.run(case)
        except InputTimeout as exc:
            result = Result(crash=f"hang: stopped after {self.args.hang_limit} s", exc=exc)
            result.hang = True
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.perf_counter() - started
        if result.crash is None and elapsed > self.args.input_budget:
            result.crash = f"hang: {elapsed:.2f} s over the {self.args.input_budget} s budget"
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
        droppable = case.reader in ("cables", "hosts", "gnmi")
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
                {"good": i.good >= 0, "how": i.how, "where": i.where, "data": _show(i.data)}
                for i in reduced.items
            ],
            "context": {k: v for k, v in case.ctx.items() if k != "good_rows"},
            "reproduce": self._reproduce(case),
        }
        stem.with_name(stem.name + ".note.json").write_text(
            json.dumps(note, indent=2, default=str) + "\n"
        )
        return small


def _show(data: bytes) -> str:
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


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--inputs", type=int, default=100_000, help="inputs per reader")
    ap.add_argument("--time-limit", type=float, default=3600.0, help="seconds for the whole run")
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument(
        "--failures",
        help="directory: failures.jsonl lists every failing input (each regenerated by its "
        "--index); the first --per-signature of each kind are also written out, reduced",
    )
    ap.add_argument("--per-signature", type=int, default=3, help="inputs written per failure kind")
    ap.add_argument("--input-budget", type=float, default=2.0, help="seconds one input may take")
    ap.add_argument("--capture-seed", type=int, default=1, help="the simulated incident's seed")
    ap.add_argument("--index", type=int, help="run only this input, and show it")
    ap.add_argument(
        "--hang-limit",
        type=float,
        default=20.0,
        help="seconds before one input is stopped by SIGALRM (0: no alarm)",
    )
    return ap


def work_dir() -> Path:
    """A scratch directory, in memory where the machine has /dev/shm (replay inputs are
    written as capture directories)."""
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="railtrace-fuzz-", dir=shm if shm.is_dir() else None))


def main() -> int:
    ap = parser()
    args = ap.parse_args()
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    unknown = set(readers) - set(READERS)
    if unknown:
        ap.error(f"unknown readers {sorted(unknown)}; choose from {', '.join(READERS)}")
    if args.hang_limit > 0:
        signal.signal(signal.SIGALRM, _alarm)
    work = work_dir()
    try:
        t = time.perf_counter()
        corpus = build_corpus(work, args.capture_seed)
        h = Harness(args, corpus, work)
        print(
            f"corpus: {len(corpus.cable_rows)} cable rows, {len(corpus.host_rows)} host rows, "
            f"{len(corpus.gnmi)} gnmic messages, {len(corpus.logs)} log files "
            f"({sum(len(f.lines) for f in corpus.logs)} lines); built in "
            f"{time.perf_counter() - t:.1f} s",
            flush=True,
        )
        if args.index is not None:
            return show_one(h, readers, args.index)
        return run_all(h, readers, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def show_one(h: Harness, readers: list[str], index: int) -> int:
    status = 0
    for reader in readers:
        case = h.case(reader, index)
        result, elapsed = h.run(case)
        print(f"{reader} #{index}: {result.signature() or 'ok'} ({elapsed * 1000:.1f} ms)")
        for item in case.items:
            tag = f"good {item.good}" if item.good >= 0 else f"garbage {item.how}"
            print(f"  [{tag}{' ' + item.where if item.where else ''}] {_show(item.data)[:300]}")
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


if __name__ == "__main__":
    sys.exit(main())
