"""NVIDIA driver Xid lines and mlx5 NIC lines from a host's kernel log, when that log is part of
the capture.

mlx5 lines tell the host's side of a link: `mlx5_core 0000:5e:00.0 ens1f0np0: Link down` when
the NIC lost its carrier (whichever end failed), and the driver's health poller's
`device's health compromised` or a firmware fatal error when the NIC itself failed.

`dmesg` without `-T` stamps lines with seconds since boot, which cannot be placed in wall time
on their own; such lines take the time of the last timed line, like any untimed line.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, LogOrigin, NicEvent, XidEvent
from .common import Malformed, Where

_XID = re.compile(
    r"NVRM: Xid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): "
    r"(\d+)(?:,\s*(.*))?"
)
# "mlx5_core 0000:5e:00.0 ens1f0np0: Link down" or "mlx5_core 0000:5e:00.0: poll_health:...".
_MLX5 = re.compile(
    r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
    r"(?: (?P<netdev>[\w.\-]+))?: (?P<msg>.*)"
)
# Not "internal error": the driver prints it for one failed firmware command, not a dead NIC.
_FAILED = ("health compromised", "fatal error", "firmware fatal")
_LINK = re.compile(r"\blink (down|up)\b")
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

    def handle_nic(
        self, text: str, lead_end: int, ts_ns: int, line_no: int, where: Where
    ) -> list[JobFact]:
        """A NicEvent for an mlx5 link state change or device failure; [] for the driver's
        other chatter (probe, firmware version, module events)."""
        m = _MLX5.search(text)
        if m is None:
            return []
        msg = m.group("msg").strip()
        lowered = msg.lower()
        link = _LINK.search(lowered)
        if any(mark in lowered for mark in _FAILED):
            state = "failed"
        elif link is not None:
            state = link.group(1)
        else:
            return []
        return [
            NicEvent(
                ts_ns,
                self._job_id,
                self._host(text, lead_end, where),
                m.group("pci").lower(),
                m.group("netdev") or "",
                state,
                msg,
                LogOrigin(self._source, line_no),
            )
        ]

    def _host(self, text: str, lead_end: int, where: Where) -> str:
        if lead_end:
            h = _SYSLOG_HOST.match(text, lead_end)
            if h is not None:
                return h.group(1)
        return where.host

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
        host = self._host(text, lead_end, where)
        origin = LogOrigin(self._source, line_no)
        return [
            XidEvent(
                ts_ns, self._job_id, host, pci.lower(), int(code), (detail or "").strip(), origin
            )
        ]
