"""Generated requests: every documented route and page with real, random, path-like and
encoded ids, query parameters in and out of range, mistyped, repeated and unknown, standard
and invented methods, token kinds, long and many headers, bodies. One request is a function
of (seed, index) alone, so `--index N` regenerates it."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from .api_spec import Spec
from .api_values import (
    BOOLS,
    INVENTED_METHODS,
    METRICS_SHARE,
    NUMBERS,
    OTHER_PATHS,
    PAGES,
    PATH_LIKE_IDS,
    RANDOM_METHODS,
    STANDARD_METHODS,
    STATES,
    TIMES,
    UNKNOWN_PARAMS,
)


@dataclass
class Req:
    index: int
    method: str
    path: str  # as sent, percent-encoding included
    query: str
    token: str  # read, admin, victim, expired, none, or a malformed kind
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    body: bytes = b""


@dataclass
class World:
    """What the generator draws real ids from."""

    jobs: list[str]
    links: list[str]
    nodes: list[str]
    devices: list[str]


def _enc(rng: random.Random, value: str) -> str:
    """An id as a client may put it in a path: raw, percent-encoded, or wholly encoded."""
    roll = rng.random()
    if roll < 0.5:
        return value
    if roll < 0.8:
        return quote(value, safe="")
    return "".join(f"%{b:02X}" for b in value.encode())


def _id(rng: random.Random, real: Sequence[str]) -> str:
    roll = rng.random()
    if roll < 0.45 and real:
        return rng.choice(real)
    if roll < 0.6 and real:
        base = rng.choice(real)
        return rng.choice(
            (base + "x", base[:-1], base.upper(), base + "/", base + "%2F", " " + base)
        )
    return rng.choice(PATH_LIKE_IDS)


def _value(rng: random.Random, name: str, world: World) -> str:
    if name in ("since", "until", "at"):
        return rng.choice(TIMES)
    if name == "state":
        return rng.choice(STATES)
    if name == "quarantined":
        return rng.choice(BOOLS)
    if name == "metric":
        return rng.choice(
            ("in_errors", "in_fcs_errors", "pfc_rx_pause", "in_octets", "oper_status", "", "x")
        )
    if name == "job":
        return _id(rng, world.jobs)
    if name == "device":
        return _id(rng, world.devices)
    if name == "step_s":
        return rng.choice((*NUMBERS, "60", "3600"))
    return rng.choice(NUMBERS)


QUERY_NAMES = ("since", "until", "at", "limit", "offset", "state", "metric", "step", "rail")
QUERY_NAMES_MORE = ("job", "device", "quarantined", "metrics")


def _query(rng: random.Random, params: Sequence[str], world: World) -> str:
    parts: list[str] = []
    for name in params:
        if rng.random() < 0.5:
            parts.append(f"{name}={quote(_value(rng, name, world), safe='')}")
            if rng.random() < 0.05:  # the same parameter twice
                parts.append(f"{name}={quote(_value(rng, name, world), safe='')}")
    if rng.random() < 0.1:
        name = rng.choice((*UNKNOWN_PARAMS, *QUERY_NAMES, *QUERY_NAMES_MORE))
        parts.append(f"{quote(name, safe='')}={quote(rng.choice(NUMBERS), safe='')}")
    if rng.random() < 0.02:
        parts.append(rng.choice(("&", "=", "==", "a=b=c", "%", "x", "since", "&&&")))
    rng.shuffle(parts)
    return "&".join(parts)


def _token_kind(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        return "read"
    if roll < 0.55:
        return "admin"
    if roll < 0.6:
        return "victim"
    if roll < 0.63:
        return "expired"
    if roll < 0.78:
        return "none"
    return rng.choice(
        (
            "bad:random",
            "bad:scheme-only",
            "bad:basic",
            "bad:no-scheme",
            "bad:suffix",
            "bad:prefix",
            "bad:truncated",
            "bad:other-secret",
            "bad:lowercase-scheme",
            "bad:double-space",
            "bad:long",
            "bad:latin1",
            "bad:two-headers",
            "bad:empty",
            "bad:tab",
        )
    )


def generate(rng: random.Random, index: int, spec: Spec, world: World) -> Req:
    roll = rng.random()
    if roll < 0.78:
        method = "GET"
    elif roll < 0.84:
        method = rng.choice(STANDARD_METHODS)
    else:
        method = rng.choice(INVENTED_METHODS if rng.random() < 0.5 else RANDOM_METHODS)
    target = rng.random()
    if target < 0.8:
        template = rng.choice(list(spec.ops))
        if template == "/metrics" and rng.random() > METRICS_SHARE:
            template = rng.choice([t for t in spec.ops if t != "/metrics"])
        path = _fill(rng, template, world)
        ops = spec.ops[template]
        params = sorted(
            {
                p["name"]
                for op in ops.values()
                for p in op.get("parameters", [])
                if p["in"] == "query"
            }
        )
        if method == "DELETE" and template.startswith("/v1/tokens/"):
            pass
        elif "DELETE" in ops and rng.random() < 0.5:
            method = "DELETE"
    elif target < 0.9:
        page = rng.choice(PAGES)
        path = (
            page.replace("{job}", _enc(rng, _id(rng, world.jobs)))
            .replace("{link}", _enc(rng, _id(rng, world.links)))
            .replace("{node}", _enc(rng, _id(rng, world.nodes)))
        )
        params = ["at", "device"]
    else:
        path = rng.choice(OTHER_PATHS)
        params = list(QUERY_NAMES[:3])
    if rng.random() < 0.005:
        path = "/v1/jobs/" + "a" * rng.choice((2000, 20_000)) + "/verdict"
    req = Req(index, method, path, _query(rng, params, world), _token_kind(rng))
    if rng.random() < 0.05:
        req.headers.append(("X-Long", b"x" * rng.choice((1024, 16_384, 65_536))))
    if rng.random() < 0.02:
        req.headers += [(f"X-Many-{i}", b"1") for i in range(rng.choice((50, 200)))]
    if rng.random() < 0.05:
        req.headers.append(
            rng.choice(
                (
                    ("Origin", b"https://evil.example"),
                    ("Accept", b"application/xml"),
                    ("Accept", b"*/*;q=abc"),
                    ("Content-Type", b"application/json"),
                    ("Content-Type", b"multipart/form-data; boundary="),
                    ("Accept-Encoding", b"gzip, br, zstd"),
                    ("Range", b"bytes=0-10"),
                    ("Range", b"bytes=999999999-"),
                    ("If-None-Match", b'"x"'),
                    ("X-Forwarded-For", b"1.2.3.4, <script>"),
                    ("Cookie", b"token=x"),
                    ("Host", b"evil.example"),
                    ("User-Agent", "\u00e9\u00e8".encode("latin-1")),
                    ("Transfer-Encoding", b"chunked"),
                )
            )
        )
    if method not in ("GET", "HEAD") and rng.random() < 0.5:
        req.body = rng.choice((b"{}", b'{"a": 1}', b"\x00\xff" * 100, b"x" * 100_000, b"[" * 5000))
    return req


def _fill(rng: random.Random, template: str, world: World) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == "job_id":
            return _enc(rng, _id(rng, world.jobs))
        if name == "link_id":
            return _enc(rng, _id(rng, world.links)) if rng.random() < 0.7 else _id(rng, world.links)
        if name == "name":
            return _enc(rng, _id(rng, world.nodes))
        if name == "token_id":
            return rng.choice(("0123456789ab", "ffffffffffff", "0" * 12, "xyz", "", "0" * 13))
        return _enc(rng, rng.choice(PATH_LIKE_IDS))

    return re.sub(r"\{([^}]+)\}", one, template)
