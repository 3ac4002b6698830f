"""SubscribeResponse notifications turned into gnmic `json` messages for the raw gNMI topic.

railtrace already consumes gnmic's json format (`railtrace.streams.telemetry.gnmic`), so the
collector writes that same shape instead of inventing a second one: `source`,
`subscription-name`, `timestamp` (int ns), `time`, `prefix`, `target`, `updates: [{"Path",
"values": {<key-less path>: <value>}}]` and `deletes`. Values follow gnmic's TypedValue
mapping (scalars as JSON scalars, json/json_ietf parsed, Decimal64 as `{"digits",
"precision"}`, bytes base64) so decoded values do not depend on which tool collected them.

One bad update (no path, no value, JSON that does not parse, a NaN) is dropped and counted;
the rest of its notification still goes out.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

import orjson

from ..gnmicjson import header
from .xpaths import leaf_name, to_xpath

#: What makes a notification a state change, which delivery keeps when it has to drop
#: samples: an update of one of these leaves, or an update or delete under one of these
#: top-level containers (LLDP neighbours, which come ON_CHANGE).
STATE_LEAVES = frozenset({"oper-status"})
STATE_ROOTS = frozenset({"lldp"})

# Encoding numbers of the deprecated `Value.type` (gnmi.Encoding): JSON, BYTES, PROTO, ASCII,
# JSON_IETF. Only the JSON ones and ASCII are readable without a schema.
_JSON_ENCODINGS = frozenset({0, 4})
_ASCII_ENCODING = 3


class BadValueError(ValueError):
    """An update whose value cannot be put into JSON; the reason is the message."""


@dataclass(frozen=True, slots=True)
class Converted:
    """One notification as a gnmic json message (None if every update in it was bad), plus
    what delivery needs to know of it and why updates were dropped."""

    message: dict[str, Any] | None
    ts_ns: int
    state_change: bool
    bad_updates: list[str]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _finite(number: float) -> float:
    if not math.isfinite(number):
        raise BadValueError(f"non-finite number {number!r}")
    return number


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadValueError(f"JSON value does not parse: {exc}") from exc


def typed_value(val: Any) -> Any:
    """A gnmi.TypedValue as the JSON value gnmic's json format gives it.

    Raises BadValueError for an unset TypedValue (or one set to a member this schema does not
    know) and for values JSON cannot hold.
    """
    kind = val.WhichOneof("value")
    if kind is None:
        raise BadValueError("TypedValue with no value set")
    if kind in ("string_val", "ascii_val", "bool_val", "int_val", "uint_val"):
        return getattr(val, kind)
    if kind in ("double_val", "float_val"):
        return _finite(float(getattr(val, kind)))
    if kind in ("json_val", "json_ietf_val"):
        return _json(getattr(val, kind))
    if kind in ("bytes_val", "proto_bytes"):
        return _b64(getattr(val, kind))
    if kind == "decimal_val":
        dec = val.decimal_val
        out: dict[str, int] = {}
        if dec.digits:
            out["digits"] = int(dec.digits)
        if dec.precision:
            out["precision"] = int(dec.precision)
        return out
    if kind == "leaflist_val":
        return [typed_value(element) for element in val.leaflist_val.element]
    if kind == "any_val":
        return {"type_url": str(val.any_val.type_url), "value": _b64(val.any_val.value)}
    raise BadValueError(f"TypedValue member {kind} not handled")


def _update_value(update: Any) -> Any:
    """The value of an update: `val`, or the deprecated `value` that older targets send."""
    if update.HasField("val"):
        return typed_value(update.val)
    if update.HasField("value"):
        legacy = update.value
        if legacy.type in _JSON_ENCODINGS:
            return _json(legacy.value)
        if legacy.type == _ASCII_ENCODING:
            return bytes(legacy.value).decode("ascii", errors="replace")
        raise BadValueError(f"deprecated Value with unreadable encoding {legacy.type}")
    raise BadValueError("update without a value")


#: Paths remembered with their strings; a switch sends the same few thousand every interval.
PATH_CACHE_SIZE = 1 << 16
_paths: dict[bytes, tuple[str, str, bool]] = {}


def _strings(path: Any) -> tuple[str, str, bool]:
    """(xpath with keys, xpath without, is a state leaf) of an update's path, memoised on its
    wire bytes: printing a Path walks its elements in Python, serializing it is one C call."""
    wire = path.SerializeToString()
    hit = _paths.get(wire)
    if hit is None:
        if len(_paths) >= PATH_CACHE_SIZE:
            _paths.clear()
        hit = _paths[wire] = (
            to_xpath(path),
            to_xpath(path, keys=False),
            leaf_name(path) in STATE_LEAVES or _root(path) in STATE_ROOTS,
        )
    return hit


def convert_notification(
    notification: Any, *, source: str, subscription: str, received_ns: int
) -> Converted | None:
    """A gnmi.Notification as a gnmic json message; None when nothing usable is left in it.

    A notification without a timestamp (0) takes the time it was received: a sample with a
    slightly late time is worth more to rate computation than no sample.
    """
    ts_ns = int(notification.timestamp) if notification.timestamp > 0 else received_ns
    updates: list[dict[str, Any]] = []
    bad: list[str] = []
    state_change = False
    for update in notification.update:
        if not update.HasField("path") or not len(update.path.elem):
            bad.append("update without a path")
            continue
        try:
            value = _update_value(update)
        except BadValueError as exc:
            bad.append(f"{to_xpath(update.path)}: {exc}")
            continue
        keyed, key, state = _strings(update.path)
        updates.append({"Path": keyed, "values": {key: value}})
        state_change = state_change or state
    deletes = [to_xpath(path) for path in notification.delete]
    if not updates and not deletes:
        return Converted(None, ts_ns, False, bad) if bad else None
    message = header(source, subscription, ts_ns)
    if notification.HasField("prefix"):
        if prefix := to_xpath(notification.prefix):
            message["prefix"] = prefix
            state_change = state_change or _root(notification.prefix) in STATE_ROOTS
        if notification.prefix.target:
            message["target"] = str(notification.prefix.target)
    if updates:
        message["updates"] = updates
    if deletes:
        message["deletes"] = deletes
        state_change = state_change or any(_root(p) in STATE_ROOTS for p in notification.delete)
    return Converted(message, ts_ns, state_change, bad)


def _root(path: Any) -> str:
    return str(path.elem[0].name).rpartition(":")[2] if len(path.elem) else ""


def encode(message: dict[str, Any]) -> bytes:
    """The message as the bytes of one raw-topic record."""
    return orjson.dumps(message)
