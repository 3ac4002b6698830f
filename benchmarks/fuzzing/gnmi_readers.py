"""The gnmic checks: `GnmicDecoder.feed_text` over good messages among garbage messages and
lines (every good message's values and LLDP news must come out), and `decode_message` on
single JSON values (only its documented DecodeError may come out)."""

from __future__ import annotations

import functools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from railtrace.streams.telemetry import DecodeError, GnmicDecoder, decode_message
from railtrace.streams.telemetry.lldp import LldpUpdate

from .cases import Case, Item, Result, crash_of
from .corpus import ADDRESS_PREFIX, Corpus
from .encoding import text_as_read
from .mutate import junk, mutate_bytes
from .mutate_json import mutate_json


@functools.lru_cache(maxsize=20_000)
def message_alone(chunk: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The telemetry values and LLDP news of one good message read by itself."""
    lldp: list[LldpUpdate] = []
    values = GnmicDecoder().feed_text(text_as_read(chunk), "alone", lldp)
    return tuple(values), tuple(_lldp_key(u) for u in lldp)


def _lldp_key(u: LldpUpdate) -> tuple[Any, ...]:
    return (u.device, u.ts_ns, tuple(u.leaves), tuple(u.deletes), u.replace)


class GnmiReader:
    """GnmicDecoder.feed_text (iter_messages and decode_message inside) over good messages
    with garbage messages and lines between them."""

    name = "gnmi"

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = corpus.gnmi

    def generate(self, rng: random.Random, index: int) -> Case:
        k = rng.randint(1, 6)
        chosen = rng.sample(range(len(self.chunks)), k)
        origins = {self.chunks[c].origin for c in chosen}
        others = [c.text for c in rng.sample(self.chunks, 12) if c.origin not in origins] or [b"{}"]
        items = [Item(self.chunks[c].text, good=n) for n, c in enumerate(chosen)]
        for _ in range(rng.randint(0, 8)):
            roll = rng.random()
            if roll < 0.15:
                data, how = junk(rng)
            elif roll < 0.55:
                data, how = mutate_json(rng, rng.choice(others))
            else:
                data, how = mutate_bytes(rng, rng.choice(others), others)
            items.insert(rng.randint(0, len(items)), Item(data, how=how))
        return Case(self.name, index, items, {"eol": rng.choice(("\n",) * 4 + ("\r\n",))})

    def text(self, case: Case) -> str:
        eol = str(case.ctx["eol"])
        return eol.join(text_as_read(i.data).replace("\n", eol) for i in case.items) + eol

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + ".jsonl")
        out.write_bytes(self.text(case).encode("utf-8", "surrogateescape"))
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        want_values: Counter[Any] = Counter()
        want_lldp: Counter[Any] = Counter()
        for item in case.goods():
            values, updates = message_alone(item.data)
            want_values.update(values)
            want_lldp.update(updates)
        decoder = GnmicDecoder()
        lldp: list[LldpUpdate] = []
        try:
            got = decoder.feed_text(self.text(case), "fuzz.jsonl", lldp)
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
            return res
        res.dead = decoder.stats.dead_letter_count
        res.checked = len(case.goods())
        missing = want_values - Counter(got)
        missing_lldp = want_lldp - Counter(_lldp_key(u) for u in lldp)
        for value in sorted(missing, key=repr)[:3]:
            res.lost.append(f"telemetry value | {value} ({missing[value]}x)")
        for key in list(missing_lldp)[:3]:
            res.lost.append(f"lldp update | {key}")
        if missing or missing_lldp:
            reasons = [d.reason for d in decoder.stats.dead_letters[:3]]
            res.lost.append(f"dead letters | of this input | {reasons}")
        return res


class GnmiMessageReader:
    """decode_message on single JSON values, most of them gnmic messages made wrong."""

    name = "gnmi-message"

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = [c.text for c in corpus.gnmi]

    def generate(self, rng: random.Random, index: int) -> Case:
        base = rng.choice(self.chunks)
        body = ADDRESS_PREFIX.sub(b"", base)
        roll = rng.random()
        if roll < 0.1:
            data, how = base, "good"
        elif roll < 0.8:
            data, how = mutate_json(rng, body)
        else:
            data, how = mutate_bytes(rng, body, self.chunks)
        return Case(self.name, index, [Item(data, how=how)])

    def write(self, case: Case, path: Path) -> Path:
        out = path.with_name(path.name + ".json")
        out.write_bytes(case.items[0].data)
        return out

    def run(self, case: Case) -> Result:
        res = Result()
        try:
            # What every caller hands decode_message: orjson's reading of a payload.
            message = orjson.loads(case.items[0].data)
        except orjson.JSONDecodeError:
            res.dead = 1  # never a message: iter_messages / the worker dead-letter it first
            return res
        res.checked = 1
        try:
            decode_message(message)
        except DecodeError:
            res.dead = 1
        except Exception as exc:
            res.crash, res.exc = crash_of(exc)
        return res
