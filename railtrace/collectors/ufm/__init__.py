"""The UFM collector: NVIDIA Quantum InfiniBand switch counters from UFM Telemetry.

Quantum switches publish no gNMI path list; their port counters come from NVIDIA UFM
Telemetry, which serves its latest sample over HTTP in Prometheus text. This collector polls
those endpoints (`collector`), reads the text line by line (`prometheus`), names each
(node GUID, port) from a CSV (`names`) and translates the counters into raw gNMI messages with
OpenConfig paths (`convert`): UFM data in gNMI's raw format, not gNMI, so the streaming
worker needs nothing new. The settings import `config`, so this package imports no HTTP
client: `collector` (aiohttp) is imported by the role builder only when the role runs.
"""

from .config import UfmCollectorConfig, UfmEndpoint
from .names import SwitchNames, SwitchNamesError, load_switches, parse_switches_csv

__all__ = [
    "SwitchNames",
    "SwitchNamesError",
    "UfmCollectorConfig",
    "UfmEndpoint",
    "load_switches",
    "parse_switches_csv",
]
