"""Metrics read at scrape time: a prometheus_client collector that builds its families from
counters the components keep anyway, so the hot path pays nothing for them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.core import Metric


class ScrapeTime:
    """Calls `families` on every scrape and serves what it returns."""

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return list(self._families())
