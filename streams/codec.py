"""Records to and from JSON-able dicts, for Kafka messages and for state snapshots.

One codec for every frozen record in `railtrace.streams.records` (each of its `MODULES`): each
dict carries its type under "t", nested records and tuples are rebuilt from the dataclass field
types. Pure; orjson does the bytes at the edges.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, TypeVar

import orjson

from railtrace.streams import records
from railtrace.topology import ends

T = TypeVar("T")

#: Every record type that may cross a process boundary, by its tag: the records, and the
#: fabric's own types they hold (a cable and its ends).
RECORD_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for module in (*records.MODULES, ends)
    for cls in vars(module).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
}


class CodecError(ValueError):
    """A dict that is not a record this codec knows, or has the wrong fields."""


def encode(value: Any) -> Any:
    """A record (or tuple/list of them) as plain JSON types, tagged with its type name.

    >>> encode(ends.Endpoint("leaf1", "swp1"))
    {'t': 'Endpoint', 'device': 'leaf1', 'interface': 'swp1'}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"t": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = encode(getattr(value, f.name))
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)  # in the namespace of its module
    return hints


def _rebuild(hint: Any, raw: Any) -> Any:
    if raw is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            if arg is type(None):
                continue
            if isinstance(raw, dict) and "t" in raw:
                return decode(raw)
            try:
                return _rebuild(arg, raw)
            except (TypeError, ValueError):
                continue
        return raw
    if origin is tuple:
        inner = args[0] if args else Any
        return tuple(_rebuild(inner, v) for v in raw)
    if origin is dict:
        return {k: _rebuild(args[1], v) for k, v in raw.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(raw)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if isinstance(raw, dict) and "t" not in raw:  # the field's type says what it is
            raw = {**raw, "t": hint.__name__}
        return decode(raw, hint)
    if hint is bytes and isinstance(raw, str):
        return raw.encode()
    if hint is float and isinstance(raw, int):
        return raw  # keep large counters exact
    return raw


def decode(raw: Any, expect: type[T] | None = None) -> T:
    """Rebuild a record from `encode`'s output; raises CodecError on anything else."""
    if not isinstance(raw, dict) or not isinstance(raw.get("t"), str):
        raise CodecError(f"not a tagged record: {str(raw)[:80]!r}")
    cls = RECORD_TYPES.get(raw["t"])
    if cls is None:
        raise CodecError(f"unknown record type {raw['t']!r}")
    if expect is not None and not issubclass(cls, expect):
        raise CodecError(f"expected {expect.__name__}, got {raw['t']}")
    hints = _hints(cls)
    try:
        kwargs = {
            f.name: _rebuild(hints[f.name], raw[f.name])
            for f in dataclasses.fields(cls)
            if f.name in raw
        }
        return typing.cast(T, cls(**kwargs))
    except (TypeError, ValueError, KeyError) as exc:
        raise CodecError(f"bad {raw['t']}: {exc}") from exc


def dumps(value: Any) -> bytes:
    return orjson.dumps(encode(value))


def loads_many(data: bytes) -> list[Any]:
    """Decode a JSON list of tagged records (a Kafka message value)."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise CodecError("expected a JSON list of records")
    return [decode(r) for r in raw]
