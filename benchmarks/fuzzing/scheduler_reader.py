"""The `read_placements` check: real scheduler outputs, a few good records of one format in one
file with damaged records spliced between them; and `hostlist.expand` on expressions alone.

Good records are the real outputs in tests/fixtures/scheduler/: each `scontrol show job -d`
record of the *.txt files (a file of its own, or a line of the `-o` file), each element of the
`jobs` list of the squeue, sacct and slurmrestd *.json files, and each pod of the kubectl
files, YAML documents or a JSON pod List (written here as `kubectl get pods -o json` prints a
pod List, or as YAML documents). An input is one file: scontrol records separated by a blank
line, a `jobs` list in one fixture's envelope (meta, errors, ...), a pod List, or pod documents
separated by `---`. Damaged records are good ones of that format with bytes, lines, `Key=Value`
fields or JSON values made wrong (hostlist bombs, bad times, job ids, states, GRES, pod fields,
deep nesting, huge numbers, invalid UTF-8, truncation, ...) and junk. The file may be dressed
in a way that must not change its meaning (CRLF, JSON indentation, a leading `---`); scontrol's
times are read in a zone (UTC, +05:30, -08:00) the expected reading shares.

* crash: any exception out of `read_placements` (or, on an expression alone, out of `expand`
  other than its HostlistError), or an input over the time budget (harness.py).
* lost good record: a good record read alone (a file holding only it, in the same envelope
  and zone) gives placements, dead letters and a waiting count. In the input it is lost unless
  exactly those placements come out at its place (its first line for scontrol, its 1-based
  position in the list for JSON; the placements' origin names that place), with its dead
  letters' reasons there, and the input's waiting count is at least the good records' own.
  YAML passes over documents that are no pod and numbers the pods, so there its placements
  and reasons are compared as multisets, without the place. The one exception is a damaged
  *file*: damage that leaves a JSON input no longer JSON to the standard library (RFC 8259:
  UTF-8, no NaN; nesting and numbers unlimited) or a YAML input no longer YAML to PyYAML's
  safe loader leaves no records to keep, and what it must give is a dead letter. JSON past
  orjson's own limits (nesting over 1,024 levels, a number past a double, a lone surrogate
  escape) is still JSON, and an input of scontrol records is always text: a file refused as a
  whole then loses its good records, under a signature that names the refusal.
* a dead letter without a reason (empty or blank), and an expression `expand` turns into
  more than MAX_HOSTS names, count as lost too.
* chunked read: the input cut into one chunk per job (`split`, as the live path publishes
  it), each chunk read at its place, must give exactly the whole input's placements; a
  difference is lost, an exception out of `split` a crash.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

import yaml

from railtrace.streams.records import JobPlacement, LogOrigin
from railtrace.streams.scheduler import (
    HostlistError,
    PlacementRead,
    expand,
    read_placements,
    split,
)
from railtrace.streams.scheduler.hostlist import MAX_HOSTS

from .cases import Case, Item, Result, crash_of
from .corpus import FIXTURES
from .garbage_values import (
    BAD_GPU_COUNTS,
    BAD_HOSTLISTS,
    BAD_JOB_IDS,
    BAD_NODE_NAMES,
    BAD_RANKS,
    BAD_SHAPES,
    FIELD_VALUES,
    HUGE_HOSTLISTS,
    LONG_RUNS,
    SCONTROL_FIELDS,
    YAML_ODD,
    YAML_TIMES,
)
from .mutate import junk, mutate_bytes, random_json
from .mutate_json import DEPTHS, Nodes, _nodes, _set, j_drop_key, j_huge_int, j_value, j_wrong_type

#: Formats by share of inputs: scontrol text, a Slurm `jobs` list, a pod List, pod YAML, and
#: hostlist expressions alone.
FORMATS = ("text",) * 8 + ("slurm",) * 5 + ("pods",) * 3 + ("yaml",) * 2 + ("hostlist",) * 2
SOURCES = {"text": "scheduler/fuzz.txt", "slurm": "scheduler/fuzz.json"}
SOURCES |= {"pods": "scheduler/pods.json", "yaml": "scheduler/pods.yaml"}
SUFFIXES = {"text": ".txt", "slurm": ".json", "pods": ".json", "yaml": ".yaml"}
SUFFIXES["hostlist"] = ".hostlist.txt"
POD_LIST = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
ZONES = (0, 0, 330, -480)  # minutes east of UTC
_DEEP = "zzdeepzz"  # a value JSON and YAML both write as is, swapped for deep nesting
JOB_LABELS = ("training.kubeflow.org/job-name", "batch.kubernetes.io/job-name", "job-name")


@dataclass(frozen=True)
class Record:
    """One good record: where it came from, its bytes (a scontrol record, a YAML document),
    and for JSON its value and the fixture envelope it came in."""

    name: str
    text: bytes
    value: Any = None
    envelope: int = -1

    @functools.cached_property
    def line(self) -> bytes:
        """The value as JSON in one line (json.loads of it is a fresh copy to damage)."""
        return json.dumps(self.value, ensure_ascii=False, default=str).encode()


@dataclass(frozen=True)
class Alone:
    """What one good record gives read by itself (placements without their origin)."""

    placements: tuple[JobPlacement, ...]
    reasons: tuple[str, ...]
    waiting: int


def scontrol_records(text: str) -> list[str]:
    """The records of a `scontrol show job` file: a blank line ends one, a `JobId=` line
    starts one (the `-o` form prints one a line)."""
    out: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if (not line.strip() or line.startswith("JobId=")) and current:
            out.append("\n".join(current))
            current = []
        if line.strip():
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


class Fixtures:
    """The good records of tests/fixtures/scheduler/, by format."""

    def __init__(self, folder: Path = FIXTURES / "scheduler") -> None:
        self.text: list[Record] = []
        self.slurm: list[Record] = []
        self.pods: list[Record] = []
        self.envelopes: list[dict[str, Any]] = []
        for path in sorted(folder.iterdir()):
            if path.name.startswith("nvidia-smi") or path.suffix not in (".txt", ".json", ".yaml"):
                continue
            if path.suffix == ".txt":
                for n, rec in enumerate(scontrol_records(path.read_text()), 1):
                    self.text.append(Record(f"{path.name}#{n}", rec.encode()))
            elif path.suffix == ".json" and "items" in (doc := json.loads(path.read_bytes())):
                # A kubectl pod List: each pod as `-o yaml` would print it, since a pod's
                # text is what the YAML inputs are made of.
                for n, pod in enumerate(doc["items"], 1):
                    text = yaml.safe_dump(pod, sort_keys=False)
                    self.pods.append(Record(f"{path.name}#{n}", text.encode(), pod))
            elif path.suffix == ".json":
                jobs = doc.pop("jobs")
                self.envelopes.append(doc)
                for n, job in enumerate(jobs, 1):
                    self.slurm.append(Record(f"{path.name}#{n}", b"", job, len(self.envelopes) - 1))
            else:
                docs = [d for d in re.split(r"(?m)^---[ \t]*\n", path.read_text()) if d.strip()]
                for n, doc in enumerate(docs, 1):
                    value = yaml.safe_load(doc)
                    self.pods.append(Record(f"{path.name}#{n}", doc.encode(), value))

    def count(self) -> int:
        return len(self.text) + len(self.slurm) + len(self.pods)

    def family(self, fmt: str) -> list[Record]:
        return {"text": self.text, "slurm": self.slurm}.get(fmt, self.pods)

    def hostlists(self) -> list[bytes]:
        """The hostlist expressions the real records hold (NodeList, Nodes, `nodes`)."""
        found = {m.group(1) for r in self.text for m in _NODES.finditer(r.text)}
        found |= {r.value["nodes"].encode() for r in self.slurm if r.value.get("nodes")}
        return sorted(found)


_NODES = re.compile(rb"(?:NodeList|Nodes|SchedNodeList)=(\S+)")


@functools.cache
def fixtures() -> Fixtures:
    return Fixtures()


def zone(minutes: int) -> tzinfo:
    return UTC if minutes == 0 else timezone(timedelta(minutes=minutes))


@functools.lru_cache(maxsize=4096)
def read_alone(fmt: str, data: bytes, minutes: int) -> Alone:
    """What one good record gives read by itself."""
    got = read_placements(SOURCES[fmt], data, zone(minutes))
    bare = LogOrigin("", 0)
    return Alone(
        tuple(dataclasses.replace(p, origin=bare) for p in got.placements),
        tuple(d.reason for d in got.dead_letters),
        got.waiting,
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _any_int(digits: str) -> Any:
    # int() refuses over 4,300 digits; RFC 8259 does not.
    return int(digits) if len(digits) < 4300 else float("inf")


def json_of(data: bytes) -> tuple[bool, Any]:
    """Whether `data` is JSON by RFC 8259 as the standard library reads it (UTF-8, no NaN or
    Infinity, nesting as deep as the input goes, integers of any length), and its value."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 12_000))
    try:
        return True, json.loads(
            data.decode("utf-8"), parse_constant=_reject_constant, parse_int=_any_int
        )
    except (ValueError, RecursionError):
        return False, None
    finally:
        sys.setrecursionlimit(limit)


