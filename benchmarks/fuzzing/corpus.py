"""The good records inputs are made of: a simulated 16-node incident and the real excerpts in
tests/fixtures/ (cables.csv and hosts.csv rows, gnmic messages, log files), and the small
part of that incident a replay input is built from."""

from __future__ import annotations

import csv
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from railtrace.simulate import Fault, write_capture
from railtrace.streams.telemetry import GnmicDecoder

from .cases import ROOT
from .encoding import text_as_read

FIXTURES = ROOT / "tests" / "fixtures"


@dataclass
class GnmiChunk:
    text: bytes
    origin: str


@dataclass
class LogFile:
    name: str
    lines: list[bytes]  # each ends with b"\n"


@dataclass
class Corpus:
    cable_rows: list[list[str]]  # the six columns, then type and status
    host_rows: list[list[str]]
    gnmi: list[GnmiChunk]
    logs: list[LogFile]
    mini: MiniCapture
    year: int


@dataclass
class MiniCapture:
    """The part of the simulated incident a replay input is built from: two hosts of the
    stalled job, their cables and their leaves' uplinks, those switches' telemetry."""

    cable_rows: list[list[str]]
    host_rows: list[list[str]]
    gnmi: dict[str, list[bytes]]  # file name -> single-line messages
    logs: dict[str, list[LogFile]]  # job id -> files


ADDRESS_PREFIX = re.compile(rb"^\[[^\]{}\",\t ]+\] ")


def gnmi_chunks(text: bytes) -> list[bytes]:
    """Cut gnmic output into messages: a line that is JSON by itself, or the lines from a
    column-0 opener to a column-0 closer (after any `[address] ` prefix)."""
    out: list[bytes] = []
    pending: list[bytes] = []
    for line in text.split(b"\n"):
        body = ADDRESS_PREFIX.sub(b"", line, count=1)
        if pending:
            pending.append(line)
            if body[:1] in (b"}", b"]"):
                out.append(b"\n".join(pending))
                pending = []
            continue
        if body[:1] in (b"{", b"["):
            try:
                json.loads(body)
                out.append(line)
            except ValueError:
                pending = [line]
    return out


def _lines(path: Path) -> list[bytes]:
    lines = path.read_bytes().splitlines(True)
    return [ln if ln.endswith(b"\n") else ln + b"\n" for ln in lines]


def _good_chunk(text: bytes) -> bool:
    decoder = GnmicDecoder()
    decoder.feed_text(text_as_read(text), "corpus")
    return bool(decoder.stats.dead_letter_count == 0 and decoder.stats.messages > 0)


def build_corpus(work: Path, capture_seed: int) -> Corpus:
    """Simulate the incident and read the good records out of it and out of the fixtures."""
    cap = work / "capture"
    write_capture(cap, 16, Fault.LINK_DOWN, capture_seed, watchdog_s=120)
    with (cap / "cables.csv").open(newline="") as fh:
        cable_rows = list(csv.reader(fh))[1:]
    with (cap / "hosts.csv").open(newline="") as fh:
        host_rows = list(csv.reader(fh))[1:]
    # NetBox names may hold slashes, blanks and commas (quoted); a few such rows join in.
    for i in range(1, 25):
        ends = [f"rack {i}, core-{i}", "dcim.interface", f"Ethernet1/{i}/1"]
        cable_rows.append(
            [*ends, f"border/{i}", "dcim.interface", f"et-0/0/{i}:2", "smf", "planned"]
        )
    host_rows += [[f"gpu node {i}", f"mlx5_{i}", f"fd00::{i:x}/64"] for i in range(1, 9)]
    chunks: list[GnmiChunk] = []
    for path in sorted((cap / "gnmi").iterdir()):
        lines = path.read_bytes().split(b"\n")
        for line in lines[:: max(1, len(lines) // 400)]:
            if line.strip():
                chunks.append(GnmiChunk(line, path.name))
    for path in sorted((FIXTURES / "gnmi").iterdir()):
        if path.suffix in (".json", ".jsonl", ".txt"):
            chunks += [
                GnmiChunk(c, path.name) for c in gnmi_chunks(path.read_bytes()) if _good_chunk(c)
            ]
    logs: list[LogFile] = []
    for job in sorted((cap / "logs").iterdir()):
        logs += [LogFile(f"{job.name}/{p.name}", _lines(p)) for p in sorted(job.iterdir())]
    logs += [
        LogFile(f"fixture/{p.name}", _lines(p))
        for p in sorted((FIXTURES / "logs" / "real").iterdir())
        if p.is_file()
    ]
    truth = json.loads((cap / "truth.json").read_text()) if (cap / "truth.json").exists() else {}
    mini = _mini(cap, cable_rows, host_rows, truth)
    first = min(int(orjson.loads(c.text)["timestamp"]) for c in chunks[:5])
    return Corpus(cable_rows, host_rows, chunks, logs, mini, time.gmtime(first / 1e9).tm_year)


_PORT = re.compile(rb'"source":"([^":]+)[^"]*".*?\[(?:name|interface-id)=([^\]]+)\]')


def _port_of(line: bytes) -> tuple[str, str] | None:
    m = _PORT.search(line)
    return None if m is None else (m.group(1).decode(), m.group(2).decode())


def _mini(
    cap: Path, cable_rows: list[list[str]], host_rows: list[list[str]], truth: dict[str, Any]
) -> MiniCapture:
    job = sorted((cap / "logs").iterdir())[0]
    files = sorted(p for p in job.iterdir() if p.suffix == ".log")[:2]
    hosts = {p.stem for p in files}
    leaves = {r[3] for r in cable_rows if r[0] in hosts}
    rows = [r for r in cable_rows if r[0] in hosts]
    for leaf in sorted(leaves):  # two uplinks a leaf: a small fabric replays in milliseconds
        rows += [r for r in cable_rows if r[0] == leaf and "spine" in r[3]][:2]
    devices = {r[3] for r in rows} | leaves
    gnmi: dict[str, list[bytes]] = {}
    for path in sorted((cap / "gnmi").iterdir()):
        if path.stem in devices:
            lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
            ports = {p for r in rows for p in ((r[0], r[2]), (r[3], r[5]))}
            gnmi[path.name] = [ln for ln in lines if _port_of(ln) in ports][:400]
    logs = {job.name: [LogFile(p.name, _lines(p)) for p in files]}
    return MiniCapture(rows, [r for r in host_rows if r[0] in hosts], gnmi, logs)
