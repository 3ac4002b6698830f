"""Why a collector process stops on its own, which `railtrace collect` reports and exits on."""

from __future__ import annotations


class CollectorFailedError(Exception):
    """The collector has nothing left to collect from (every target failed for good, or none
    is configured): the process ends with this message and a non-zero exit status, so that a
    supervisor restarts it or a person looks, rather than it idling as if healthy."""
