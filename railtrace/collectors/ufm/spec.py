"""`railtrace collect ufm`: the UFM collector as the registry sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..health import TargetState
from ..spec import CollectorSpec, Role, counter_names
from .config import UfmCollectorConfig
from .metrics import ENDPOINT_UP, UFM_COUNTERS, UNMAPPED_GUIDS

if TYPE_CHECKING:
    from ..emit import Emit
    from ..metrics import CollectorMetrics


def build(config: UfmCollectorConfig, emit: Emit, metrics: CollectorMetrics) -> Role:
    """The poller of every endpoint, naming ports from the switches file (read once, here,
    so a bad file stops the collector at start rather than at its first poll)."""
    from .collector import UfmCollector
    from .metrics import ufm_families
    from .names import load_switches

    if config.switches is None:
        raise ValueError("collect.ufm has no endpoints and no switches file to name them")
    collector = UfmCollector(
        config, load_switches(config.switches, config.interface_template), emit
    )

    def targets() -> dict[str, TargetState]:
        return {
            name: TargetState(
                s.down_since, "up" if s.down_since is None else "down", s.last_error or ""
            )
            for name, s in collector.stats.items()
        }

    return Role(collector.run, lambda: ufm_families(metrics.role, collector), targets)


SPECS = (
    CollectorSpec[UfmCollectorConfig](
        name="ufm",
        help="Poll the `collect.ufm` UFM Telemetry endpoints (InfiniBand counters over HTTP).",
        config=UfmCollectorConfig,
        default=UfmCollectorConfig,
        metrics_listen="127.0.0.1:9468",
        build=build,
        families=(ENDPOINT_UP, UNMAPPED_GUIDS, *counter_names(UFM_COUNTERS)),
    ),
)