def yaml_ok(data: bytes) -> bool:
    """Whether PyYAML's safe loader reads every document of `data`. Nesting deeper than
    Python's recursion is no YAML error, and counts as read."""
    try:
        list(yaml.safe_load_all(data.decode("utf-8")))
    except RecursionError:
        return True
    except Exception:  # anything else it raises means it does not read it
        return False
    return True


#: PyYAML recurses out at about 300 levels, and scans a deep flow collection in quadratic
#: time: YAML's nesting stops a little past that.
YAML_DEPTHS = (50, 100, 250, 300, 320, 400)


def _deep_text(rng: random.Random, as_yaml: bool) -> tuple[str, int]:
    depth = rng.choice(YAML_DEPTHS if as_yaml else DEPTHS)
    if rng.random() < 0.5:
        return '{"a": ' * depth + "1" + "}" * depth, depth
    return "[" * depth + "]" * depth, depth


def dump(rng: random.Random, value: Any, how: str, indent: int | None, as_yaml: bool) -> Item:
    """A damaged value written as JSON (or as a YAML document), deep nesting swapped in."""
    try:
        if as_yaml:
            body = yaml.safe_dump(value, sort_keys=False, allow_unicode=True)
        else:
            body = json.dumps(value, indent=indent, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError, yaml.YAMLError):
        body, how = "null", how + "+unwritable"
    marker = _DEEP if as_yaml else json.dumps(_DEEP)
    if marker in body:
        deep, depth = _deep_text(rng, as_yaml)
        body, how = body.replace(marker, deep), f"{how}-{depth}"
    return Item(body.encode("utf-8", "surrogatepass"), how=how)


