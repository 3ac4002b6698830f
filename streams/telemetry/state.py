"""Helpers for the JSON snapshots of CounterRates and LinkHealth.

In the stream workers each key's state lives in a Faust table whose changelog topic is the only
copy that survives a restart or a rebalance, so a snapshot must come back from JSON *exactly*:
a counter near 2**64 must keep every unit (wrap arithmetic depends on it), an int must stay an
int (a reset's detail prints the old reading), and a float must not change by one ulp (an EWMA
baseline that differs in its last bit can decide a threshold differently hours later).

orjson, like most JSON libraries, keeps ints in [-2**63, 2**64) and finite floats exact, but
refuses larger ints and silently writes NaN and infinities as null. Readings the decoder passes
through are unbounded ("184467440737095516160" is a valid int to it), and one such reading in a
snapshot would make every changelog write of its key fail, so numbers outside what JSON keeps
exactly are written as decimal strings and read back from them.
"""

from __future__ import annotations

import math
from typing import Any

#: The snapshot layout this code writes and reads. Bump it when the layout changes, and keep
#: reading the old one for as long as changelog topics may still hold it.
VERSION = 1

_INT_MIN = -(2**63)
_INT_END = 2**64


def check_header(snap: Any, kind: str) -> None:
    """Raise ValueError unless `snap` is a snapshot of `kind` in a layout this code reads."""
    if not isinstance(snap, dict):
        raise ValueError(f"{kind} snapshot must be a JSON object, not {type(snap).__name__}")
    version = snap.get("v")
    if version != VERSION or type(version) is not int:
        raise ValueError(
            f"{kind} snapshot has version {version!r}; this railtrace reads version {VERSION} "
            "only (was the changelog written by a newer release?)"
        )
    if snap.get("type") != kind:
        raise ValueError(f"snapshot is of {snap.get('type')!r}, not {kind}")


def enc_int(value: int) -> int | str:
    """`value` as JSON keeps it exactly: itself, or a decimal string when out of range."""
    return value if _INT_MIN <= value < _INT_END else str(value)


def dec_int(value: Any) -> int:
    """The int `enc_int` wrote."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        return int(value)
    raise ValueError(f"expected an integer, got {value!r}")


def enc_num(value: float) -> int | float | str:
    """An int or float reading as JSON keeps it exactly, its type included."""
    if type(value) is int:
        return enc_int(value)
    return value if math.isfinite(value) else str(value)


def dec_num(value: Any) -> int | float:
    """The number `enc_num` wrote: an int stays an int, a float a float."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return float(value)  # "inf", "-inf", "nan"
    raise ValueError(f"expected a number, got {value!r}")


def dec_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def dec_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value
