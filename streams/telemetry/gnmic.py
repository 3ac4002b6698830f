"""gnmic's `json` and `event` output decoded into TelemetryValues.

The two formats carry the same gNMI notification differently (gnmic pkg/formatters/json.go and
event.go). `json`: one object per notification with `source`, `timestamp` (int ns), `prefix`
and `updates: [{"Path": <xpath with keys, relative to prefix>, "values": {<path>: <value>}}]`,
where a subtree update keeps its JSON object as the value. `event`: an array of events per
notification (or one object per event with `split-events`), each with `timestamp`, `tags`
(list keys as `<element>_<key>`, plus `source` and `subscription-name`) and `values` keyed by
the full path without keys, subtrees already flattened (lists as `<element>.N`). The format is
told per message, so one file or topic may mix both.

Both end in the same walk, compiled (`walk/src/lib.rs`): each leaf's full path resolved against
the table in `paths.py` (`leaves.resolve`); the event format's tags fill in what its key-less
paths lack. The walk calls the rules written here for stamps, sources and event paths.
`decode_message` makes TelemetryValues of the leaves; `fold_message`, the telemetry stage's
hot path, folds them into a device's rates and link health without making any (walk/README.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..records import LATEST_NS, DeadLetter, TelemetryValue
from ._walk import HealthCore, Part, RatesCore, Walker
from .framing import MAX_RAW_BYTES, is_event, iter_messages
from .leaves import INTERFACE_TAGS, KEY_LEAVES, MAX_DEPTH, keyed_path, resolve
from .lldp import LldpUpdate, deleted_neighbours, neighbour_leaf
from .stamps import EARLIEST_PLAUSIBLE_NS as _EARLIEST_NS
from .stamps import StampError, StampUnit, read_stamp
from .values import DECIMAL_KEYS, TYPED_KEYS, convert
from .xpath import PATH_CACHE_SIZE, device_of

__all__ = [
    "DecodeError",
    "DecodeStats",
    "GnmicDecoder",
    "decode_message",
    "decode_with_lldp",
    "iter_messages",
]


class DecodeError(ValueError):
    """A message that is JSON but not a usable gnmic notification; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class DecodeStats:
    """What a decoder has seen, for its metrics endpoint and for tests.

    `unknown_paths` counts leaves railtrace has no use for (normal: subscriptions are broad);
    `unattributed` counts known leaves with no interface name; `bad_values` counts known
    leaves whose value is not a number (or, for oper-status, a string). `pathless` counts
    values at an empty path: gnmic prints a target's deprecated `Path.element` paths as `/`,
    so their names are lost before railtrace sees them. `retimed` counts the messages
    stamped in another unit than nanoseconds, by unit (`us`, `ms`, `s`), read in that unit.
    """

    messages: int = 0
    values: int = 0
    unknown_paths: int = 0
    unattributed: int = 0
    bad_values: int = 0
    pathless: int = 0
    retimed: Counter[str] = field(default_factory=Counter)
    dead_letter_count: int = 0
    #: Every DeadLetter not yet taken: the owner drains them (`take_dead_letters`) as it
    #: stores them, so that all are stored and memory stays bounded by what one input holds.
    dead_letters: list[DeadLetter] = field(default_factory=list)

    def dead_letter(self, letter: DeadLetter) -> None:
        self.dead_letter_count += 1
        self.dead_letters.append(letter)

    def take_dead_letters(self) -> list[DeadLetter]:
        taken, self.dead_letters = self.dead_letters, []
        return taken


def _timestamp(value: Any) -> tuple[int, StampUnit]:
    """A message's time in ns and the unit it was sent in (see `stamps`: a switch that stamps
    in milliseconds or seconds is read as such, never as a moment of 1970)."""
    if type(value) is int and value > 0:
        return _in_range(value)
    if isinstance(value, str) and value.isdecimal() and len(value) < 30 and int(value) > 0:
        return _in_range(int(value))
    if value is None:
        raise DecodeError("missing timestamp")
    shown = repr(value)[:40] if isinstance(value, str | int | float) else type(value).__name__
    raise DecodeError(f"timestamp is not a positive integer of nanoseconds: {shown}")


def _in_range(stamp: int) -> tuple[int, StampUnit]:
    if _EARLIEST_NS <= stamp < LATEST_NS:  # the common case, without the general reading
        return stamp, StampUnit.NS
    try:
        return read_stamp(stamp)
    except StampError as exc:
        raise DecodeError(f"{exc}: a wrong clock, or no time at all") from None


def _device(source: Any) -> str:
    if not isinstance(source, str) or not source.strip():
        raise DecodeError("missing source")
    # A name read from bytes that were not UTF-8 (U+FFFD after decoding with `replace`), or
    # one with control characters, is no device of any plan: it would appear as a phantom
    # switch whose every port is unknown.
    if "\ufffd" in source or not source.isprintable():
        raise DecodeError(f"source {source!r} is not a device name: not UTF-8, or control bytes")
    return device_of(source)


def _event_path(key: str, values: dict[str, Any]) -> str:
    """Put back the list keys gnmic's flattener replaced by `.N` (`interface.0` -> `[name=..]`).

    The keys are the entry's own key leaves among the same event's values. An element is left
    alone when it has none: `Ethernet0.100` is a sub-interface's name, not a list index.
    """
    elements = key.split("/")
    for i, element in enumerate(elements):
        base, dot, index = element.rpartition(".")
        if dot and base and index.isdigit():
            entry = "/".join(elements[: i + 1])
            keys = {k: values[f"{entry}/{k}"] for k in KEY_LEAVES if f"{entry}/{k}" in values}
            if keys and (keyed := keyed_path(base, keys)) is not None:
                elements[i] = keyed
    return "/".join(elements)


