"""Pieces every rule module shares: the malformed-line signal, address clean-up, bounded state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Malformed(Exception):  # noqa: N818 - a signal, not an error of the parser itself
    """A line clearly belongs to a rule but its fields could not be read.

    Rule modules raise it instead of guessing, so the line becomes a DeadLetter that names the
    rule and the reason, and the engineer can see which input was not understood.
    """

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Where:
    """The writer of a line as far as the file tells: the host and process of the NCCL prefix.

    PyTorch and kernel lines do not name their process, so they borrow the last NCCL-prefixed
    line of the same file; `host` is "" and `pid` 0 when no such line was seen yet.
    """

    host: str
    pid: int


NOWHERE = Where("", 0)


def peer_address(token: str) -> str:
    """Return the peer as NCCL printed it, without `<port>` and without an IPv6 zone.

    The zone (`%ib0`) names the local interface, not the remote end, so it would only split one
    peer into several when results are grouped by peer.
    """
    end = token.find("<")
    if end >= 0:
        token = token[:end]
    zone = token.find("%")
    if zone >= 0:
        token = token[:zone]
    return token.strip("[](),;")


def remember(recent: dict[K, V], key: K, value: V, limit: int) -> None:
    """Store `key` as the newest entry of `recent`, forgetting the oldest entries beyond `limit`.

    A parser lives as long as its job's stream (weeks, inside a streaming worker) and its state
    is written to a changelog, so every table a rule keeps is a dict in recency order with a
    fixed cap instead of an ever-growing set: what falls out is what the log stopped talking
    about long ago. The order is part of the state, so snapshots keep it (see LogParser).
    """
    recent.pop(key, None)
    recent[key] = value
    while len(recent) > limit:
        del recent[next(iter(recent))]
