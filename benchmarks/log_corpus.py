"""How much of the public log corpus the parser reads: the share of lines that yield a fact, a
dead letter, or nothing, by source family.

Every file of tests/fixtures/logs/real/ is parsed as replay parses a capture's log file
(railtrace/replay/decode.py): one LogParser per file, fed line by line and paused at the end.
The corpus has no fabric, so no file gets a host hint, and stamps without a zone are read as
UTC. Blank lines are counted apart: they say nothing in any source.

A line's family comes from what it yields: its first fact's type (NCCL INFO facts -> nccl, a
watchdog timeout or report -> pytorch, Xid or mlx5 -> kernel, RAS report -> ras, step report ->
trainer, placement from an environment dump -> env; a transport error -> nccl on an
NCCL-prefixed line, else pytorch, which echoed it), or its dead letter's rule. A fact counts on
the line it names as its origin (an environment dump's placement is read after its last line but
names the first).
A line that yields nothing is nccl if it has NCCL's prefix, kernel if it is a driver's line
(`NVRM`, `mlx5_core`, ` kernel: `), else the family most of its file's productive lines have,
else "other" (file names are no guide: they name the thread, not the source).
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from railtrace.streams.logs import LogParser
from railtrace.streams.logs.nccl import match_prefix
from railtrace.streams.records import (
    ChannelEdge,
    CollectiveTimeout,
    InitComplete,
    JobFact,
    JobPlacement,
    NetDevices,
    NetError,
    NicEvent,
    Progress,
    RankInfo,
    RasReport,
    WatchdogState,
    XidEvent,
)

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs" / "real"
FAMILIES = ("nccl", "pytorch", "kernel", "trainer", "ras", "env", "other")
FACT = "fact"
DEAD = "dead letter"
NOTHING = "nothing"
OUTCOMES = (FACT, DEAD, NOTHING)

_BY_TYPE: dict[type, str] = {
    NetDevices: "nccl",
    RankInfo: "nccl",
    ChannelEdge: "nccl",
    InitComplete: "nccl",
    CollectiveTimeout: "pytorch",
    XidEvent: "kernel",
    NicEvent: "kernel",
    RasReport: "ras",
    Progress: "trainer",
    JobPlacement: "env",
    WatchdogState: "pytorch",
}
_BY_RULE_PREFIX = (
    ("nccl-", "nccl"),
    ("torch-", "pytorch"),
    ("kernel-", "kernel"),
    ("progress", "trainer"),
    ("env-", "env"),
)
_DRIVER_MARKS = ("NVRM", "mlx5_core", " kernel: ")


@dataclass
class Tally:
    """Lines of one family by outcome; `blank` lines stand apart from the three outcomes."""

    counts: Counter[str] = field(default_factory=Counter)
    blank: int = 0

    @property
    def lines(self) -> int:
        return sum(self.counts[o] for o in OUTCOMES)

    def add(self, other: Tally) -> None:
        self.counts.update(other.counts)
        self.blank += other.blank


def _is_nccl(text: str) -> bool:
    return " NCCL " in text and match_prefix(text) is not None


def _fact_family(fact: JobFact, text: str) -> str:
    if isinstance(fact, NetError):
        return "nccl" if _is_nccl(text) else "pytorch"
    return _BY_TYPE.get(type(fact), "other")


def _rule_family(rule: str, text: str) -> str | None:
    if rule == "net-error":
        return "nccl" if _is_nccl(text) else "pytorch"
    for prefix, family in _BY_RULE_PREFIX:
        if rule.startswith(prefix):
            return family
    return None  # line-length, internal: the line's own shape decides


def _shape_family(text: str) -> str | None:
    if _is_nccl(text):
        return "nccl"
    if any(mark in text for mark in _DRIVER_MARKS):
        return "kernel"
    return None


def tally_file(name: str, data: bytes, year_hint: int) -> dict[str, Tally]:
    """Per family, how the lines of one file fared; pure (the caller reads the file)."""
    lines = data.splitlines()
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    parser = LogParser("corpus", name, year_hint)
    facts: list[JobFact] = []
    dead: dict[int, str] = {}
    for line in lines:
        facts.extend(parser.feed(line))
        for letter in parser.stats.take_dead_letters():
            dead.setdefault(letter.line_no, letter.extra.get("rule", ""))
    facts.extend(parser.pause())
    first_fact: dict[int, JobFact] = {}
    for fact in facts:
        first_fact.setdefault(fact.origin.line_no, fact)

    outcome: dict[int, tuple[str | None, str]] = {}
    for no, text in enumerate(texts, 1):
        if no in first_fact:
            outcome[no] = (_fact_family(first_fact[no], text), FACT)
        elif no in dead:
            outcome[no] = (_rule_family(dead[no], text) or _shape_family(text), DEAD)
        elif text.strip():
            outcome[no] = (_shape_family(text), NOTHING)
    productive = Counter(f for f, o in outcome.values() if f is not None and o != NOTHING)
    fallback = productive.most_common(1)[0][0] if productive else "other"

    tallies: dict[str, Tally] = {}
    for family, result in outcome.values():
        tallies.setdefault(family or fallback, Tally()).counts[result] += 1
    blank = len(texts) - len(outcome)
    if blank:
        tallies.setdefault(fallback, Tally()).blank += blank
    return tallies


def tally_corpus(paths: Iterable[Path], year_hint: int) -> dict[str, Tally]:
    """The tallies of several files, summed per family."""
    total: dict[str, Tally] = {}
    for path in paths:
        for family, tally in tally_file(path.name, path.read_bytes(), year_hint).items():
            total.setdefault(family, Tally()).add(tally)
    return total


def table(tallies: dict[str, Tally], files: int) -> str:
    """The figures as a markdown table, families in a fixed order, then the totals."""
    rows = [
        "| family | lines | fact | dead letter | nothing | blank |",
        "|---|---|---|---|---|---|",
    ]
    everything = Tally()
    for family in FAMILIES:
        if family in tallies:
            everything.add(tallies[family])
            rows.append(_row(family, tallies[family]))
    rows.append(_row(f"**all ({files} files)**", everything))
    return "\n".join(rows)


def _row(label: str, tally: Tally) -> str:
    cells = [
        f"{tally.counts[o]} ({100 * tally.counts[o] / tally.lines:.1f}%)" if tally.lines else "0"
        for o in OUTCOMES
    ]
    return f"| {label} | {tally.lines} | {' | '.join(cells)} | {tally.blank} |"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="directory of .log files")
    ap.add_argument("--year-hint", type=int, default=2024, help="year of yearless stamps")
    args = ap.parse_args(argv)
    paths = sorted(args.corpus.glob("*.log"))
    print(table(tally_corpus(paths, args.year_hint), len(paths)))


if __name__ == "__main__":
    main()
