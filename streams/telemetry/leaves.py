"""One notification's leaves, each resolved to (metric, interface, qualifier) and converted.

This is the per-value hot path: a leaf's full path string is resolved once and cached, so a
repeated leaf costs a dict probe, a type check and a record. A leaf whose value is a JSON
object (an update at a subtree, such as `.../state/counters`) is flattened into its leaves
here, a JSON list of YANG list entries too, each entry named by its key leaves as if the
target had sent `interface[name=...]` in the path.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from ..records import COUNTER_METRICS, Metric, TelemetryValue
from .lldp import LldpLeaf, deleted_neighbours, neighbour_leaf
from .paths import Entry, lookup
from .stamps import StampUnit
from .values import convert, is_typed
from .xpath import PATH_CACHE_SIZE, parse_xpath

#: Leaves that are a YANG list's key, used to name the entries of a list inside a JSON value.
KEY_LEAVES = ("name", "interface-id", "priority", "index", "id", "lane", "lane-number")

#: Event tags tried for the interface when a path's own interface key is absent.
INTERFACE_TAGS = ("interface_name", "interface_interface-id")
#: Subtrees nested deeper than this are not flattened (their leaves are counted bad): no YANG
#: model railtrace reads is a tenth as deep, and a hostile message nested a thousand levels
#: would otherwise exhaust the interpreter's recursion.
MAX_DEPTH = 64
#: The largest counter, 2**64 - 1, as a decimal string: a longer one, or one of its length that
#: sorts after it, is no counter.
_MAX_COUNTER = str(2**64 - 1)


class _Target(NamedTuple):
    """What a path resolves to; `interface`/`qualifier` are None when the path lacks the key."""

    metric: Metric
    interface: str | None
    qualifier: str | None
    entry: Entry
    counter: bool


@lru_cache(maxsize=PATH_CACHE_SIZE)
def _resolve(path: str) -> _Target | None:
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
    return _Target(entry.metric, interface, qualifier, entry, entry.metric in COUNTER_METRICS)


def _fits_counter(digits: str) -> bool:
    """Whether a decimal string is at most 2**64 - 1, without converting it.

    >>> _fits_counter("18446744073709551615"), _fits_counter("18446744073709551616")
    (True, False)
    """
    n = len(digits)
    return n < len(_MAX_COUNTER) or (n == len(_MAX_COUNTER) and digits <= _MAX_COUNTER)


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


class Leaves:
    """One notification's leaves turned into TelemetryValues, subtrees flattened on the way.

    `unit` is the unit the notification's stamp was sent in (`ts_ns` is in ns whatever it was).
    """

    def __init__(self, ts_ns: int, unit: StampUnit, device: str, tags: dict[str, Any]) -> None:
        self.ts_ns = ts_ns
        self.unit = unit
        self.device = device
        self.tags = tags
        self.out: list[TelemetryValue] = []
        self.unknown = 0
        self.unattributed = 0
        self.bad = 0
        self.pathless = 0
        # LLDP neighbours ride along in the same notifications (see `lldp`); rare, so lazy.
        self.lldp: list[LldpLeaf] | None = None
        self.lldp_deletes: list[tuple[str | None, str | None]] | None = None

    def add(self, path: str, value: Any, depth: int = 0) -> None:
        """Add the TelemetryValue(s) of `value` at `path`, or count why there are none."""
        kind = type(value)
        if (kind is dict or kind is list) and depth > MAX_DEPTH:
            self.bad += 1
        elif kind is dict and not is_typed(value):
            for name, child in value.items():
                self.add(f"{path}/{name}", child, depth + 1)
        elif kind is list and value and type(value[0]) is dict:
            for item in value:
                if isinstance(item, dict):
                    keyed = keyed_path(path, item)
                    if keyed is None:
                        self.bad += 1
                        continue
                    for name, child in item.items():
                        if name not in KEY_LEAVES:
                            self.add(f"{keyed}/{name}", child, depth + 1)
        elif (target := _resolve(path)) is None:
            if "lldp" in path and (leaf := neighbour_leaf(path, value, self.tags)) is not None:
                if self.lldp is None:
                    self.lldp = []
                self.lldp.append(leaf)
            elif not path.strip("/"):
                self.pathless += 1  # a leaf with no name: see DecodeStats.pathless
            else:
                self.unknown += 1
        else:
            metric, interface, qualifier, entry, counter = target
            if interface is None or qualifier is None:
                interface, qualifier = self._from_tags(entry, interface, qualifier)
            converted: int | float | str | None
            if not interface:
                self.unattributed += 1
            elif counter and (
                (kind is int and value >= 0)
                or (kind is str and value.isdecimal() and _fits_counter(value))
            ):
                # the common cases, without the general conversion
                self.out.append(
                    TelemetryValue(
                        self.ts_ns, self.device, interface, metric, int(value), qualifier
                    )
                )
            elif (converted := convert(metric, value)) is None:
                self.bad += 1
            else:
                self.out.append(
                    TelemetryValue(self.ts_ns, self.device, interface, metric, converted, qualifier)
                )

    def delete(self, path: str) -> None:
        """Note a gNMI delete; only LLDP neighbours going away matter to railtrace."""
        gone = deleted_neighbours(path, self.tags) if "lldp" in path else None
        if gone is not None:
            if self.lldp_deletes is None:
                self.lldp_deletes = []
            self.lldp_deletes.append(gone)

    def _from_tags(
        self, entry: Entry, interface: str | None, qualifier: str | None
    ) -> tuple[str | None, str]:
        """Fill in from the event's tags what its key-less path could not name."""
        tags = self.tags
        if interface is None:
            candidates = (entry.interface_tag, *INTERFACE_TAGS)
            found = next((tags[t] for t in candidates if t in tags), None)
            interface = found if isinstance(found, str) else None
        if qualifier is None:
            # Tags are scalars in gnmic's events; anything else names no queue or lane (and a
            # hostile nested one must not be rendered).
            value = tags.get(entry.qualifier_tag, "")
            qualifier = entry.qualifier_prefix + (
                str(value) if isinstance(value, str | int | float) else ""
            )
        return interface, qualifier
