"""Which host a log file belongs to when its lines do not say: from the file's own name.

A kernel log read with `dmesg -T`, or a trainer's stdout without NCCL lines, names no host in
its lines; the capture (`logs/<job>/hgx-su01-02/dmesg.log`, `logs/<job>/hgx-su01-02.dmesg`,
`dmesg-hgx-su01-02.txt`) or the log shipper (`logs/<job>/<node>:<path>`) names it in the
source. Only names of the fabric's hosts count, and a source naming two hosts names none: a
node verdict must never be given to a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PARTS = re.compile(r"[/:\\]")
_CUTS = re.compile(r"[-_.]")


class SourceHosts:
    """The fabric's host names, to find the one a log source names."""

    def __init__(self, hosts: Iterable[str]) -> None:
        self._hosts = frozenset(hosts)

    def of(self, source: str) -> str:
        """The one host `source` names in a path part, or in a run of a part's pieces cut at
        `-`, `_` or `.`; "" when it names none or several."""
        found: set[str] = set()
        for part in _PARTS.split(source):
            if not part:
                continue
            if part in self._hosts:
                found.add(part)
                continue
            cuts = [0] + [m.start() for m in _CUTS.finditer(part)] + [len(part)]
            for i, start in enumerate(cuts[:-1]):
                begin = start if i == 0 else start + 1
                for end in cuts[i + 1 :]:
                    if part[begin:end] in self._hosts:
                        found.add(part[begin:end])
        return found.pop() if len(found) == 1 else ""
