"""Slurm hostlist expressions (`gb-n[001-004,007]`), expanded as Slurm's own hostlist.c does.

A job's NodeList is the one place the scheduler names every host, so it must expand exactly:
a host missing from the expansion is a host whose links are never suspected, an invented one
is a phantom. The rules kept here (checked against `scontrol show hostnames` in the tests):

- hosts are separated by commas (or whitespace) outside brackets;
- `prefix[ranges]suffix`, ranges comma-separated, each `N` or `LO-HI` with LO <= HI;
- the width of LO sets the zero padding of every number of its range (`[08-10]`: 08 09 10,
  `[8-10]`: 8 9 10);
- several bracket groups in one name multiply out: the last group varies fastest, the one
  before it slowest, the others leftwards in between (`a[1-2]b[1-2]c[1-2]`: a1b1c1 a1b1c2
  a2b1c1 a2b1c2 a1b2c1 ..., as hostlist.c's right-to-left recursion gives it);
- text may follow the last group, as a suffix shared by every host (`n[1-2]-ib`: n1-ib
  n2-ib), which Slurm prints from 23.11 on (22.05 and 23.02 refuse it);
- order is kept and duplicates are not removed (Slurm neither sorts nor dedups here).

Where Slurm 22.05 takes a malformed expression anyway (`n[1-2` becomes the host `n]`, an
error from 23.02 on; a space inside brackets widens the padding), this refuses it: a scheduler
never prints those, so they mean a damaged file, and a wrong host is worse than none.

Expansion is bounded (MAX_HOSTS): `n[0-999999999]` from a garbled file is an error, not an
allocation of a billion names.
"""

from __future__ import annotations

import re
from itertools import product

#: More hosts than any one job holds on the largest fabrics railtrace is sized for.
MAX_HOSTS = 200_000

#: A range's numbers: ASCII digits, at most 18 (a longer number is damage, and Python's int()
#: refuses a string of over 4,300 digits).
_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?\Z")


class HostlistError(ValueError):
    """An expression Slurm would not accept; the message says where."""


def expand(expression: str) -> list[str]:
    """Every host name of `expression`, in order.

    >>> expand("gb-n[001-003,007],login1")
    ['gb-n001', 'gb-n002', 'gb-n003', 'gb-n007', 'login1']
    >>> expand("r[1-2]-n[8-9]")
    ['r1-n8', 'r1-n9', 'r2-n8', 'r2-n9']
    """
    hosts: list[str] = []
    for item in _split_top(expression):
        names = _expand_one(item, MAX_HOSTS - len(hosts))
        hosts.extend(names)
        if len(hosts) > MAX_HOSTS:  # plain names count too, not only bracket ranges
            raise HostlistError(f"{expression[:80]!r}... names more than {MAX_HOSTS} hosts")
    if not hosts:
        raise HostlistError(f"no host in {expression!r}")
    return hosts


def _split_top(expression: str) -> list[str]:
    """The comma/space separated items of `expression`, commas inside brackets kept."""
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(expression):
        if ch == "[":
            if depth:
                raise HostlistError(f"nested '[' at {i} in {expression!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"']' without '[' at {i} in {expression!r}")
            depth = 0
        elif depth == 0 and (ch == "," or ch.isspace()):
            if i > start:
                items.append(expression[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"'[' not closed in {expression!r}")
    if len(expression) > start:
        items.append(expression[start:])
    return items


def _expand_one(item: str, room: int) -> list[str]:
    """One item: literal parts and bracket groups, multiplied out in Slurm's order."""
    parts: list[list[str]] = []
    groups: list[int] = []  # indexes into parts of the bracket groups
    rest = item
    count = 1
    while rest:
        open_at = rest.find("[")
        if open_at < 0:
            parts.append([rest])
            break
        if open_at:
            parts.append([rest[:open_at]])
        close_at = rest.index("]", open_at)
        numbers = _ranges(rest[open_at + 1 : close_at], item, room // count)
        count *= len(numbers)
        groups.append(len(parts))
        parts.append(numbers)
        rest = rest[close_at + 1 :]
    for part in parts:
        for text in part:
            if not _name_ok(text):
                raise HostlistError(f"character not allowed in a host name in {item!r}")
    if len(groups) < 2:
        return ["".join(p) for p in product(*parts)]
    # hostlist.c splits at the last '[' and expands the prefix recursively, right to left:
    # the second-to-last group varies slowest, then leftwards, and the last group fastest.
    order = [*reversed(groups[:-1]), groups[-1]]
    out = []
    for choice in product(*(parts[g] for g in order)):
        picked = dict(zip(order, choice, strict=True))
        out.append("".join(picked[i] if i in picked else p[0] for i, p in enumerate(parts)))
    return out


def _ranges(inside: str, item: str, room: int) -> list[str]:
    out: list[str] = []
    for piece in inside.split(","):
        m = _RANGE.match(piece)
        if m is None:
            raise HostlistError(f"bad range {piece!r} in {item!r}")
        lo_text, hi_text = m.group(1), m.group(2)
        lo = int(lo_text)
        hi = lo if hi_text is None else int(hi_text)
        if hi < lo:
            raise HostlistError(f"range {piece!r} runs backwards in {item!r}")
        if len(out) + hi - lo + 1 > room:
            raise HostlistError(f"{item!r} names more than {MAX_HOSTS} hosts")
        width = len(lo_text)
        out.extend(f"{n:0{width}d}" for n in range(lo, hi + 1))
    return out


def _name_ok(text: str) -> bool:
    return text.isprintable() and not any(c in text for c in "[]/\\\"'\ufffd")
