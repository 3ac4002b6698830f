"""Switch telemetry: gnmic output -> TelemetryValues -> LinkSample rates -> LinkEvents.

Pure code, in the order data flows: `framing` cuts gnmic's text into JSON values, `gnmic`
decodes them into TelemetryValues (`leaves` resolves each leaf through `xpath` and the
per-platform table in `paths`, `values` converts it), `rates` turns counters into per-second
LinkSamples, and `health` turns those into LinkEvents.
Each stage is a plain object owned by its caller (the embedded replay or a stream agent); none
reads a clock, a file or a socket.
"""

from .gnmic import (
    DecodeError,
    DecodeStats,
    GnmicDecoder,
    decode_message,
    iter_messages,
)
from .health import LinkHealth
from .rates import CounterRates
from .thresholds import Thresholds

__all__ = [
    "CounterRates",
    "DecodeError",
    "DecodeStats",
    "GnmicDecoder",
    "LinkHealth",
    "Thresholds",
    "decode_message",
    "iter_messages",
]
