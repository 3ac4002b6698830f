"""NVIDIA driver Xid lines and mlx5 NIC lines from a host's kernel log, when that log is part of
the capture.

Xid lines carry more than a code: the process that ran on the GPU (`pid=`, `name=`), the Xid
an error follows from (`caused by previous Xid 149`), and for NVLink Xids (144-150 on GB200
and later) the severity and the link. A GPU that falls off the bus is reported twice by
recent drivers (the Xid 79 line and `GPU 0000:3b:00.0: GPU has fallen off the bus.`), and by
some only as the driver's multi-line message without any Xid (`The NVIDIA GPU 0000:b3:00.0
/ (PCI ID: ...) installed in this system has / fallen off the bus ...`): each loss is one
Xid 79 fact, however many of these lines say it.

mlx5 lines tell the host's side of a link: `mlx5_core 0000:5e:00.0 ens1f0np0: Link down` when
the NIC lost its carrier (whichever end failed), the RDMA core's `mlx5_5: Port: 1 Link
ACTIVE|INIT|DOWN` with the port, and the driver's health poller's `device's health
compromised` or a firmware fatal error when the NIC itself failed.

`dmesg` without `-T` stamps lines with seconds since boot, which cannot be placed in wall time
on their own; such lines take the time of the last timed line, like any untimed line.
"""

from __future__ import annotations

import re
from typing import Any

from ..records import JobFact, LogOrigin, NicEvent, XidEvent
from .common import Malformed, Where, remember

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): "
    r"(\d+)(?:,\s*(.*))?"
)
_PID = re.compile(r"\bpid=(?:(\d+)|'?<unknown>'?)")
_NAME = re.compile(r"\bname=([^,\s]+)")
_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")
#: Xids of NVLink 5 (GB200/GB300 NVL72): `NETIR_LINK_EVT Fatal XC0 i0 Link 00 (...)`, and
#: before R575 `... Fatal XC 1 i 2 Link 01 [...]`.
NVLINK_XIDS = range(144, 151)
_SEVERITY = re.compile(r"\b(non-?fatal|fatal)\b", re.IGNORECASE)
_NVLINK_LINK = re.compile(r"\bLink (\d+)\b")
# "GPU 0000:2b:00.0: GPU has fallen off the bus." (beside Xid 79), "GPU at 0000:01:00.0 has
# fallen off the bus." (old drivers) and the one-line "The NVIDIA GPU 0000:05:00.0 installed in
# this system has fallen off the bus ...".
_GPU_PCI = re.compile(
    r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?"
    r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\b"
)
_FALLEN = "fallen off the bus"
#: The driver's lines after `The NVIDIA GPU <pci>` within which its `fallen off the bus` may
#: still come (other writers' lines between them are not counted).
FALLEN_CONTINUATION_LINES = 3
#: A GPU lost again within this long of its last loss is the same loss said again (the Xid 79
#: and the driver's own line come in the same second; a GPU back on the bus needs a reset).
SAME_LOSS_NS = 300 * 1_000_000_000
#: GPUs whose last loss is remembered, the oldest forgotten first: a host has at most eight.
MAX_LOST_GPUS = 64
_LOST = 79
# "mlx5_core 0000:5e:00.0 ens1f0np0: Link down" or "mlx5_core 0000:5e:00.0: poll_health:...".
_MLX5 = re.compile(
    r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
    r"(?: (?P<netdev>[\w.\-]+))?: (?P<msg>.*)"
)
# The RDMA core's port state (drivers/infiniband/core/cache.c): "Port: 1 Link ACTIVE".
_PORT = re.compile(r"^Port: (\d+) Link ([A-Z_]+)")
_PORT_STATES = {"ACTIVE": "up", "DOWN": "down", "INIT": "init", "ARMED": "init"}
# Not "internal error": the driver prints it for one failed firmware command, not a dead NIC.
_FAILED = ("health compromised", "fatal error", "firmware fatal")
_LINK = re.compile(r"\blink (down|up)\b")
# After a syslog or journal stamp: "host kernel: ..." or (busybox) "host kern.info kernel: ...".
_SYSLOG_HOST = re.compile(r"\s*([\w.\-]+) (?:[a-z]+\.[a-z]+ )?kernel: ")


