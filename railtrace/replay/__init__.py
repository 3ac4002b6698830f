"""The embedded replay: a capture directory through the core into a store, on one machine.

Owns file reading; the core it drives (`railtrace.streams.pipeline`) stays I/O-free.
"""

from railtrace.replay import marker
from railtrace.replay.capture import Capture, CaptureError, open_capture
from railtrace.replay.report import ReplayReport, warnings
from railtrace.replay.runner import replay
from railtrace.replay.sinks import DiscardSink, Sink

__all__ = [
    "Capture",
    "CaptureError",
    "DiscardSink",
    "ReplayReport",
    "Sink",
    "marker",
    "open_capture",
    "replay",
    "warnings",
]
