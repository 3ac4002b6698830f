"""Leaf values as gnmic prints them, turned into what a TelemetryValue holds.

Targets and gnmic spell one number many ways: a JSON number, a string (uint64 counters are
strings in JSON_IETF, "65382630"), a gNMI Decimal64 printed by gnmic's json format as
`{"digits": -523, "precision": 2}`, or a protojson TypedValue such as `{"uintVal": "12"}`.
Counters stay Python ints when they are integral, so that a 64-bit counter near 2**64 keeps
every unit (a float would round it to 2048) and wrap arithmetic stays exact; an int is a
valid `float` for TelemetryValue's type.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..records import Metric

#: protojson / gnmic names of a gNMI TypedValue's scalar members (camelCase and proto names).
TYPED_KEYS = frozenset(
    {
        *("uintVal", "intVal", "floatVal", "doubleVal", "stringVal", "asciiVal", "boolVal"),
        *("uint_val", "int_val", "float_val", "double_val", "string_val", "ascii_val", "bool_val"),
        *("decimalVal", "decimal_val"),
    }
)
DECIMAL_KEYS = frozenset({"digits", "precision"})
#: Counters are at most 64-bit: a larger reading is garbage, not a count.
COUNTER_LIMIT = 2**64


def is_typed(value: dict[str, Any]) -> bool:
    """True for a dict that is one wrapped gNMI value, not a subtree to flatten.

    gnmic omits a Decimal64's zero `digits` or `precision`, so either may stand alone.
    """
    if len(value) == 1:
        key = next(iter(value))
        return key in TYPED_KEYS or key in DECIMAL_KEYS
    return value.keys() == DECIMAL_KEYS


def unwrap(value: dict[str, Any]) -> Any:
    """The plain value inside a wrapped gNMI value (see `is_typed`); None if it is not one."""
    if not is_typed(value):
        return None
    if value.keys() <= DECIMAL_KEYS:
        digits = value.get("digits", 0)
        precision = value.get("precision", 0)
        # YANG decimal64 has at most 18 fraction digits; a larger precision is garbage.
        if type(digits) is not int or type(precision) is not int or not 0 <= precision <= 18:
            return None
        return digits / 10**precision
    inner = next(iter(value.values()))
    # protojson nests a Decimal64 once ({"decimalVal": {"digits": .., "precision": ..}});
    # a wrapped value inside a wrapped value is no gNMI value.
    if isinstance(inner, dict):
        return unwrap(inner) if inner.keys() <= DECIMAL_KEYS else None
    return inner


def to_number(value: Any) -> int | float | None:
    """A finite number from a JSON number, numeric string or wrapped value; None otherwise."""
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is str:
        try:
            return int(value)
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
            kind = float
    if kind is float:
        return float(value) if math.isfinite(value) else None
    if kind is dict:
        return to_number(unwrap(value))
    return None


def to_state(value: Any) -> str | None:
    """An enum leaf (oper-status) as railtrace's lower-case state: "UP" -> "up".

    A module prefix on an identity (`openconfig-interfaces:DOWN`) is dropped.
    """
    if isinstance(value, dict):
        value = unwrap(value)
    if not isinstance(value, str) or not value:
        return None
    return value.rpartition(":")[2].strip().lower() or None


_SPEED = re.compile(r"SPEED_(\d+(?:\.\d+)?)(GB|MB)\b")


def to_gbps(value: Any) -> float | None:
    """An openconfig-if-ethernet speed identity as Gb/s; a bare number is taken as Gb/s;
    "SPEED_UNKNOWN" and the like are None.

    >>> to_gbps("openconfig-if-ethernet:SPEED_400GB"), to_gbps("SPEED_100MB"), to_gbps(800)
    (400.0, 0.1, 800.0)
    >>> to_gbps("SPEED_UNKNOWN") is None
    True
    """
    if isinstance(value, dict):
        value = unwrap(value)
    if isinstance(value, str):
        m = _SPEED.search(value.upper())
        if m is not None:
            gbps = float(m.group(1))
            return gbps if m.group(2) == "GB" else gbps / 1000.0
    number = to_number(value)
    return float(number) if number is not None and number > 0 else None


def convert(metric: Metric, value: Any) -> int | float | str | None:
    """The TelemetryValue.value for `metric`, or None when the leaf's value is unusable.

    Counters must be non-negative numbers; gauges any finite number; states strings.
    """
    if metric is Metric.OPER_STATUS:
        return to_state(value)
    if metric is Metric.PORT_SPEED_GBPS:
        return to_gbps(value)
    number = to_number(value)
    if number is None:
        return None
    if metric is Metric.RX_POWER_DBM or metric is Metric.TEMPERATURE_C:
        return float(number)
    return number if 0 <= number < COUNTER_LIMIT else None