class KernelRules:
    """Xid events; the host comes from the syslog prefix, else from the file's NCCL lines.

    Keeps two small tables: the GPU whose multi-line "fallen off the bus" message is under
    way, and when each GPU was last lost, so one loss printed several ways is one fact.
    """

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        # (pci, driver lines since) of `The NVIDIA GPU <pci>` whose "fallen off the bus" is
        # still to come.
        self._pending: tuple[str, int] | None = None
        self._lost: dict[str, int] = {}  # pci -> time of its last loss, in recency order

    def snapshot(self) -> dict[str, Any]:
        """The message under way and the recent losses, as plain JSON."""
        return {"pending": self._pending, "lost": [[pci, ts] for pci, ts in self._lost.items()]}

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the state written by `snapshot` (absent from parsers saved before it)."""
        pending = snap.get("pending")
        self._pending = None if pending is None else (str(pending[0]), int(pending[1]))
        for pci, ts in snap.get("lost", []):
            remember(self._lost, str(pci), int(ts), MAX_LOST_GPUS)

    def handle_nic(
        self, text: str, lead_end: int, ts_ns: int, line_no: int, where: Where
    ) -> list[JobFact]:
        """A NicEvent for an mlx5 link or port state change or device failure; [] for the
        driver's other chatter (probe, firmware version, module events)."""
        m = _MLX5.search(text)
        if m is None:
            return []
        msg = m.group("msg").strip()
        port = None
        state: str | None
        if (p := _PORT.match(msg)) is not None:
            port = int(p.group(1))
            state = _PORT_STATES.get(p.group(2))
            if state is None:
                raise Malformed("kernel-port", f"unknown InfiniBand port state {p.group(2)!r}")
        else:
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
                port,
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
        """One XidEvent per `NVRM: Xid (PCI:...)` line (none for a GPU already lost moments
        ago); Malformed if PCI id or code is unread."""
        self._pending = None
        m = _XID.search(text)
        if m is None:
            raise Malformed(
                "kernel-xid", "'NVRM: Xid' line without a readable '(PCI:dddd:bb:dd): code'"
            )
        pci, code, detail = m.groups()
        pci, xid, detail = pci.lower(), int(code), (detail or "").strip()
        if xid == _LOST and self._lost_again(pci, ts_ns):
            return []
        pid = _PID.search(detail)
        name = _NAME.search(detail)
        cause = _CAUSED_BY.search(detail)
        severity, link = "", None
        if xid in NVLINK_XIDS:
            sev = _SEVERITY.search(detail)
            severity = "" if sev is None else sev.group(1).lower().replace("-", "")
            lm = _NVLINK_LINK.search(detail)
            link = None if lm is None else int(lm.group(1))
        return [
            XidEvent(
                ts_ns,
                self._job_id,
                self._host(text, lead_end, where),
                pci,
                xid,
                detail,
                LogOrigin(self._source, line_no),
                pid=int(pid.group(1)) if pid is not None and pid.group(1) else None,
                process="" if name is None or name.group(1) == "<unknown>" else name.group(1),
                caused_by=None if cause is None else int(cause.group(1)),
                severity=severity,
                link=link,
            )
        ]

    def handle_nvrm(
        self, text: str, lead_end: int, ts_ns: int, line_no: int, where: Where
    ) -> list[JobFact]:
        """The driver's other lines: a GPU fallen off the bus without an Xid line is an Xid 79
        (its message may span lines, the GPU named on the first); [] for everything else."""
        gpu = _GPU_PCI.search(text)
        if _FALLEN not in text:
            if gpu is not None and "The NVIDIA GPU" in text:
                self._pending = (gpu.group(1).lower(), 0)
            elif self._pending is not None:
                # Only the driver's own lines count: a journal or a shared file interleaves
                # other writers' lines with the message, which does not end it.
                pci, said = self._pending
                self._pending = (pci, said + 1) if said + 1 < FALLEN_CONTINUATION_LINES else None
            return []
        if gpu is not None:
            pci = gpu.group(1).lower()
        elif self._pending is not None:
            pci = self._pending[0]
        else:
            raise Malformed("kernel-fallen", "'fallen off the bus' without the GPU's PCI address")
        self._pending = None
        if self._lost_again(pci, ts_ns):
            return []
        at = text.find("NVRM:")
        return [
            XidEvent(
                ts_ns,
                self._job_id,
                self._host(text, lead_end, where),
                pci,
                _LOST,
                f"GPU has fallen off the bus (no Xid line): {text[at:].strip()}",
                LogOrigin(self._source, line_no),
            )
        ]

    def _lost_again(self, pci: str, ts_ns: int) -> bool:
        """Whether `pci` was lost within SAME_LOSS_NS (the same loss, printed again); records
        this loss either way. An undated line (0) is the same loss as any other undated one."""
        last = self._lost.get(pci)
        remember(self._lost, pci, ts_ns, MAX_LOST_GPUS)
        return last is not None and abs(ts_ns - last) < SAME_LOSS_NS
