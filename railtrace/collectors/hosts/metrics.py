"""The host collectors' metric families, read from `ScraperStats` and `XidStats` at scrape
time (deploy/collectors/README.md documents each)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import Metric

from railtrace.collectors.metrics import counters, gauge

if TYPE_CHECKING:
    from .logscraper import LogScraper
    from .xid import XidScraper

LOGS_COUNTERS = (
    ("lines", "logs_lines", "Log lines handed to delivery."),
    ("batches", "logs_batches", "Raw-logs messages emitted."),
    ("alert_batches", "logs_alert_batches", "Messages holding a hang or error line."),
    ("files_adopted", "logs_files_adopted", "Log files taken up (found by the path globs)."),
    ("rotations", "logs_rotations", "Rename rotations followed."),
    ("truncations", "logs_truncations", "Truncations (copytruncate) followed."),
    ("lines_cut", "logs_lines_cut", "Lines longer than max_line_bytes, cut to that length."),
    ("files_without_job", "logs_files_without_job", "Files skipped: no job id found."),
    ("files_lost", "logs_files_lost", "Contents gone or cut while the collector was away."),
    ("read_errors", "logs_read_errors", "Errors reading files or expanding the globs."),
    ("emit_errors", "logs_emit_errors", "Batches delivery refused (spool not writable); retried."),
)
XID_COUNTERS = (
    ("lines", "xid_kernel_lines", "Kernel log lines read."),
    ("xids", "xid_events", "Xid lines recognised (repeats included)."),
    ("repeats", "xid_repeats", "Xid lines seen before (a restarted journalctl or dmesg)."),
    ("malformed", "xid_malformed_lines", "Kernel lines the parser could not read."),
    ("events", "xid_node_events", "Node events emitted (Xids and releases)."),
    ("quarantines", "xid_quarantines", "Quarantine decisions taken."),
    ("releases", "xid_releases", "Quarantines lifted."),
    ("source_restarts", "xid_source_restarts", "Times the kernel log command exited."),
    (
        "emit_errors",
        "xid_emit_errors",
        "Node events delivery refused (spool not writable); retried.",
    ),
)
LOGS_FILES_FOLLOWED = "logs_files_followed"
XID_QUARANTINED_NODES = "xid_quarantined_nodes"


def logs_families(role: str, scraper: LogScraper) -> Iterator[Metric]:
    """The files followed now, and the scraper's counters."""
    yield gauge(
        LOGS_FILES_FOLLOWED,
        "Log file contents open: current files and rotated ones still being read.",
        role,
        scraper.open_files(),
    )
    yield from counters(LOGS_COUNTERS, ["role"], [([role], scraper.stats)])


def xid_families(role: str, scraper: XidScraper) -> Iterator[Metric]:
    """The nodes quarantined now, and the scraper's counters."""
    yield gauge(
        XID_QUARANTINED_NODES,
        "Nodes the quarantine policy holds quarantined now.",
        role,
        len(scraper.policy.quarantined()),
    )
    yield from counters(XID_COUNTERS, ["role"], [([role], scraper.stats)])
