"""`railtrace collect logs` and `railtrace collect xid`: the two host collectors as the
registry sees them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..spec import CollectorSpec, Role, counter_names
from .config import LogScraperConfig, XidScraperConfig
from .metrics import LOGS_COUNTERS, LOGS_FILES_FOLLOWED, XID_COUNTERS, XID_QUARANTINED_NODES

if TYPE_CHECKING:
    from ..emit import Emit
    from ..metrics import CollectorMetrics


def build_logs(config: LogScraperConfig, emit: Emit, metrics: CollectorMetrics) -> Role:
    """The log scraper; /healthz shows how many files it follows."""
    from .logscraper import LogScraper
    from .metrics import logs_families

    scraper = LogScraper(config, emit)
    return Role(
        scraper.run,
        lambda: logs_families(metrics.role, scraper),
        detail=lambda: {"files_followed": scraper.open_files()},
    )


def build_xid(config: XidScraperConfig, emit: Emit, metrics: CollectorMetrics) -> Role:
    """The Xid scraper; /healthz shows its kernel log source and the nodes quarantined."""
    from .metrics import xid_families
    from .xid import XidScraper

    scraper = XidScraper(config, emit)
    return Role(
        scraper.run,
        lambda: xid_families(metrics.role, scraper),
        detail=lambda: {"source": scraper.source, "quarantined": scraper.policy.quarantined()},
    )


SPECS = (
    CollectorSpec[LogScraperConfig](
        name="logs",
        help="Follow this host's NCCL/PyTorch log files (`collect.logs.paths`), through rotation.",
        config=LogScraperConfig,
        default=LogScraperConfig,
        metrics_listen="127.0.0.1:9466",
        build=build_logs,
        families=(LOGS_FILES_FOLLOWED, *counter_names(LOGS_COUNTERS)),
    ),
    CollectorSpec[XidScraperConfig](
        name="xid",
        help="Watch this host's kernel log for GPU Xid errors and apply the quarantine policy.",
        config=XidScraperConfig,
        default=XidScraperConfig,
        metrics_listen="127.0.0.1:9467",
        build=build_xid,
        families=(XID_QUARANTINED_NODES, *counter_names(XID_COUNTERS)),
    ),
)
