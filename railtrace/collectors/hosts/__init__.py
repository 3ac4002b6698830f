"""Collectors that run on the GPU hosts: the jobs' NCCL / PyTorch log files (`logscraper`)
and the kernel's NVIDIA Xid errors (`xid`), with the quarantine policy that turns Xids into
decisions about the node (`quarantine`, pure).

Like every collector they never talk to Kafka: they build raw messages and hand them to an
`Emit` (railtrace.collectors.emit). Their settings are the pydantic models of `config`.
"""

from railtrace.collectors.hosts.config import (
    CountRule,
    LogScraperConfig,
    QuarantineConfig,
    XidScraperConfig,
)
from railtrace.collectors.hosts.logscraper import LogScraper, source_name
from railtrace.collectors.hosts.logscraper import run as run_logs
from railtrace.collectors.hosts.quarantine import Decision, QuarantinePolicy, XidObservation
from railtrace.collectors.hosts.xid import XidScraper
from railtrace.collectors.hosts.xid import run as run_xid

__all__ = [
    "CountRule",
    "Decision",
    "LogScraper",
    "LogScraperConfig",
    "QuarantineConfig",
    "QuarantinePolicy",
    "XidObservation",
    "XidScraper",
    "XidScraperConfig",
    "run_logs",
    "run_xid",
    "source_name",
]
