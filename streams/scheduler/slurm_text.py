"""`scontrol show job [-d]` as Slurm prints it: records of `Key=Value` words, one job each,
separated by blank lines.

The placement is NodeList (a hostlist expression); with `-d`, lines of the form
`Nodes=gb-n[001-002] CPU_IDs=0-63 Mem=512000 GRES=gpu:8(IDX:0-7)` give the GPU indexes of
each group of nodes. scontrol prints times in the local time of wherever it ran, without a
zone: the caller says which zone that was.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from ..records import JobPlacement, LogOrigin, PlacedHost, in_time_range, valid_job_id
from .common import SLURM_ENDED, SLURM_WAITING, PlacementRead, RecordError, slurm_placement
from .gres import gpu_indexes
from .hostlist import HostlistError, expand

# A word that starts a `Key=Value` pair; the words after it that start none belong to its
# value, so `TRES=cpu=8,gres/gpu=8` and `Command=/bin/train --x 1` stay whole.
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9_:/]*)=")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\Z")
_UNSET = frozenset({"", "(null)", "None", "N/A", "Unknown"})


_JOB_LINE = re.compile(r"^[ \t]*JobId=", re.MULTILINE)


def looks_like(text: str) -> bool:
    """Any line starting a job record (a damaged first record must not hide the others)."""
    return _JOB_LINE.search(text) is not None


def read(source: str, text: str, tz: tzinfo, into: PlacementRead) -> None:
    """Add the placements of every job record of `text` to `into`; a record that cannot be
    used becomes a dead letter, the others are kept."""
    for line_no, lines in records(text):
        into.take(
            source,
            line_no,
            lambda: _placement(source, line_no, lines, tz),  # noqa: B023 - called at once
            lambda: "\n".join(lines),  # noqa: B023
        )


def records(text: str) -> list[tuple[int, list[str]]]:
    """Each record's lines and the 1-based line it starts on: a record starts at a `JobId=`
    line or after a blank line (what comes before the first JobId is a record too, refused).
    The chunks of the live path are cut here too (`chunks.split`), so both read alike."""
    out: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for i, raw in enumerate(text.splitlines(), 1):
        # A byte-order mark opens each file an editor saved: files joined with `cat` carry
        # one at the start of a line inside the output.
        line = raw.lstrip("\ufeff")
        if line.lstrip().startswith("JobId=") or not line.strip():
            if current:
                out.append((start, current))
            current = []
        if line.strip():
            if not current:
                start = i
            current.append(line)
    if current:
        out.append((start, current))
    return out


def _placement(source: str, line_no: int, lines: list[str], tz: tzinfo) -> JobPlacement | None:
    fields: dict[str, str] = {}
    node_groups: list[dict[str, str]] = []
    for line in lines:
        pairs = _pairs(line)
        # Slurm prints a few lines that are no Key=Value words (24.05+: `NtasksPerTRES:0`):
        # nothing the placement needs, so they are passed over.
        if "Nodes" in pairs and "NodeList" not in pairs:  # a `-d` line of one node group
            node_groups.append(pairs)
        else:
            fields.update(pairs)
    job_id = fields.get("JobId", "")
    if not valid_job_id(job_id):
        raise RecordError(f"JobId {job_id!r} is not a job id")
    state = fields.get("JobState", "")
    node_list = fields.get("NodeList", "")
    if state in SLURM_WAITING or node_list in _UNSET:
        return None
    try:
        names = expand(node_list)
    except HostlistError as exc:
        raise RecordError(f"job {job_id}: NodeList {exc}") from None
    gpus = _gpus_by_host(job_id, node_groups)
    start = _time(fields.get("StartTime", ""), tz, job_id)
    end = _time(fields.get("EndTime", ""), tz, job_id) if state in SLURM_ENDED else None
    hosts = tuple(
        PlacedHost(n, gpus[n], len(gpus[n])) if n in gpus else PlacedHost(n) for n in names
    )
    return slurm_placement(job_id, hosts, state, start, end, LogOrigin(source, line_no))


def _pairs(line: str) -> dict[str, str]:
    """The `Key=Value` pairs of one line, in one pass over its words (a regex that looks
    ahead for the next key backtracks quadratically over a long value)."""
    pairs: dict[str, str] = {}
    key = None
    for word in line.split():
        m = _KEY.match(word)
        if m is not None:
            key = m.group(1)
            pairs[key] = word[m.end() :]
        elif key is not None:
            pairs[key] += " " + word
    return pairs


def _gpus_by_host(job_id: str, groups: list[dict[str, str]]) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for group in groups:
        gres = group.get("GRES", group.get("GRES_IDX", ""))
        indexes = gpu_indexes(gres)
        if indexes is None:
            raise RecordError(f"job {job_id}: GPU indexes unreadable in {gres!r}")
        if not indexes:
            continue
        try:
            for name in expand(group["Nodes"]):
                out[name] = indexes
        except HostlistError as exc:
            raise RecordError(f"job {job_id}: Nodes {exc}") from None
    return out


def _time(text: str, tz: tzinfo, job_id: str) -> int | None:
    if text in _UNSET:
        return None
    if not _TIME.match(text):
        raise RecordError(f"job {job_id}: time {text!r} is not YYYY-MM-DDTHH:MM:SS")
    try:
        ns = int(datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()) * 1_000_000_000
    except (ValueError, OverflowError):
        raise RecordError(f"job {job_id}: time {text!r} is no date") from None
    if not in_time_range(ns):
        raise RecordError(f"job {job_id}: time {text!r} is outside 1970-2106")
    return ns
