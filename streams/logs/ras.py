"""The text report of NCCL's RAS client (`ncclras`, NCCL 2.24+) when it is captured with the job.

Rank and process lines only mean "missing", "dead" or "out of step" under the section header
that precedes them, so the section is tracked until the blank line that ends it, and every
reported line carries its header in `detail`.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, LogOrigin, RasReport

# "INCOMPLETE" / "DEAD" under Errors, "#0-0 (fa93daea854b060b) MISMATCH" per communicator.
_SECTION = re.compile(r"^(?:INCOMPLETE|DEAD|#\d+-\d+ \([0-9a-fA-F]+\) [A-Z,]+)$")
_NAMED = re.compile(r"^(?:Rank \d+ .*?-- |Process \d+ on node )")
_NODE = re.compile(r"on node (\S+)")


class RasRules:
    """RasReport for every rank or process a RAS report section names."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        self._section: str | None = None

    def snapshot(self) -> dict[str, Any]:
        """The open section header, so a report cut by a restart is still read under it."""
        return {"section": self._section}

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the state written by `snapshot`."""
        section = snap["section"]
        self._section = None if section is None else str(section)

    def handle(self, text: str, ts_ns: int, line_no: int) -> list[JobFact]:
        """Track section headers; report the rank/process lines inside a section."""
        line = text.strip()
        if not line:
            self._section = None
            return []
        if line[0] in "#ID" and _SECTION.match(line):
            self._section = line
            return []
        if self._section is None or line[0] not in "RP" or not _NAMED.match(line):
            return []
        node = _NODE.search(line)
        origin = LogOrigin(self._source, line_no)
        detail = f"{self._section}: {line}"
        return [RasReport(ts_ns, self._job_id, node.group(1) if node else None, detail, origin)]
