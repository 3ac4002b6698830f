"""NVIDIA driver Xid lines from a host's kernel log, when that log is part of the capture.

`dmesg` without `-T` stamps lines with seconds since boot, which cannot be placed in wall time
on their own; such lines take the time of the last timed line, like any untimed line.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, LogOrigin, XidEvent
from .common import Malformed, Where

_XID = re.compile(
    r"NVRM: Xid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): "
    r"(\d+)(?:,\s*(.*))?"
)
# After a syslog or journal stamp: "host kernel: ..." or (busybox) "host kern.info kernel: ...".
_SYSLOG_HOST = re.compile(r"\s*([\w.\-]+) (?:[a-z]+\.[a-z]+ )?kernel: ")


class KernelRules:
    """Xid events; the host comes from the syslog prefix, else from the file's NCCL lines."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source

    def snapshot(self) -> dict[str, Any]:
        """Nothing: Xid lines stand alone. Kept so every rule has a slot in a parser snapshot."""
        return {}

    def load(self, snap: dict[str, Any]) -> None:
        """Nothing to take over (see `snapshot`)."""

    def handle(
        self, text: str, lead_end: int, ts_ns: int, line_no: int, where: Where
    ) -> list[JobFact]:
        """One XidEvent per `NVRM: Xid (PCI:...)` line; Malformed if PCI id or code is unread."""
        m = _XID.search(text)
        if m is None:
            raise Malformed(
                "kernel-xid", "'NVRM: Xid' line without a readable '(PCI:dddd:bb:dd): code'"
            )
        pci, code, detail = m.groups()
        host = where.host
        if lead_end:
            h = _SYSLOG_HOST.match(text, lead_end)
            if h is not None:
                host = h.group(1)
        origin = LogOrigin(self._source, line_no)
        return [
            XidEvent(
                ts_ns, self._job_id, host, pci.lower(), int(code), (detail or "").strip(), origin
            )
        ]
