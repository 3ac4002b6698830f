"""How the site keeps a job's files: each line a world writes, at its true time, and the stamp,
`srun --label` tag and NCCL_DEBUG level the site's logging puts on it or leaves out.

Apart from what the jobs print (`joblogs`, `trainerlogs`) because every writer's lines are
kept alike, in the style the incident drew (`stamp`, `srun_label`, `nccl_debug`).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from railtrace.world.incident import NS, Incident


@dataclass(slots=True)
class LogFile:
    """One file of a job's folder: its lines at their true times, stamped only when rendered."""

    name: str
    #: (true time, host, rank or None, text)
    lines: list[tuple[int, str, int | None, str]] = field(default_factory=list)


class Printer:
    """One incident's formats: the zone, the stamp style, the NCCL level."""

    def __init__(self, inc: Incident, zone: tzinfo, rng: random.Random) -> None:
        self.inc = inc
        self.zone = zone
        self.rng = rng
        self.dims = inc.dims

    def local(self, t: int) -> datetime:
        return datetime.fromtimestamp(t / NS, tz=self.zone)

    def prefix(self, t: int, host: str) -> str:
        """What the site's log keeping puts before a line written at true time t."""
        style = self.dims.stamp
        if style == "utc-shipper":
            late = t + int(self.rng.uniform(0, self.dims.shipper_delay_s) * NS)
            stamp = datetime.fromtimestamp(late / NS, tz=UTC)
            return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z "
        d = self.local(t)
        if style == "local-naive":
            return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{d.microsecond // 1000:03d} "
        if style == "local-offset":
            return d.isoformat(timespec="milliseconds") + " "
        pid = 4000 + zlib.crc32(host.encode()) % 3000
        return d.strftime("%b %e %H:%M:%S") + f" {host} python[{pid}]: "


def _printed(text: str, nccl: str) -> bool:
    if " NCCL INFO " in text:
        return nccl == "INFO"
    if " NCCL WARN " in text:
        return nccl in ("INFO", "WARN")
    return True


def render(p: Printer, f: LogFile, label: bool, nccl: str) -> str:
    """The file's text as the site keeps it: lines in time order, each behind the site's stamp
    (and its task number with `label`), NCCL's only at the levels that print them; a kernel
    file as `dmesg -T` wrote it."""
    rows = sorted(f.lines, key=lambda r: r[0])
    out = []
    kernel = f.name.endswith(".dmesg")
    for t, host, rank, text in rows:
        if not _printed(text, nccl):
            continue
        if kernel:
            out.append(text)
            continue
        tagged = f"{rank:4d}: {text}" if label and rank is not None else text
        out.append(p.prefix(t, host) + tagged)
    return "\n".join(out) + ("\n" if out else "")
