"""Types of the compiled walk, rates and link health (streams/telemetry/walk/src), for mypy."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..records import LinkSample, Metric, TelemetryValue
from .lldp import LldpLeaf
from .stamps import StampUnit

class Part:
    """One notification's leaves: its stamp, device and tags, the values made of them and the
    counts of leaves that made none."""

    @property
    def ts_ns(self) -> int: ...
    @property
    def unit(self) -> StampUnit: ...
    @property
    def device(self) -> str: ...
    @property
    def tags(self) -> dict[str, Any]: ...
    @property
    def out(self) -> list[TelemetryValue]: ...
    @property
    def unknown(self) -> int: ...
    @property
    def unattributed(self) -> int: ...
    @property
    def bad(self) -> int: ...
    @property
    def pathless(self) -> int: ...
    @property
    def lldp(self) -> list[LldpLeaf] | None: ...
    @property
    def lldp_deletes(self) -> list[tuple[str | None, str | None]] | None: ...

class Walker:
    def __init__(
        self,
        *,
        resolve: Callable[[str], Any],
        is_event: Callable[[dict[str, Any]], bool],
        convert: Callable[[Any, Any], Any],
        timestamp: Callable[[Any], tuple[int, StampUnit]],
        device: Callable[[Any], str],
        event_path: Callable[[str, dict[str, Any]], str],
        keyed_path: Callable[[str, dict[str, Any]], str | None],
        neighbour_leaf: Callable[[str, Any, dict[str, Any]], LldpLeaf | None],
        deleted_neighbours: Callable[[str, dict[str, Any]], tuple[str | None, str | None] | None],
        value_type: type[TelemetryValue],
        error_type: type[Exception],
        ns_unit: StampUnit,
        typed_keys: Iterable[str],
        decimal_keys: Iterable[str],
        key_leaves: Iterable[str],
        interface_tags: Iterable[str],
        max_depth: int,
        earliest_ns: int,
        latest_ns: int,
        cache_size: int,
    ) -> None: ...
    def parts(self, message: Any) -> list[Part]: ...
    def fold(
        self,
        message: Any,
        rates: RatesCore,
        health: HealthCore,
        route: Callable[[str, str], tuple[str, int]],
        samples: dict[int, list[Any]],
        events: list[Any],
    ) -> tuple[int, int | None, list[Part]]: ...

class RatesCore:
    def __init__(
        self,
        wrap_max_fraction: float,
        reset_quiet_s: float,
        metrics: Iterable[tuple[Metric, bool, bool]],
    ) -> None: ...
    def update(
        self, value: TelemetryValue, sample_type: type[LinkSample]
    ) -> tuple[LinkSample | None, int | float | None]: ...
    def stats(self) -> tuple[int, int, int, int]: ...
    def set_stats(self, samples: int, wraps: int, resets: int, out_of_order: int) -> None: ...
    def rows(self) -> list[tuple[str, str, Metric, str, int, int | float, int | None]]: ...
    def load(
        self, rows: Iterable[tuple[str, str, Metric, str, int, int | float, int | None]]
    ) -> None: ...

class HealthCore:
    def __init__(self, thresholds: Any, metrics: Iterable[tuple[Metric, bool, bool]]) -> None: ...
    def sample(self, sample: LinkSample) -> list[Any]: ...
    def oper(self, ts_ns: int, device: str, interface: str, state: str) -> list[Any]: ...
    def rows(self) -> dict[str, list[tuple[Any, ...]]]: ...
    def load(self, part: str, row: tuple[Any, ...]) -> None: ...

def normalize(
    rates: RatesCore,
    health: HealthCore,
    values: Sequence[TelemetryValue],
    sample_type: type[LinkSample],
    samples: list[LinkSample],
    events: list[Any],
) -> None: ...
