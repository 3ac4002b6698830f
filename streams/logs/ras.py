"""The text report of NCCL's RAS client (`ncclras`, NCCL 2.24+) when it is captured with the job.

Read as NCCL's documentation (user guide, "RAS") and its client (src/ras/client_support.cc)
describe it:

- the communicators' summary table: one row per group of alike communicators, whose `Status`
  (INIT, RUNNING, FINALIZE, ABORT, NOCOMM) and `Errors` (OK, or any of INCOMPLETE, ERROR,
  MISMATCH) columns say how the group stands;
- sections under `Errors` and `Warnings`: `INCOMPLETE` and `DEAD` name the processes missing,
  `#0-0 (hash) INCOMPLETE` the ranks, and `#0-0 (hash) MISMATCH` the ranks out of step: under
  `Communicator ranks have different AllGather operation counts` (2.26+, per operation; before,
  `collective` operation counts), `N ranks have launched up to operation X` lines group the
  ranks by count, the most common first, and the rank lines after a group's line are its
  members, listed only when the group is an outlier. A member's standing is its count against
  the most common one: ahead or behind.

- the monitor mode of 2.29+ (`ncclras -m`): one stamped line per event as it happens. Its
  default (lifecycle) events are `PEER_NEW` and `PEER_DEAD`; a peer declared dead (after 60 s
  without word on the RAS network) is read, named as `Process N on node H managing GPU G`
  when RAS knew the process, else by its address (`10.0.0.5<41233>`). A peer joining says
  nothing wrong and is not read.

Rank and process lines only mean "missing", "dead" or "out of step" under the section header
that precedes them, so the section is tracked until the blank line that ends it (a MISMATCH
section goes on after a blank line with its next operation's block), and every reported line
carries its header in `detail`. The summary table, whose rows have a shape nothing else has,
is read until the next section or table, through blank and other lines.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, LogOrigin, RasReport

# "INCOMPLETE" / "DEAD" / "TIMEOUT" / "#0-0 (fa93daea854b060b) MISMATCH" per communicator.
_SECTION = re.compile(r"^(?:(INCOMPLETE|DEAD|TIMEOUT)|(#\d+-\d+ \([0-9a-fA-F]+\)) ([A-Z,]+))$")
_NAMED = re.compile(r"^(?:Rank \d+ .*?-- |Process \d+ on node )")
_NODE = re.compile(r"on node (\S+)")
_RANK = re.compile(r"^Rank (\d+) (.*?)-- ")
_TABLE_HEAD = re.compile(r"^Group +Comms +Nodes +Ranks +Ranks +Ranks +Status +Errors$")
_ROW = re.compile(
    r"^(\d+) +(\d+) +(\d+) +(\d+(?:-\d+)?) +(\d+) +(\d+) +([A-Z]+) +([A-Z]+(?:,[A-Z]+)*)$"
)
_OPERATION = re.compile(r"^Communicator ranks have different (\w+) operation counts$")
_STATUSES = "Communicator ranks have different status"
_GROUP = re.compile(
    r"^(\d+) ranks have (?:launched up to operation (\d+)|(not launched any operations)"
    r"|status ([A-Z]+))$"
)
_RANK_COUNT = re.compile(r"has (?:launched up to operation (\d+)|(not launched any operations))")
_RANK_STATUS = re.compile(r"has status ([A-Z]+)")
_MISSING = re.compile(r"^The missing rank: (\d+)$")
# What the monitor mode prints after the stamp (the stamp itself is read by the Clock).
_PEER_DEAD = re.compile(r"^PEER_DEAD: (.*?)\s*$")
_ADDRESS = re.compile(r"^(\S+?)<\d+>")


class RasRules:
    """RasReport for every summary row, and every rank or process a section names."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        self._section: str | None = None  # the header line of the open section
        self._table = False
        self._after_blank = False
        # In a MISMATCH section: the operation compared ("" for status), the most common
        # group's count or status, and the group whose members are being listed.
        self._operation = ""
        self._majority: int | str | None = None
        self._group: int | str | None = None

    def snapshot(self) -> dict[str, Any]:
        """The open section and table, so a report cut by a restart is still read under it."""
        return {
            "section": self._section,
            "table": self._table,
            "after_blank": self._after_blank,
            "operation": self._operation,
            "majority": self._majority,
            "group": self._group,
        }

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the state written by `snapshot` (of parsers saved before the table and
        groups were read, only the section)."""
        section = snap["section"]
        self._section = None if section is None else str(section)
        self._table = bool(snap.get("table", False))
        self._after_blank = bool(snap.get("after_blank", False))
        self._operation = str(snap.get("operation", ""))
        self._majority = snap.get("majority")
        self._group = snap.get("group")

    def handle(self, text: str, ts_ns: int, line_no: int) -> list[JobFact]:
        """Track the table and section headers; report the summary rows and the rank and
        process lines inside a section."""
        line = text.strip()
        if not line:
            # The summary table stays open: a blank line a shipper or a CRLF file adds, or a
            # line of another writer, must not cost the rows after it. Its rows' strict shape
            # keeps other text out, and a section header or a new table closes it.
            self._after_blank = self._section is not None
            return []
        if self._after_blank:
            self._after_blank = False
            mismatch = self._section is not None and self._section.endswith("MISMATCH")
            if not (mismatch and line.startswith("Communicator ranks have")):
                self._section = None
        first = line[0]
        if first == "P" and (dead := _PEER_DEAD.match(line)) is not None:
            return [self._peer_dead(line, dead.group(1), ts_ns, line_no)]
        if first == "G" and _TABLE_HEAD.match(line):
            self._table, self._section = True, None
            return []
        if self._table and first.isdigit():
            return self._row(line, ts_ns, line_no)
        if first in "#DIT" and _SECTION.match(line):
            self._table, self._section = False, line
            self._operation, self._majority, self._group = "", None, None
            return []
        if self._section is None:
            return []
        if first == "C":
            self._in_block(line)
            return []
        if first.isdigit():
            self._member_group(line)
            return []
        if first == "T" and (missing := _MISSING.match(line)) is not None:
            return [self._report(line, None, ts_ns, line_no, rank=int(missing.group(1)))]
        if first not in "RP" or not _NAMED.match(line):
            return []
        node = _NODE.search(line)
        host = node.group(1) if node else None
        rank = _RANK.match(line)
        if rank is None:  # a process line
            return [self._report(line, host, ts_ns, line_no)]
        return [self._rank_line(line, host, int(rank.group(1)), rank.group(2), ts_ns, line_no)]

    def _row(self, line: str, ts_ns: int, line_no: int) -> list[JobFact]:
        m = _ROW.match(line)
        if m is None:
            return []
        group, comms, nodes, per_node, per_comm, _, status, errors = m.groups()
        detail = (
            f"RAS summary group #{group}: {comms} communicator(s) of {per_comm} ranks on "
            f"{nodes} node(s) ({per_node} per node): status {status}, errors {errors}"
        )
        origin = LogOrigin(self._source, line_no)
        return [
            RasReport(
                ts_ns,
                self._job_id,
                None,
                detail,
                origin,
                section="summary",
                comm=f"#{group}",
                status=status,
                errors=errors,
            )
        ]

    def _peer_dead(self, line: str, peer: str, ts_ns: int, line_no: int) -> RasReport:
        """A monitor-mode `PEER_DEAD` event: the process (or, unknown to RAS, the address) the
        job's RAS network gave up on, on its own line and outside any report section."""
        node = _NODE.search(peer)
        address = _ADDRESS.match(peer)
        host = node.group(1) if node else (address.group(1) if address else None)
        origin = LogOrigin(self._source, line_no)
        return RasReport(ts_ns, self._job_id, host, line, origin, section="PEER_DEAD")

    def _in_block(self, line: str) -> None:
        """`Communicator ranks have different ...`: a new comparison starts."""
        if (op := _OPERATION.match(line)) is not None:
            self._operation = op.group(1)
        elif line == _STATUSES:
            self._operation = ""
        else:
            return
        self._majority, self._group = None, None

    def _member_group(self, line: str) -> None:
        """`N ranks have launched up to operation X` (or a status): the group whose members
        are listed next; the first is the most common."""
        m = _GROUP.match(line)
        if m is None:
            return
        _, count, none_launched, status = m.groups()
        value: int | str = status if status else (0 if none_launched else int(count))
        self._group = value
        if self._majority is None:
            self._majority = value

    def _rank_line(
        self, line: str, host: str | None, rank: int, middle: str, ts_ns: int, line_no: int
    ) -> RasReport:
        value: int | str | None = self._group
        # A group of one names its count or status on the rank's own line.
        if (count := _RANK_COUNT.search(middle)) is not None:
            value = 0 if count.group(2) else int(count.group(1))
        elif (status := _RANK_STATUS.search(middle)) is not None:
            value = status.group(1)
        if not self._section or not self._section.endswith("MISMATCH"):
            return self._report(line, host, ts_ns, line_no, rank=rank)
        if isinstance(value, str):
            return self._report(line, host, ts_ns, line_no, rank=rank, status=value)
        majority = self._majority if isinstance(self._majority, int) else None
        standing = ""
        if value is not None and majority is not None and value != majority:
            standing = "ahead" if value > majority else "behind"
        return self._report(
            line,
            host,
            ts_ns,
            line_no,
            rank=rank,
            operation=self._operation,
            op_count=value,
            peer_count=majority,
            standing=standing,
        )

    def _report(
        self, line: str, host: str | None, ts_ns: int, line_no: int, **fields: Any
    ) -> RasReport:
        header = self._section or ""
        m = _SECTION.match(header)
        plain, comm, errors = m.groups() if m is not None else ("", "", "")
        return RasReport(
            ts_ns,
            self._job_id,
            host,
            f"{header}: {line}",
            LogOrigin(self._source, line_no),
            section=plain or errors or "",
            comm=comm or "",
            **fields,
        )
