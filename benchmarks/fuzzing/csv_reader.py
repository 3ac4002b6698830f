"""The cables.csv and hosts.csv check: good rows under header variants (BOM, CRLF, padded,
reordered, extra, repeated or missing columns), garbage rows between them; every good row's
cable or address must come out, unless an earlier cable or a later address supersedes it."""

from __future__ import annotations

import csv
import functools
import io
import random
import re
from collections.abc import Sequence
from pathlib import Path

from railtrace.topology.cabling import (
    CABLE_COLUMNS,
    HOSTS_COLUMNS,
    Cable,
    parse_cables_csv,
    parse_hosts_csv,
)
from railtrace.topology.ends import Endpoint

from .cases import Case, Item, Result, crash_of
from .corpus import Corpus
from .encoding import csv_line, text_as_read
from .mutate import junk, mutate_bytes


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
def cable_alone(header: str, row: tuple[str, ...]) -> Cable:
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
            expected = {n: cable_alone(header, tuple(r)) for n, r in rows.items()}
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


def _names_repeat(error: str) -> bool:
    return any(w in error for w in ("twice", "duplicate", "repeated", "more than once"))
