"""What a collector package declares about itself, so that nothing outside it has to.

A collector lives in one folder, `railtrace/collectors/<package>/`, whose `spec` module exports
`SPECS`: one `CollectorSpec` per role the package runs. `registry` finds them; the `collect`
settings section, the `railtrace collect <role>` commands and the collector process are built
from them, so adding a collector touches its own folder and nothing else.

This module is imported by the settings, so it imports no metrics or network library: a
spec's `build` imports its collector's code when the role is run.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from railtrace.collectors.health import TargetState

if TYPE_CHECKING:
    from prometheus_client.core import Metric

    from railtrace.collectors.emit import Emit
    from railtrace.collectors.metrics import CollectorMetrics

C = TypeVar("C")


@dataclass
class Role:
    """A built collector: `work()` runs it until cancelled; `families`, `targets` and
    `detail` are read on every scrape or health check."""

    work: Callable[[], Coroutine[Any, Any, Any]]
    families: Callable[[], Iterable[Metric]]
    targets: Callable[[], dict[str, TargetState]] = dict
    detail: Callable[[], dict[str, Any]] = dict


@dataclass(frozen=True)
class CollectorSpec(Generic[C]):
    """One collector role, as the settings, the command line and the collector process see it.

    `name` is everything's key: the `railtrace collect` subcommand, the `collect.<name>`
    settings section (env `RAILTRACE_COLLECT__<NAME>__...`), the `collect.metrics_listen.<name>`
    address, the spool folder and the `role` label of its metrics. `config` is the section's
    type (a pydantic model, or a list of them) and `default` makes its empty value. `families`
    names the metric families `build`'s role reports beside the shared ones (without the
    `railtrace_collector_` prefix), so they can be checked against the documentation without
    running it.
    """

    name: str
    help: str
    config: Any
    default: Callable[[], C]
    metrics_listen: str
    build: Callable[[C, Emit, CollectorMetrics], Role]
    families: tuple[str, ...]

    def section(self, collect: Any) -> C:
        """This collector's section of the `collect` settings."""
        section: C = getattr(collect, self.name)
        return section


def counter_names(table: Iterable[tuple[str, str, str]]) -> tuple[str, ...]:
    """The family names of a counter table (`metrics.counters` adds `_total` to each sample)."""
    return tuple(name for _, name, _ in table)