# -- damage to JSON values: the generic ops of mutate_json, and the fields the readers use --

HOSTLIST_FIELDS = frozenset({"nodes", "NodeList", "Nodes", "SchedNodeList"})


def odd_hostlist(rng: random.Random) -> str:
    """A bomb or a malformed expression, or one put together (at MAX_HOSTS now and then)."""
    roll = rng.random()
    if roll < 0.01:
        return rng.choice(HUGE_HOSTLISTS)
    return rng.choice(BAD_HOSTLISTS) if roll < 0.6 else made_hostlist(rng)


def odd_value(rng: random.Random, key: str, table: dict[str, tuple[Any, ...]]) -> Any:
    if key in HOSTLIST_FIELDS and (not table[key] or rng.random() < 0.9):
        return odd_hostlist(rng)
    return copy.deepcopy(rng.choice(table[key]))


def s_field(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    """One field a reader uses set to an odd value (any other node if the record has none)."""
    paths = [p for p, _n in nodes if p and p[-1] in FIELD_VALUES]
    if not paths:
        return j_wrong_type(rng, value, nodes)
    path = rng.choice(paths)
    return _set(value, path, odd_value(rng, path[-1], FIELD_VALUES))


def s_deep(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    """A node (a field the readers use, half the time) replaced by deep nesting."""
    paths = [p for p, _n in nodes if p and p[-1] in FIELD_VALUES]
    path = rng.choice(paths) if paths and rng.random() < 0.5 else rng.choice(nodes)[0]
    return _set(value, path, _DEEP)


def s_pod_parts(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    """What the pod fixtures lack, added with odd values: a node, a GPU limit, a rank in the
    env, a job label, container statuses."""
    if not isinstance(value, dict):
        return value
    spec = value.setdefault("spec", {})
    if not isinstance(spec, dict):
        return value
    if not isinstance(spec.get("containers"), list) or not spec["containers"]:
        spec["containers"] = [{"name": "trainer"}]
    container = spec["containers"][0]
    if not isinstance(container, dict):
        return value
    part = rng.randrange(5)
    if part == 0:
        spec["nodeName"] = rng.choice(BAD_NODE_NAMES)
    elif part == 1:
        limits = container.setdefault("resources", {}).setdefault("limits", {})
        if isinstance(limits, dict):
            limits["nvidia.com/gpu"] = rng.choice(BAD_GPU_COUNTS)
    elif part == 2:
        key = rng.choice(("PET_NODE_RANK", "GROUP_RANK", "NODE_RANK", "RANK"))
        env = container.setdefault("env", [])
        if isinstance(env, list):
            env.append({"name": key, "value": rng.choice(BAD_RANKS)})
    elif part == 3:
        labels = value.setdefault("metadata", {}).setdefault("labels", {})
        if isinstance(labels, dict):
            labels[rng.choice(JOB_LABELS)] = rng.choice(BAD_JOB_IDS)
    else:
        status = value.setdefault("status", {})
        if isinstance(status, dict):
            status["phase"] = rng.choice(("Succeeded", "Failed", "Running"))
            status["containerStatuses"] = copy.deepcopy(rng.choice(BAD_SHAPES))
    return value


VALUE_OPS: tuple[Callable[[random.Random, Any, Nodes], Any], ...] = (
    j_wrong_type,
    j_value,
    j_drop_key,
    j_huge_int,
    s_deep,
    s_field,
    s_field,
    s_field,
    s_pod_parts,
)


# -- damage to scontrol records and YAML documents: lines and `Key=Value` fields --

_PAIR = re.compile(rb"(?:(?<=\s)|^)([A-Za-z][A-Za-z0-9_:/]*)=(\S*)", re.M)


def t_lines(rng: random.Random, data: bytes, pool: list[bytes]) -> tuple[bytes, str]:
    """A line of the record dropped, repeated, swapped, taken from another record, joined to
    the next or split at a blank."""
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    op = rng.randrange(6)
    if op == 0 and len(lines) > 1:
        del lines[i]
        return b"\n".join(lines), "line:drop"
    if op == 1:
        lines[i : i + 1] = [lines[i]] * rng.choice((2, 10, 100))
        return b"\n".join(lines), "line:repeat"
    if op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines), "line:swap"
    if op == 3:
        lines.insert(i, rng.choice(rng.choice(pool).split(b"\n")))
        return b"\n".join(lines), "line:foreign"
    if op == 4 and i + 1 < len(lines):
        lines[i : i + 2] = [lines[i] + b" " + lines[i + 1].lstrip()]
        return b"\n".join(lines), "line:join"
    cut = lines[i].rfind(b" ")
    lines[i : i + 1] = [lines[i][: max(cut, 0)], b"   " + lines[i][cut + 1 :]]
    return b"\n".join(lines), "line:split"


def t_field(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A `Key=Value` field scontrol's reader uses set to an odd value, dropped, given twice,
    or a `-d` detail line added; once in a while a very long word or run of blanks."""
    if rng.random() < 0.004:
        run = rng.choice(LONG_RUNS).encode()
        at = rng.randint(0, len(data))
        return data[:at] + run + data[at:], "field:long-run"
    fields = [m for m in _PAIR.finditer(data) if m.group(1).decode() in SCONTROL_FIELDS]
    op = rng.randrange(5)
    if op == 0 or not fields:
        nodes = odd_hostlist(rng)
        gres = rng.choice(SCONTROL_FIELDS["GRES"])
        line = f"     Nodes={nodes} CPU_IDs=0-63 Mem=0 GRES={gres}".encode()
        return data + b"\n" + line * rng.choice((1, 1, 1, 10)), "field:detail-line"
    m = rng.choice(fields)
    key = m.group(1).decode()
    if op == 1:
        return data[: m.start()] + data[m.end() :], f"field:drop-{key}"
    value = str(odd_value(rng, key, SCONTROL_FIELDS)).encode("utf-8", "surrogatepass")
    if op == 2:
        pair = m.group(0) + b" " + m.group(1) + b"=" + value
        return data[: m.start()] + pair + data[m.end() :], f"field:twice-{key}"
    return data[: m.start(2)] + value + data[m.end(2) :], f"field:{key}"


def y_time(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A quoted time of a YAML pod written unquoted and odd, as YAML resolves it to a date."""
    times = list(re.finditer(rb"'(\d{4}-\d\d-\d\dT[^'\n]*)'", data))
    if not times:
        return data + b"\nstartTime: " + rng.choice(YAML_TIMES).encode(), "yaml:time"
    m = rng.choice(times)
    return data[: m.start()] + rng.choice(YAML_TIMES).encode() + data[m.end() :], "yaml:time"


def made_hostlist(rng: random.Random) -> str:
    """A hostlist expression put together from names, bracket groups, widths and ranges."""
    items = []
    for _ in range(rng.choice((1, 1, 2, 3, 50))):
        name = rng.choice(("n", "gb-n", "r", "a", "", "node-", "x.y"))
        for _g in range(rng.choice((0, 1, 1, 2, 3, 6))):
            ranges = []
            for _r in range(rng.choice((1, 1, 2, 5, 100))):
                width = rng.choice((1, 1, 2, 3, 8, 25))
                lo = rng.randrange(10 ** min(width, 6))
                hi = lo + rng.choice((0, 1, 9, 99, 999, 99_999, 10**7))
                ranges.append(f"{lo:0{width}d}" + (f"-{hi}" if hi != lo else ""))
            name += "[" + ",".join(ranges) + "]" + rng.choice(("", "", "-ib", "x"))
        items.append(name)
    return rng.choice((",", " ", ", ", "\t")).join(items)


class SchedulerReader:
    """read_placements over a file of good scheduler records with damaged records between
    them, and hostlist.expand over expressions alone."""

    name = "scheduler"

    def __init__(self) -> None:
        self.fx = fixtures()
        self.texts = [r.text for r in self.fx.text]
        self.pod_texts = [r.text for r in self.fx.pods]
        self.hostlists = self.fx.hostlists()
        self.written: dict[tuple[str, int, int | None], bytes] = {}

    # -- inputs --

    def generate(self, rng: random.Random, index: int) -> Case:
        fmt = rng.choice(FORMATS)
        if fmt == "hostlist":
            return self._hostlist_case(rng, index)
        family = self.fx.family(fmt)
        ctx: dict[str, Any] = {
            "format": fmt,
            "tz": rng.choice(ZONES),
            "eol": rng.choice(("\n",) * 5 + ("\r\n",)),
            "indent": rng.choice((None, None, 2, 4)),
            "lead": rng.choice(("", "---\n")),
        }
        # A YAML pod takes PyYAML milliseconds: fewer of them.
        k = rng.randint(1, 3 if fmt == "yaml" else 6)
        chosen = [rng.randrange(len(family)) for _ in range(k)]
        ctx["envelope"] = family[chosen[0]].envelope
        items = [Item(self._good_bytes(fmt, g, ctx["indent"]), good=g) for g in chosen]
        for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3, 4))):
            items.insert(rng.randint(0, len(items)), self._damaged(rng, fmt, ctx))
        return Case(self.name, index, items, ctx)

    def _good_bytes(self, fmt: str, good: int, indent: int | None) -> bytes:
        rec = self.fx.family(fmt)[good]
        if fmt in ("text", "yaml"):
            return rec.text
        key = (fmt, good, indent)
        if key not in self.written:
            value = json.loads(rec.line)
            self.written[key] = json.dumps(value, indent=indent, ensure_ascii=False).encode()
        return self.written[key]

    def _damaged(self, rng: random.Random, fmt: str, ctx: dict[str, Any]) -> Item:
        if fmt == "text":
            return self._damaged_text(rng)
        if fmt == "yaml" and rng.random() < 0.5:
            return self._damaged_yaml(rng)
        roll = rng.random()
        if roll < 0.1:
            return self._junk_value(rng, ctx)
        family = self.fx.family(fmt)
        base = rng.choice(family).line
        if roll < 0.25 and fmt != "yaml":
            pool = [r.line for r in rng.sample(family, min(3, len(family)))]
            data, how = mutate_bytes(rng, base, pool)
            return Item(data, how=how)
        value = json.loads(base)
        op = rng.choice(VALUE_OPS)
        value = op(rng, value, list(_nodes(value)))
        how = "json:" + op.__name__[2:].replace("_", "-")
        return dump(rng, value, how, ctx["indent"], fmt == "yaml")

    def _junk_value(self, rng: random.Random, ctx: dict[str, Any]) -> Item:
        roll = rng.random()
        if roll < 0.3:
            data, how = junk(rng)
            return Item(data, how=how)
        if roll < 0.5:
            return dump(rng, _DEEP, "junk:deep", None, ctx["format"] == "yaml")
        return dump(rng, random_json(rng, 3), "junk:value", ctx["indent"], ctx["format"] == "yaml")

    def _damaged_text(self, rng: random.Random) -> Item:
        roll = rng.random()
        if roll < 0.08:
            data, how = junk(rng)
            return Item(data, how=how)
        base = rng.choice(self.texts)
        if roll < 0.4:
            data, how = mutate_bytes(rng, base, self.texts)
        elif roll < 0.6:
            data, how = t_lines(rng, base, self.texts)
        else:
            data, how = t_field(rng, base)
        return Item(data, how=how)

    def _damaged_yaml(self, rng: random.Random) -> Item:
        roll = rng.random()
        if roll < 0.2:
            return Item(rng.choice(YAML_ODD).encode(), how="yaml:odd")
        base = rng.choice(self.pod_texts)
        if roll < 0.6:
            data, how = mutate_bytes(rng, base, self.pod_texts)
        elif roll < 0.8:
            data, how = t_lines(rng, base, self.pod_texts)
        else:
            data, how = y_time(rng, base)
        return Item(data, how=how)

    def _hostlist_case(self, rng: random.Random, index: int) -> Case:
        roll = rng.random()
        if roll < 0.3:
            data, how = odd_hostlist(rng).encode("utf-8", "surrogatepass"), "table"
        elif roll < 0.6:
            data, how = made_hostlist(rng).encode(), "made"
        else:
            data, how = mutate_bytes(rng, rng.choice(self.hostlists), self.hostlists)
        return Case(self.name, index, [Item(data, how=f"hostlist:{how}")], {"format": "hostlist"})

    # -- the file an input is --

    def assemble(self, case: Case) -> tuple[bytes, list[int]]:
        """The file's bytes, and each item's place: its first line (scontrol), its 1-based
        position in the list (JSON) or among the documents (YAML)."""
        fmt, ctx = case.ctx["format"], case.ctx
        eol = str(ctx.get("eol", "\n")).encode()
        if fmt == "hostlist":
            return case.items[0].data, [0]
        if fmt in ("slurm", "pods"):
            if fmt == "slurm":
                head = {**self.fx.envelopes[ctx["envelope"]], "jobs": "\x00records\x00"}
            else:
                head = {**POD_LIST, "items": "\x00records\x00"}
            text = json.dumps(head, indent=ctx["indent"], ensure_ascii=False).encode()
            before, after = text.split(json.dumps("\x00records\x00").encode())
            sep = b",\n" if ctx["indent"] else b","
            data = before + b"[" + sep.join(i.data for i in case.items) + b"]" + after + b"\n"
            return data.replace(b"\n", eol), list(range(1, len(case.items) + 1))
        if fmt == "yaml":
            docs = [i.data if i.data.endswith(b"\n") else i.data + b"\n" for i in case.items]
            data = str(ctx["lead"]).encode() + b"---\n".join(docs)
            return data.replace(b"\n", eol), list(range(1, len(docs) + 1))
        pieces = [i.data.replace(b"\n", eol) for i in case.items]
        data = (eol * 2).join(pieces) + eol
        places: list[int] = []
        at = 0
        for piece in pieces:
            prefix = data[:at].decode("utf-8", "surrogateescape")
            places.append(len(prefix.splitlines()) + 1)
            at += len(piece) + 2 * len(eol)
        return data, places

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + SUFFIXES[case.ctx["format"]])
        out.write_bytes(self.assemble(case)[0])
        return out

    def alone(self, case: Case, item: Item) -> Alone:
        fmt = case.ctx["format"]
        rec = self.fx.family(fmt)[item.good]
        if fmt == "text":
            data = rec.text + b"\n"
        elif fmt == "yaml":
            data = rec.text
        elif fmt == "slurm":
            envelope = self.fx.envelopes[case.ctx["envelope"]]
            data = json.dumps({**envelope, "jobs": [rec.value]}).encode()
        else:
            data = json.dumps({**POD_LIST, "items": [rec.value]}).encode()
        return read_alone(fmt, data, case.ctx["tz"])

    # -- the check --

    def run(self, case: Case) -> Result:
        fmt = case.ctx["format"]
        if fmt == "hostlist":
            return self._run_hostlist(case)
        res = Result()
        data, places = self.assemble(case)
        try:
            got = read_placements(SOURCES[fmt], data, zone(case.ctx["tz"]))
            expected = {n: self.alone(case, i) for n, i in enumerate(case.items) if i.good >= 0}
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
            return res
        res.dead = len(got.dead_letters)
        res.checked = len(expected)
        for d in got.dead_letters:
            if not isinstance(d.reason, str) or not d.reason.strip():
                res.lost.append(
                    f"dead letter without a reason | {fmt} | line {d.line_no}: {d.raw[:80]!r}"
                )
        if fmt == "yaml":
            lost = self._compare_counts(case, got, expected)
        else:
            lost = self._compare_places(case, got, expected, places)
        if lost and fmt != "text":
            lost = self._unless_damaged_file(case, data, got, expected, lost)
        res.lost += lost
        try:
            res.lost += self._compare_chunks(fmt, data, case.ctx["tz"], got)
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
        return res

    def _compare_chunks(self, fmt: str, data: bytes, tz: int, got: PlacementRead) -> list[str]:
        """The live path's reading: the input cut into one chunk per job (`split`), each read
        alone at its place, must give the whole input's placements, in order."""
        chunked = [
            p
            for c in split(data)
            for p in read_placements(SOURCES[fmt], c.data, zone(tz), c.first).placements
        ]
        if chunked == got.placements:
            return []
        return [
            f"chunked read | {fmt} | {len(chunked)} placements for the whole file's "
            f"{len(got.placements)}: {_brief(chunked)} / {_brief(got.placements)}"
        ]

    def _unless_damaged_file(
        self,
        case: Case,
        data: bytes,
        got: PlacementRead,
        expected: dict[int, Alone],
        lost: list[str],
    ) -> list[str]:
        """`lost`, unless the damage left no JSON (or YAML) to keep records of: then only a
        file without a dead letter fails. A damaged JSON record that is no JSON value by
        itself, in a file that still is JSON, leaves the list other than built: the good
        records are then found in it by value."""
        no_dead = [] if got.dead_letters else ["damaged file | gave no dead letter | "]
        if case.ctx["format"] == "yaml":
            # The reader loads with PyYAML's safe loader, aliases refused (yamldoc.py): what it
            # says of a file it refused as not readable YAML is what yaml_ok would find, in as
            # long again (seconds, for a long line), except for an alias. So yaml_ok is asked
            # only about that, and about a file it refused before trying it as YAML.
            whole = next((d.reason for d in got.dead_letters if d.line_no == 0), "")
            if whole.startswith("not readable YAML:") and "alias at line" not in whole:
                return lost if whole.endswith("nested too deeply") else no_dead
            return lost if yaml_ok(data) else no_dead
        if all(json_of(i.data)[0] for i in case.items if i.good < 0):
            return lost  # every damaged record is one JSON value: the list is as built
        ok, doc = json_of(data)
        if not ok:
            return no_dead
        return self._compare_by_value(case, doc, got, expected)

    def _compare_places(
        self, case: Case, got: PlacementRead, expected: dict[int, Alone], places: list[int]
    ) -> list[str]:
        source = SOURCES[case.ctx["format"]]
        at: defaultdict[int, list[JobPlacement]] = defaultdict(list)
        dead_at: defaultdict[int, list[str]] = defaultdict(list)
        for p in got.placements:
            at[p.origin.line_no].append(p)
        for d in got.dead_letters:
            dead_at[d.line_no].append(d.reason)
        lost: list[str] = []
        for n, want in expected.items():
            place = places[n]
            want_p = [
                dataclasses.replace(p, origin=LogOrigin(source, place)) for p in want.placements
            ]
            here = at.get(place, [])
            rec = self.fx.family(case.ctx["format"])[case.items[n].good]
            if here != want_p:
                cause = _cause(got, dead_at.get(place, []), here, want_p)
                lost.append(
                    f"{cause} | {rec.name} | placement at {place}: expected "
                    f"{_brief(want_p)}, got {_brief(here)}; dead letters {_reasons(got)}"
                )
            elif sorted(dead_at.get(place, [])) != sorted(want.reasons):
                cause = _cause(got, [], [], [], "its dead letters differ")
                lost.append(
                    f"{cause} | {rec.name} | dead letters at {place}: expected "
                    f"{list(want.reasons)}, got {dead_at.get(place, [])}"
                )
        waiting = sum(w.waiting for w in expected.values())
        if got.waiting < waiting:
            lost.append(
                f"{_cause(got, [], [], [], 'fewer waiting jobs')} | waiting jobs | "
                f"{got.waiting} waiting, the good records alone give {waiting}"
            )
        return lost

    def _compare_counts(
        self, case: Case, got: PlacementRead, expected: dict[int, Alone]
    ) -> list[str]:
        bare = LogOrigin("", 0)
        have = Counter(dataclasses.replace(p, origin=bare) for p in got.placements)
        reasons = Counter(d.reason for d in got.dead_letters)
        lost: list[str] = []
        for n, want in expected.items():
            rec = self.fx.pods[case.items[n].good]
            for p in want.placements:
                if have[p] > 0:
                    have[p] -= 1
                    continue
                cause = _cause(got, [], [], [p], "not among the placements")
                lost.append(
                    f"{cause} | {rec.name} | placement {_brief([p])}; dead letters {_reasons(got)}"
                )
            for r in want.reasons:
                if reasons[r] > 0:
                    reasons[r] -= 1
                    continue
                cause = _cause(got, [], [], [], "not among the dead letters")
                lost.append(f"{cause} | {rec.name} | dead letter {r!r} missing")
        return lost

    def _compare_by_value(
        self, case: Case, doc: Any, got: PlacementRead, expected: dict[int, Alone]
    ) -> list[str]:
        """The good records found by value in the list of a file that is still JSON (one the
        damage swallowed is not untouched, and not checked)."""
        key = "jobs" if case.ctx["format"] == "slurm" else "items"
        listed = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(listed, list):
            return []
        family = self.fx.family(case.ctx["format"])
        places = [0] * len(case.items)
        found: dict[int, Alone] = {}
        start = 0
        for n, want in expected.items():
            value = family[case.items[n].good].value
            k = next((k for k in range(start, len(listed)) if listed[k] == value), None)
            if k is not None:
                places[n], start, found[n] = k + 1, k + 1, want
        return self._compare_places(case, got, found, places)

    def _run_hostlist(self, case: Case) -> Result:
        res = Result(checked=1)
        expression = case.items[0].data.decode("utf-8", "replace")
        try:
            hosts = expand(expression)
        except HostlistError:
            res.dead = 1
            return res
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
            return res
        if len(hosts) > MAX_HOSTS:
            res.lost.append(
                f"expand past MAX_HOSTS | {len(hosts)} names | from {expression[:120]!r}"
            )
        return res


