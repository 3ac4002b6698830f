"""A job's environment printed into its own log (`env`, `printenv`, a Python `os.environ`,
torchrun's listing: `envlines`) places the job when no scheduler output and no NCCL INFO line
does.

Two readings:

- a node list (SLURM_JOB_NODELIST, SLURM_NODELIST, SLURM_STEP_NODELIST) names every host of
  the job or step wherever a whole env line prints it: a job-wide placement at once;
- a dump, the run of env lines one process printed, names the node that process ran on with
  its GPU indexes and place in the job, and MASTER_ADDR's host (`envplace`): a placement of
  that node, once the dump has ended.

A dump ends at its writer's next line that is not one of it (writers told apart by srun's,
torchrun's or mpirun's task labels), at a name it already holds (a second process's dump
printed straight after the first), at a dict's closing brace, at lines missing from the input,
and when the input pauses (`LogParser.pause`: the end of a file, or of a log shipper's
message, which it sends when the file goes quiet). A lone `NAME=value` line is no dump: it
takes two variables to tell an environment from a trainer's line.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from typing import Any

from ..records import JobFact, JobPlacement, LogOrigin, PlacedHost
from ..scheduler.hostlist import HostlistError, expand
from .common import Malformed, Where, remember
from .envlines import EnvLine, env_line, may_be_env, split_label
from .envplace import READ, placed_hosts

NODELISTS = frozenset({"SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_STEP_NODELIST"})
#: Placements remembered per file (by digest), so ranks printing the same list or node place
#: it once: a job has one list, a file of several steps a few, a node's file its node.
MAX_SEEN = 64
#: Dumps open at once (one per writer): past it the oldest is read as it stands. With
#: MAX_NAMES and MAX_VALUE it keeps a parser's snapshot under a Kafka message's 1 MB.
MAX_OPEN = 16
#: Names one dump may hold (an environment holds a few hundred); past it, a new dump begins.
MAX_NAMES = 512
#: Longest value kept: what is read is a host name, a number or a short list of them.
MAX_VALUE = 256


@dataclass(slots=True)
class _Dump:
    """One process's env lines read so far: the values of the variables read, and of every
    name a checksum (a name printed again begins another process's dump)."""

    line_no: int
    ts_ns: int
    file_host: str
    torchrun: bool = False
    names: set[int] = field(default_factory=set)
    values: dict[str, str] = field(default_factory=dict)
    slurm: bool = False  # a SLURM* variable is set
    kubernetes: bool = False  # a KUBERNETES_* variable is set

    def add(self, pairs: tuple[tuple[str, str], ...]) -> None:
        for printed, value in pairs:
            name = self._name(printed)
            self.names.add(zlib.crc32(name.encode()))
            self.slurm |= name.startswith("SLURM")
            self.kubernetes |= name.startswith("KUBERNETES_")
            if name in READ and len(value) <= MAX_VALUE:
                self.values[name] = value

    def holds_any(self, pairs: tuple[tuple[str, str], ...]) -> bool:
        return any(zlib.crc32(self._name(p).encode()) in self.names for p, _ in pairs)

    def _name(self, printed: str) -> str:
        """torchrun lists its workers' variables in lowercase (`master_addr=`)."""
        return printed.upper() if self.torchrun else printed

    def snapshot(self) -> dict[str, Any]:
        return {
            "line": self.line_no,
            "ts": self.ts_ns,
            "host": self.file_host,
            "torchrun": self.torchrun,
            "names": sorted(self.names),
            "values": self.values,
            "slurm": self.slurm,
            "kubernetes": self.kubernetes,
        }

    @classmethod
    def load(cls, snap: dict[str, Any]) -> _Dump:
        return cls(
            int(snap["line"]),
            int(snap["ts"]),
            str(snap["host"]),
            bool(snap["torchrun"]),
            {int(n) for n in snap["names"]},
            {str(k): str(v) for k, v in snap["values"].items()},
            bool(snap["slurm"]),
            bool(snap["kubernetes"]),
        )


class EnvRules:
    """The placements a file's env lines give: node lists at once, dumps when they end."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        self._seen: dict[str, None] = {}
        self._open: dict[str, _Dump] = {}  # by writer, the oldest first
        self._last_line = 0  # the last line read while a dump was open

    def snapshot(self) -> dict[str, Any]:
        return {
            "seen": list(self._seen),
            "open": [[w, d.snapshot()] for w, d in self._open.items()],
            "last": self._last_line,
        }

    def load(self, snap: dict[str, Any]) -> None:
        self._seen = dict.fromkeys(str(v) for v in snap["seen"])
        # Absent from parsers saved before dumps were read.
        self._open = {str(w): _Dump.load(d) for w, d in snap.get("open", [])}
        self._last_line = int(snap.get("last", 0))

    def read(self, body: str, ts_ns: int, line_no: int, where: Where, out: list[JobFact]) -> bool:
        """Whether `body` (a line after its stamp) is an env line; if so it is read, and what
        it gives (a node list's placement, the placement of a dump it ends) is added to
        `out`. Raises Malformed after that for a node list that cannot be expanded."""
        if not may_be_env(body):
            return False
        writer, text = split_label(body)
        line = env_line(text, continuing=writer in self._open)
        if line is None:
            return False
        self._lost_lines(line_no, out)
        dump = self._open.get(writer)
        if dump is not None and (line.opens or dump.holds_any(line.pairs)):
            out.extend(self._close(writer))
            dump = None
        if dump is None or len(dump.names) >= MAX_NAMES:
            out.extend(self._close(writer))
            dump = self._start(writer, _Dump(line_no, ts_ns, where.host, line.torchrun), out)
        dump.add(line.pairs)
        if line.closes:
            out.extend(self._close(writer))
        self._last_line = line_no
        out.extend(self._node_lists(line, ts_ns, line_no))
        return True

    def interrupt(self, body: str, line_no: int, out: list[JobFact]) -> None:
        """A line that is no env line ends its writer's dump; `out` gets its placement."""
        if self._open:
            self._lost_lines(line_no, out)
            out.extend(self._close(split_label(body)[0]))
            self._last_line = line_no

    def pause(self) -> list[JobFact]:
        """The input pauses: every open dump is read as it stands."""
        return [p for writer in list(self._open) for p in self._close(writer)]

    def _lost_lines(self, line_no: int, out: list[JobFact]) -> None:
        """Lines missing before `line_no` (lost upstream) may have ended any dump."""
        if self._open and line_no > self._last_line + 1:
            out.extend(self.pause())

    def _start(self, writer: str, dump: _Dump, out: list[JobFact]) -> _Dump:
        if len(self._open) >= MAX_OPEN:
            out.extend(self._close(next(iter(self._open))))
        self._open[writer] = dump
        return dump

    def _close(self, writer: str) -> list[JobFact]:
        dump = self._open.pop(writer, None)
        if dump is None or len(dump.names) < 2:
            return []
        node, hosts = placed_hosts(
            dump.values, slurm=dump.slurm, kubernetes=dump.kubernetes, file_host=dump.file_host
        )
        if not hosts:
            return []
        return self._placement(f"{node}|{hosts!r}", node, hosts, dump.ts_ns, dump.line_no)

    def _node_lists(self, line: EnvLine, ts_ns: int, line_no: int) -> list[JobFact]:
        out: list[JobFact] = []
        for name, value in line.pairs:
            if name not in NODELISTS or not value or any(c.isspace() for c in value):
                continue
            try:
                names = expand(value)
            except HostlistError as exc:
                raise Malformed("env-nodelist", f"{name}: {exc}") from None
            hosts = tuple(PlacedHost(n) for n in names)
            out.extend(self._placement(value, "", hosts, ts_ns, line_no))
        return out

    def _placement(
        self, key: str, host: str, hosts: tuple[PlacedHost, ...], ts_ns: int, line_no: int
    ) -> list[JobFact]:
        """A placement, unless this file already gave the same (`key`)."""
        digest = hashlib.blake2b(key.encode(), digest_size=12).hexdigest()
        if digest in self._seen:
            return []
        remember(self._seen, digest, None, MAX_SEEN)
        origin = LogOrigin(self._source, line_no)
        return [JobPlacement(ts_ns, self._job_id, host, hosts, "env", "", None, None, origin)]
