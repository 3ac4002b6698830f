"""gNMI dial-in collector: subscribes to switches' telemetry and emits gnmic-json messages.

Each target is dialled over gRPC (TLS, or plaintext only when configured), checked with
Capabilities (or given its fallback encoding when it does not implement them), then subscribed
in STREAM mode: counters SAMPLEd at the target's interval, oper-status and LLDP neighbours
ON_CHANGE, with the paths of its platform profile (`profiles.py`, sources there). Each
notification becomes one message in gnmic's `json` format on the raw gNMI topic, keyed by
switch name, so the streaming worker decodes collector and gnmic output alike; paths in the
deprecated `element` form and timestamps in ms or s are read at this edge (`convert.py`).
Entry points: `run(targets, emit)` and `GnmiCollector`.
"""

from __future__ import annotations

from .collector import GnmiCollector, run
from .config import Backoff, Credentials, GnmiTarget, TlsSettings
from .errors import TargetFailedError
from .profiles import PROFILES, Profile
from .session import TargetStatus

__all__ = [
    "PROFILES",
    "Backoff",
    "Credentials",
    "GnmiCollector",
    "GnmiTarget",
    "Profile",
    "TargetFailedError",
    "TargetStatus",
    "TlsSettings",
    "run",
]
