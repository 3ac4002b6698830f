"""The raw gNMI topic's message shape, gnmic's `json` format, as railtrace's collectors write it.

The gNMI collector puts messages on that topic, and so does a collector that translates other
switch telemetry into gNMI's shape; writing the common fields in one place keeps them the shape
the worker's decoder (and gnmic) agree on. Free of gRPC, so a collector that does not speak
gNMI need not load it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any


def rfc3339(ts_ns: int) -> str:
    """ns since the epoch as RFC 3339 in UTC, fraction trimmed as Go prints it."""
    seconds, nanos = divmod(ts_ns, 1_000_000_000)
    text = _second(seconds)
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    return text + "Z"


@lru_cache(maxsize=64)
def _second(seconds: int) -> str:
    # Every notification of a sample interval falls in the same few seconds.
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def header(source: str, subscription: str, ts_ns: int) -> dict[str, Any]:
    """The fields every gnmic json message starts with."""
    return {
        "source": source,
        "subscription-name": subscription,
        "timestamp": ts_ns,
        "time": rfc3339(ts_ns),
    }
