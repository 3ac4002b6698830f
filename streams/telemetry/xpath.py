"""Path strings as gnmic prints them, reduced to what the metric table is keyed on.

gnmic writes paths in several spellings for the same leaf: with or without a leading slash,
with an origin (`openconfig:/interfaces/...`), with YANG module prefixes on any element
(`openconfig-interfaces:interfaces`), with list keys (`interface[name=Ethernet1/1]`, whose
values may themselves contain `/`) or, in the event format, with no keys at all. Everything
here reduces those spellings to one key-less, prefix-less string plus the keys named the way
gnmic's event tags name them (`<element>_<key>`), so that both formats meet the same table and
the same tag lookups.

Parsing is cached: a switch repeats the same few thousand paths every sample interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

#: Distinct path strings remembered; a large fabric streams far fewer distinct paths per
#: collector, and an eviction only costs a re-parse.
PATH_CACHE_SIZE = 1 << 17


@dataclass(frozen=True, slots=True)
class ParsedPath:
    """One path reduced to its lookup key, its list keys and the element before its leaf.

    `key` joins the element names without keys, module prefixes or origin:
    `interfaces/interface/state/counters/in-octets`. `tags` holds the list keys named as
    gnmic's event format names them (`interface_name`, `switch-priority_priority`).
    `leaf` and `parent` are the last two element names (SONiC puts the port name in `parent`).
    """

    key: str
    tags: tuple[tuple[str, str], ...]
    leaf: str
    parent: str


def split_elements(path: str) -> list[str]:
    """Split on `/` outside `[...]`, since key values such as `Ethernet1/1` contain slashes."""
    if "[" not in path:
        return path.split("/")
    elements: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(path):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif ch == "/" and depth == 0:
            elements.append(path[start:i])
            start = i + 1
    elements.append(path[start:])
    return elements


@lru_cache(maxsize=PATH_CACHE_SIZE)
def parse_xpath(path: str) -> ParsedPath:
    """Reduce a gnmic path string to its table key, its list keys and its last two elements."""
    names: list[str] = []
    tags: list[tuple[str, str]] = []
    for element in split_elements(path):
        name, bracket, keys = element.partition("[")
        name = name.rpartition(":")[2]  # `openconfig-qos:queue` -> `queue`, `openconfig:` -> ""
        if bracket:
            for pair in keys.rstrip("]").split("]["):
                key, _, value = pair.partition("=")
                tag = f"{name}_{key.strip()}" if name else key.strip()
                tags.append((tag, value.strip().strip("'\"")))
        if name:
            names.append(name)
    leaf = names[-1] if names else ""
    parent = names[-2] if len(names) > 1 else ""
    return ParsedPath("/".join(names), tuple(tags), leaf, parent)


@lru_cache(maxsize=4096)
def device_of(source: str) -> str:
    """The device name in a gnmic `source`: the target name or address without its port.

    `leaf1:57400` -> `leaf1`; `[2001:db8::1]:57400` -> `2001:db8::1`; a bare IPv6 address
    (more than one colon, no brackets) has no port to strip and is kept whole.
    """
    source = source.strip()
    if source.startswith("["):
        host, bracket, _ = source[1:].partition("]")
        return host if bracket else source
    if source.count(":") == 1:
        return source.partition(":")[0]
    return source