def _norm(reason: str) -> str:
    """A reason without what varies between inputs (numbers, quoted values, positions)."""
    reason = re.sub(r":? line \d+ column \d+ \(char \d+\)", "", reason)
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", reason)
    reason = reason.split(" (", 1)[0] if not reason.startswith("(") else reason
    return re.sub(r"(?<![A-Za-z]-)\d+", "N", reason)[:90]


def _cause(
    got: PlacementRead,
    dead_here: list[str],
    here: list[JobPlacement],
    want: list[JobPlacement],
    none: str = "nothing at its place",
) -> str:
    """Why a good record's placement went missing, in words that group the failures."""
    # A file-wide dead letter beside placements is a notice (bytes replaced, ...); without
    # any placement the last one is the refusal.
    whole = [d for d in got.dead_letters if d.line_no == 0]
    if whole and not got.placements:
        return "file refused as a whole: " + _norm(whole[-1].reason)
    if dead_here:
        return "refused: " + _norm(dead_here[0])
    if not here:
        return none
    if len(here) != len(want):
        return f"{len(here)} placements for {len(want)}"
    fields = {
        f.name
        for a, b in zip(here, want, strict=True)
        for f in dataclasses.fields(JobPlacement)
        if getattr(a, f.name) != getattr(b, f.name)
    }
    return "a different placement: " + ",".join(sorted(fields))


def _brief(placements: list[JobPlacement]) -> str:
    return repr(
        [
            (p.job_id, p.state, [h.name for h in p.hosts[:3]], len(p.hosts), p.origin.line_no)
            for p in placements
        ]
    )[:300]


def _reasons(got: PlacementRead) -> list[str]:
    return [d.reason[:120] for d in got.dead_letters[:3]]
