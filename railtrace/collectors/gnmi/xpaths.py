"""gNMI Path messages to and from the xpath strings gnmic prints.

The raw gNMI topic carries gnmic's `json` format, so a Path must be printed exactly as gnmic
prints it (`origin:/elem[key=value]/...`, several keys sorted by name, no leading slash
without an origin) for railtrace's decoder to read collector and gnmic output alike.

Paths of gNMI before 0.4 name their elements in the deprecated `element` field, one string per
element with its keys written in (`interface[name=Ethernet1]`); openconfig's reference fake
target still sends only those. `with_elems` reads them into `elem`, as openconfig's own client
does when `elem` is empty, so they print and decode like any other path (gnmic prints them as
`/`, losing every name).
"""

from __future__ import annotations

from typing import Any

from railtrace.streams.telemetry.xpath import split_elements

from ...proto.gen import gnmi_pb2


def to_xpath(path: Any, *, keys: bool = True) -> str:
    """A gnmi.Path as gnmic writes it; with `keys=False`, element names only."""
    parts: list[str] = []
    for elem in path.elem:
        name = str(elem.name)
        if keys and elem.key:
            name += "".join(f"[{k}={elem.key[k]}]" for k in sorted(elem.key))
        parts.append(name)
    text = "/".join(parts)
    return f"{path.origin}:/{text}" if keys and path.origin else text


def from_xpath(text: str, *, origin: str = "", target: str = "") -> Any:
    """An xpath (`/a/b[k=v]/c`) as a gnmi.Path; an element without keys means every entry."""
    path = gnmi_pb2.Path(origin=origin, target=target)
    for part in filter(None, split_elements(text)):
        name, bracket, rest = part.partition("[")
        elem = path.elem.add(name=name)
        if bracket:
            for pair in rest.rstrip("]").split("]["):
                key, _, value = pair.partition("=")
                elem.key[key.strip()] = value.strip()
    return path


def with_elems(path: Any) -> Any:
    """`path` itself when it has `elem` (or nothing at all); otherwise a Path whose `elem` is
    read from its deprecated `element` strings, origin and target kept."""
    if len(path.elem) or not len(path.element):
        return path
    return from_xpath("/".join(path.element), origin=path.origin, target=path.target)


def leaf_name(path: Any) -> str:
    """The last element's name ('' for an empty path)."""
    return str(path.elem[-1].name) if len(path.elem) else ""
