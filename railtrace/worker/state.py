"""Per-key state objects kept in memory and restored from a Faust table's values.

The table (with its changelog topic) is what a restarted or rebalanced worker recovers; the
objects are rebuilt from it the first time a key is seen again. Tables use the same bytes key
as the source topic and the default partitioner, so a key's state sits in the changelog
partition with the same number as its input partition. Saving is the owner's: a key's value
may hold more than this cache's part (`worker.processor` keeps a job's parsers and view in
one value, so that a restart can never find one ahead of the other).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

import orjson

T = TypeVar("T")
log = logging.getLogger(__name__)


class _Table(Protocol):
    def get(self, key: bytes, /) -> bytes | None: ...


class SnapshotCache(Generic[T]):
    """Objects by key, restored from their last snapshot when first touched."""

    def __init__(
        self,
        table: _Table,
        new: Callable[[bytes], T],
        restore: Callable[[dict[str, Any]], T],
    ) -> None:
        self._table = table
        self._new, self._restore = new, restore
        self._live: dict[bytes, T] = {}
        self.unreadable = 0

    def get(self, key: bytes) -> T:
        """The live object, else the one restored from the key's value, else a new one. A
        snapshot that cannot be read (damaged, or of an unknown version) is logged and
        counted, and the key starts afresh: one bad value must not stop the agent that owns
        it."""
        obj = self._live.get(key)
        if obj is None:
            saved = self._table.get(key)
            obj = None
            if saved:
                try:
                    obj = self._restore(orjson.loads(saved))
                except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError included
                    self.unreadable += 1
                    log.error("unreadable snapshot", extra={"key": key, "reason": str(exc)})
            if obj is None:
                obj = self._new(key)
            self._live[key] = obj
        return obj

    def live_keys(self) -> list[bytes]:
        """The keys with a live object."""
        return list(self._live)

    def forget(self, keys: Iterable[bytes]) -> None:
        """Drop the live objects of `keys` (their partition moved to another worker): if it
        comes back, they are restored from the table, which has what the other worker did."""
        for key in keys:
            self._live.pop(key, None)
