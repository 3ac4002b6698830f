"""What a leaf's full path names (metric, interface, qualifier), and how a list entry is named.

The walk of a message's leaves is compiled (`walk/src/lib.rs`, driven from `gnmic`); these are
the rules it calls. A leaf whose value is a JSON object (an update at a subtree, such as
`.../state/counters`) is flattened into its leaves, a JSON list of YANG list entries too, each
entry named by its key leaves (`keyed_path`) as if the target had sent `interface[name=...]`
in the path. A path is resolved once per distinct string (`resolve` here, and the walk's own
cache in front of it), so a repeated leaf costs a hash probe.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from ..records import COUNTER_METRICS, Metric
from .paths import Entry, lookup
from .xpath import PATH_CACHE_SIZE, parse_xpath

#: Leaves that are a YANG list's key, used to name the entries of a list inside a JSON value.
KEY_LEAVES = ("name", "interface-id", "priority", "index", "id", "lane", "lane-number")

#: Event tags tried for the interface when a path's own interface key is absent.
INTERFACE_TAGS = ("interface_name", "interface_interface-id")
#: Subtrees nested deeper than this are not flattened (their leaves are counted bad): no YANG
#: model railtrace reads is a tenth as deep, and a hostile message nested a thousand levels
#: would otherwise exhaust the interpreter's recursion.
MAX_DEPTH = 64


class Target(NamedTuple):
    """What a path resolves to; `interface`/`qualifier` are None when the path lacks the key."""

    metric: Metric
    interface: str | None
    qualifier: str | None
    entry: Entry
    counter: bool


@lru_cache(maxsize=PATH_CACHE_SIZE)
def resolve(path: str) -> Target | None:
    """The metric, interface and qualifier a full path names; None when railtrace has no use
    for it. Cached: the same paths come back every sample interval."""
    parsed = parse_xpath(path)
    entry = lookup(parsed)
    if entry is None:
        return None
    keys = dict(parsed.tags)
    interface = keys.get(entry.interface_tag) if entry.interface_tag else parsed.parent
    qualifier: str | None = entry.qualifier_prefix
    if entry.qualifier_tag:
        value = keys.get(entry.qualifier_tag)
        qualifier = None if value is None else entry.qualifier_prefix + value
    return Target(entry.metric, interface, qualifier, entry, entry.metric in COUNTER_METRICS)


def keyed_path(path: str, entry: dict[str, Any]) -> str | None:
    """A list entry's path with its key leaves written as xpath keys: `interface[name=e1]`;
    None when a key leaf is not a scalar (no model keys a list by a subtree, and writing one
    nested a thousand levels into a path recursed out of the interpreter's stack)."""
    keys = []
    for k in KEY_LEAVES:
        if k in entry:
            key = entry[k]
            if type(key) not in (str, int, float, bool):
                return None
            keys.append(f"[{k}={key}]")
    return path + "".join(keys)
