"""SubscribeResponse notifications turned into gnmic `json` messages for the raw gNMI topic.

railtrace already consumes gnmic's json format (`railtrace.streams.telemetry.gnmic`), so the
collector writes that same shape instead of inventing a second one: `source`,
`subscription-name`, `timestamp` (int ns), `time`, `prefix`, `target`, `updates: [{"Path",
"values": {<key-less path>: <value>}}]` and `deletes`. Values follow gnmic's TypedValue
mapping (scalars as JSON scalars, json/json_ietf parsed, Decimal64 as `{"digits",
"precision"}`, bytes base64) so decoded values do not depend on which tool collected them.

One bad update (no path, no value, JSON that does not parse, a NaN) is dropped and counted;
the rest of its notification still goes out. Paths in the deprecated `element` form are read
like `elem` (`xpaths.with_elems`). A timestamp in milliseconds, seconds or microseconds,
which some switch OSes send where gNMI has nanoseconds, is read in its unit
(`railtrace.streams.telemetry.stamps`) and the message carries it in ns; a notification whose
timestamp is no time in any unit is refused whole, its updates counted bad with the reason.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

import orjson

from railtrace.streams.telemetry.stamps import StampError, read_stamp

from ..gnmicjson import header
from .xpaths import leaf_name, to_xpath, with_elems

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


#: `Converted.stamp` of a notification stamped 0 (unset): it takes the time it was received.
UNSTAMPED = "missing"
#: `Converted.stamp` of a notification whose timestamp is no time in any unit: refused.
REFUSED = "rejected"


@dataclass(frozen=True, slots=True)
class Converted:
    """One notification as a gnmic json message (None if every update in it was bad), plus
    what delivery needs to know of it and why updates were dropped.

    `good_updates` counts the updates kept. `stamp` says how its timestamp was read: `ns` as
    gNMI has it, `us`/`ms`/`s` when sent in that unit, UNSTAMPED or REFUSED.
    """

    message: dict[str, Any] | None
    ts_ns: int
    state_change: bool
    bad_updates: list[str]
    good_updates: int = 0
    stamp: str = "ns"


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
_paths: dict[bytes, tuple[str, str, bool] | None] = {}


def _strings(path: Any) -> tuple[str, str, bool] | None:
    """(xpath with keys, xpath without, is a state leaf) of an update's path, None for a path
    with no element; memoised on its wire bytes: printing a Path walks its elements in Python,
    serializing it is one C call."""
    wire = path.SerializeToString()
    try:
        return _paths[wire]
    except KeyError:
        pass
    if len(_paths) >= PATH_CACHE_SIZE:
        _paths.clear()
    path = with_elems(path)
    hit = _paths[wire] = (
        (
            to_xpath(path),
            to_xpath(path, keys=False),
            leaf_name(path) in STATE_LEAVES or _root(path) in STATE_ROOTS,
        )
        if len(path.elem)
        else None
    )
    return hit


def _stamp(notification: Any, received_ns: int) -> tuple[int, str]:
    """The notification's time in ns and how it was read (see `Converted.stamp`).

    A notification without a timestamp (0) takes the time it was received: a sample with a
    slightly late time is worth more to rate computation than no sample.
    """
    stamp = int(notification.timestamp)
    if stamp == 0:
        return received_ns, UNSTAMPED
    ts_ns, unit = read_stamp(stamp)
    return ts_ns, str(unit)


def convert_notification(
    notification: Any, *, source: str, subscription: str, received_ns: int
) -> Converted | None:
    """A gnmi.Notification as a gnmic json message; None when nothing usable is left in it."""
    try:
        ts_ns, stamp = _stamp(notification, received_ns)
    except StampError as exc:
        reason = f"{exc}: the switch's clock is wrong, or it stamps in no known unit"
        refused = [reason] * max(1, len(notification.update))
        return Converted(None, received_ns, False, refused, 0, REFUSED)
    updates: list[dict[str, Any]] = []
    bad: list[str] = []
    state_change = False
    for update in notification.update:
        strings = _strings(update.path) if update.HasField("path") else None
        if strings is None:
            bad.append("update without a path")
            continue
        keyed, key, state = strings
        try:
            value = _update_value(update)
        except BadValueError as exc:
            bad.append(f"{keyed}: {exc}")
            continue
        updates.append({"Path": keyed, "values": {key: value}})
        state_change = state_change or state
    deletes = [with_elems(path) for path in notification.delete]
    if not updates and not deletes:
        return Converted(None, ts_ns, False, bad, 0, stamp) if bad else None
    message = header(source, subscription, ts_ns)
    if notification.HasField("prefix"):
        prefix = with_elems(notification.prefix)
        if text := to_xpath(prefix):
            message["prefix"] = text
            state_change = state_change or _root(prefix) in STATE_ROOTS
        if prefix.target:
            message["target"] = str(prefix.target)
    if updates:
        message["updates"] = updates
    if deletes:
        message["deletes"] = [to_xpath(path) for path in deletes]
        state_change = state_change or any(_root(p) in STATE_ROOTS for p in deletes)
    return Converted(message, ts_ns, state_change, bad, len(updates), stamp)


def _root(path: Any) -> str:
    return str(path.elem[0].name).rpartition(":")[2] if len(path.elem) else ""


def encode(message: dict[str, Any]) -> bytes:
    """The message as the bytes of one raw-topic record."""
    return orjson.dumps(message)