#: The walk of a message's notifications and leaves, compiled (`walk/src/lib.rs`); the rules it
#: calls for what paths, values, stamps and sources mean are the Python ones here and in
#: `leaves`, `values` and `lldp`.
_WALKER = Walker(
    resolve=resolve,
    is_event=is_event,
    convert=convert,
    timestamp=_timestamp,
    device=_device,
    event_path=_event_path,
    keyed_path=keyed_path,
    neighbour_leaf=neighbour_leaf,
    deleted_neighbours=deleted_neighbours,
    value_type=TelemetryValue,
    error_type=DecodeError,
    ns_unit=StampUnit.NS,
    typed_keys=TYPED_KEYS,
    decimal_keys=DECIMAL_KEYS,
    key_leaves=KEY_LEAVES,
    interface_tags=INTERFACE_TAGS,
    max_depth=MAX_DEPTH,
    earliest_ns=_EARLIEST_NS,
    latest_ns=LATEST_NS,
    cache_size=PATH_CACHE_SIZE,
)


def _parts(message: Any) -> list[Part]:
    """One Part per notification of `message`: a json-format message is one, an event array
    one per event; a sync-response or a message of extensions alone, none."""
    return _WALKER.parts(message)


def decode_message(message: Any, stats: DecodeStats | None = None) -> list[TelemetryValue]:
    """The TelemetryValues of one gnmic message (json or event format, told apart here).

    A sync-response or a message with nothing but extensions yields nothing. Raises
    DecodeError for a malformed message; nothing of it is kept or counted then. Leaves
    railtrace has no use for are counted in `stats`, if given.
    """
    return _values(_parts(message), stats)


def decode_with_lldp(
    message: Any, stats: DecodeStats | None = None
) -> tuple[list[TelemetryValue], list[LldpUpdate]]:
    """The TelemetryValues of one gnmic message and the LLDP neighbour news in it, from one
    walk of the message; DecodeError and `stats` as for `decode_message`."""
    parts = _parts(message)
    return _values(parts, stats), _lldp_news(parts)


def fold_message(
    message: Any,
    rates: RatesCore,
    health: HealthCore,
    route: Callable[[str, str], tuple[str, int]],
    samples: dict[int, list[Any]],
    events: list[Any],
    stats: DecodeStats,
) -> tuple[int, int | None, list[LldpUpdate]]:
    """One gnmic message's values folded into `rates` and `health` as they are walked
    (`Normalizer.fold_message` says what goes where); its leaves counted in `stats` as
    `decode_message` counts them. Returns the number of values, the last one's stamp and the
    LLDP neighbour news, as `decode_with_lldp` gives it."""
    values, last_ns, parts = _WALKER.fold(message, rates, health, route, samples, events)
    _count(parts, stats)
    return values, last_ns, _lldp_news(parts)


def _values(parts: list[Part], stats: DecodeStats | None) -> list[TelemetryValue]:
    out: list[TelemetryValue] = []
    for part in parts:
        out.extend(part.out)
    if stats is not None:
        _count(parts, stats)
    return out


def _count(parts: list[Part], stats: DecodeStats) -> None:
    """The leaves of `parts` that made no value, and their stamps in other units than ns."""
    for part in parts:
        stats.unknown_paths += part.unknown
        stats.unattributed += part.unattributed
        stats.bad_values += part.bad
        stats.pathless += part.pathless
        if part.unit is not StampUnit.NS:
            stats.retimed[part.unit] += 1


def _lldp_news(parts: list[Part]) -> list[LldpUpdate]:
    """The LLDP neighbour news of each notification that has some."""
    return [
        LldpUpdate(p.device, p.ts_ns, p.lldp or [], p.lldp_deletes or [])
        for p in parts
        if p.lldp or p.lldp_deletes
    ]


def _raw(message: Any) -> bytes:
    """A bad message's bytes for its dead letter, bounded; orjson refuses over 255 levels."""
    try:
        return orjson.dumps(message)[:MAX_RAW_BYTES]
    except orjson.JSONEncodeError:
        return b"(a JSON value nested too deeply to show)"


class GnmicDecoder:
    """Text gnmic wrote (a file, a stdout capture, Kafka payloads) in, TelemetryValues out.

    Owned by whoever reads the input; holds nothing but its running DecodeStats.
    """

    def __init__(self) -> None:
        self.stats = DecodeStats()

    def feed_text(
        self, text: str, source: str, lldp: list[LldpUpdate] | None = None
    ) -> list[TelemetryValue]:
        """Decode every message in `text`; bad chunks and messages become DeadLetters. With
        `lldp`, the LLDP neighbour news in the messages is appended to it."""
        out: list[TelemetryValue] = []
        for item in iter_messages(text, source):
            if isinstance(item, DeadLetter):
                self.stats.dead_letter(item)
                continue
            self.stats.messages += 1
            try:
                values, updates = decode_with_lldp(item, self.stats)
            except DecodeError as exc:
                self.stats.dead_letter(
                    DeadLetter(source, f"malformed message: {exc.reason}", _raw(item))
                )
                continue
            out.extend(values)
            if lldp is not None:
                lldp.extend(updates)
        self.stats.values += len(out)
        return out
