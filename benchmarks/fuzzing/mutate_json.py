"""Garbage made of gnmic messages: one part of a message's structure made wrong (a wrong
type, deep nesting, bad timestamps, sources, values and paths, keys dropped, YANG lists),
written back as gnmic would, so the decoder sees a message that is well-formed JSON."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from .garbage_values import BAD_PATHS, BAD_SOURCES, BAD_TIMESTAMPS, BAD_VALUES
from .mutate import mutate_bytes, random_json

_DEEP = "\x00deep\x00"


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, (*path, i))


def _set(root: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return root


Nodes = list[tuple[tuple[Any, ...], Any]]


def j_wrong_type(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    return _set(value, rng.choice(nodes)[0], random_json(rng, 2))


def j_deep(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    """A node replaced by a marker that `mutate_json` swaps for deeply nested JSON text."""
    return _set(value, rng.choice(nodes)[0], _DEEP)


def _each_key(
    value: Any, nodes: Nodes, key: str, choices: Sequence[Any], rng: random.Random
) -> Any:
    for path, _node in nodes:
        if path and path[-1] == key:
            value = _set(value, path, rng.choice(choices))
    return value


def j_timestamp(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    return _each_key(value, nodes, "timestamp", BAD_TIMESTAMPS, rng)


def j_source(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    return _each_key(value, nodes, "source", BAD_SOURCES, rng)


def j_value(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    leaves = [p for p, n in nodes if p and not isinstance(n, dict | list)]
    return _set(value, rng.choice(leaves), rng.choice(BAD_VALUES)) if leaves else value


def j_path(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    keys = [p for p, _n in nodes if p and p[-1] in ("Path", "prefix")]
    if keys:
        return _set(value, rng.choice(keys), rng.choice(BAD_PATHS))
    for p, n in nodes:
        if isinstance(n, dict) and p and p[-1] == "values":
            n[rng.choice(BAD_PATHS)] = rng.choice(BAD_VALUES)
            break
    return value


def j_drop_key(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    dicts = [n for _p, n in nodes if isinstance(n, dict) and n]
    if dicts:
        n = rng.choice(dicts)
        n.pop(rng.choice(list(n)))
    return value


def j_huge_int(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    nums = [p for p, n in nodes if p and isinstance(n, int | float) and not isinstance(n, bool)]
    if not nums:
        return value
    return _set(value, rng.choice(nums), rng.choice((2**64, 2**70, 10**400, -(10**30))))


def j_entries(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    """A subtree value turned into a YANG list of entries, some without usable keys."""
    dicts = [n for p, n in nodes if isinstance(n, dict) and p and p[-1] == "values"]
    if dicts:
        n = rng.choice(dicts)
        k = rng.choice(list(n)) if n else "counters"
        n[k] = [rng.choice(({"name": "swp1", "x": 1}, {"name": 5}, {}, [], None, {"id": []}))]
    return value


def j_extra_keys(rng: random.Random, value: Any, nodes: Nodes) -> Any:
    if isinstance(value, dict):
        key = rng.choice(("sync-response", "extensions", "deletes", "tags", "values", "target"))
        value[key] = random_json(rng, 2)
    return value


JSON_OPS: tuple[Callable[[random.Random, Any, Nodes], Any], ...] = (
    j_wrong_type,
    j_deep,
    j_timestamp,
    j_source,
    j_value,
    j_path,
    j_drop_key,
    j_huge_int,
    j_entries,
    j_extra_keys,
)
DEPTHS = (50, 256, 257, 500, 900, 960, 990, 1000, 1010, 1023, 1100, 3000)


def mutate_json(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """A gnmic message with one part of its structure made wrong, written back as gnmic would
    (one line, or its two-space multiline layout)."""
    try:
        value = orjson.loads(text.replace(b"\n", b" ").strip() or b"null")
    except orjson.JSONDecodeError:
        return mutate_bytes(rng, text, [text])
    if isinstance(value, dict) and "source" not in value and "tags" not in value:
        value["source"] = "leaf1:6030"
    op = rng.choice(JSON_OPS)
    value = op(rng, value, list(_nodes(value)))
    how = "json:" + op.__name__[2:].replace("_", "-")
    try:
        body = json.dumps(value, indent=2 if rng.random() < 0.2 else None)
    except (ValueError, TypeError, RecursionError):
        return mutate_bytes(rng, text, [text])
    if op is j_deep:
        depth = rng.choice(DEPTHS)
        how += f"-{depth}"
        deep = (
            '{"a":' * depth + "1" + "}" * depth if rng.random() < 0.5 else "[" * depth + "]" * depth
        )
        body = body.replace(json.dumps(_DEEP), deep)
    return body.encode(), how
