"""Fuzz run of the API: generated HTTP requests against the real app over a replayed incident.

Run: .venv/bin/python benchmarks/fuzz_api.py [--seed 1] [--requests 100000]
     [--time-limit 1800] [--nodes 16] [--failures DIR] [--index N]   (one request, verbosely)

The app is `railtrace.api.create_app` over a chDB store into which a simulated incident
(`write_capture(..., Fault.LINK_DOWN, ...)`) was replayed, with its fabric and a real token
file holding a read, an admin, an expired and a "victim" read token; halfway through the run the
victim is revoked through `DELETE /v1/tokens/{id}`, and from then on it must be refused.

Requests go through httpx's ASGI transport, in this process: the app, its middleware, routing,
validation, auth and store queries run exactly as under uvicorn, but no HTTP/1.1 parser sits in
front of it (uvicorn's h11 would answer some invented methods and malformed headers with a 400
before the app sees them), so what is fuzzed here is the app itself.

Generated: every documented route and the incident pages with real, random, path-like,
percent-encoded, over-long and empty ids; `since`/`until`/`at` as ISO-8601 with and without
zones and fractions past microseconds, dates outside 1970-2200 and outside Python's, epoch
seconds, milliseconds and nanoseconds, negative, float, huge and empty; other parameters in
and out of range, of the wrong type, repeated and unknown; unknown paths; standard and invented
HTTP methods; no token, malformed, unknown, expired, revoked and valid tokens of both scopes;
long and many headers; bodies where none is expected.

Checks, for every response: no 5xx; the status is one the OpenAPI document declares for that
operation (a method the path does not have: 405; a path no route has: 404; pages outside the
document: no 5xx); a route the document marks as needing a token never answers 2xx without a
valid one (nor an admin route to a read token). At the end: the process's RSS grew by less
than `--rss-growth-mib` after the warm-up, and `/metrics` is bounded: its labels stay within
the route templates and the HTTP methods, and its size within what that label space allows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from railtrace.api import create_app
from railtrace.api.tokens import Scope, TokenBook
from railtrace.replay import open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore

# The requests, the tables they are drawn from and the OpenAPI operations they are made for
# are in benchmarks/fuzzing/, imported from the repository root as `benchmarks.fuzzing`, the
# name mypy checks it under.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.fuzzing.api_requests import Req, World, generate
from benchmarks.fuzzing.api_spec import Spec, decoded
from benchmarks.fuzzing.api_values import STANDARD_METHODS

# ---------------------------------------------------------------------------------------------


@dataclass
class Tokens:
    read: str
    admin: str
    victim: str
    victim_id: str
    expired: str
    revoked: bool = False

    def header(self, kind: str) -> list[tuple[str, bytes]]:
        """The Authorization header(s) of a token kind."""
        valid = self.read
        table: dict[str, list[bytes]] = {
            "read": [b"Bearer " + self.read.encode()],
            "admin": [b"Bearer " + self.admin.encode()],
            "victim": [b"Bearer " + self.victim.encode()],
            "expired": [b"Bearer " + self.expired.encode()],
            "none": [],
            "bad:random": [b"Bearer rt_0123456789ab_" + b"A" * 43],
            "bad:scheme-only": [b"Bearer"],
            "bad:basic": [b"Basic dXNlcjpwYXNz"],
            "bad:no-scheme": [valid.encode()],
            "bad:suffix": [b"Bearer " + valid.encode() + b"x"],
            "bad:prefix": [b"Bearer x" + valid.encode()],
            "bad:truncated": [b"Bearer " + valid[:-1].encode()],
            "bad:other-secret": [b"Bearer " + valid.rsplit("_", 1)[0].encode() + b"_" + b"B" * 43],
            "bad:lowercase-scheme": [b"bearer " + valid.encode()],
            "bad:double-space": [b"Bearer  " + valid.encode()],
            "bad:long": [b"Bearer " + b"t" * 100_000],
            "bad:latin1": [b"Bearer \xe9\xe8" + valid.encode()],
            "bad:two-headers": [b"Bearer nonsense", b"Bearer " + valid.encode()],
            "bad:empty": [b""],
            "bad:tab": [b"Bearer\t" + valid.encode()],
        }
        return [("Authorization", v) for v in table[kind]]

    def valid(self, kind: str) -> set[Scope]:
        """The scopes a request of this kind holds: those of the live token it carries, if it
        carries one. A live token sent with odd whitespace, a lower-case scheme, no scheme or
        beside a second header is still that token: an API accepting it lets nobody in who
        does not hold it. The other kinds carry no live token and must be refused."""
        if kind in LENIENT or kind == "read":
            return {Scope.READ}
        if kind == "admin":
            return {Scope.READ, Scope.ADMIN}
        if kind == "victim" and not self.revoked:
            return {Scope.READ}
        return set()


LENIENT = frozenset(
    ("bad:lowercase-scheme", "bad:double-space", "bad:tab", "bad:no-scheme", "bad:two-headers")
)


def check(
    req: Req, resp: httpx.Response, spec: Spec, tokens: Tokens, decoded_path: str
) -> list[str]:
    problems: list[str] = []
    status = resp.status_code
    if status >= 500:
        problems.append(f"server error {status}")
    template = spec.match(decoded_path)
    if template is None:
        return problems  # pages, static files and unknown paths: only no 5xx is asked
    ops = spec.ops[template]
    op = ops.get(req.method) or (ops.get("GET") if req.method == "HEAD" else None)
    if op is None:
        if status != 405:
            problems.append(
                f"{req.method} is not an operation of {template}: got {status}, not 405"
            )
        return problems
    declared = {int(k) for k in op.get("responses", {}) if k.isdigit()}
    if req.method not in ops:
        declared.add(405)  # HEAD on a GET route: answered as GET, or refused
    if status not in declared:
        problems.append(
            f"status {status} not declared for {req.method} {template} {sorted(declared)}"
        )
    needs = _scopes_needed(op)
    if needs and 200 <= status < 300:
        held = tokens.valid(req.token)
        if not held:
            problems.append(f"unauthenticated {status} on {req.method} {template} ({req.token})")
        elif not needs <= held:
            problems.append(f"{req.token} token got {status} on admin route {template}")
    return problems


def _scopes_needed(op: dict[str, Any]) -> set[Scope]:
    if not op.get("security"):
        return set()
    tags = set(op.get("tags", []))
    return {Scope.READ, Scope.ADMIN} if "tokens" in tags else {Scope.READ}


async def send(
    client: httpx.AsyncClient, req: Req, tokens: Tokens, timeout: float
) -> httpx.Response:
    url = req.path + ("?" + req.query if req.query else "")
    headers = [(k.encode(), v) for k, v in [*tokens.header(req.token), *req.headers]]
    request = client.build_request(req.method, url, content=req.body or None)
    request.headers = httpx.Headers([*request.headers.raw, *headers])
    try:
        return await asyncio.wait_for(client.send(request), timeout)
    except TimeoutError:
        raise
    except Exception as exc:
        # The app raised: Starlette's ServerErrorMiddleware has answered 500 by then (what a
        # server sends the client), and re-raised it, which the ASGI transport passes on.
        raise AppError(exc) from exc


class AppError(Exception):
    """An exception the app raised through the ASGI transport: a 500 to the client."""

    def __init__(self, exc: Exception) -> None:
        frames = traceback.extract_tb(exc.__traceback__)
        mine = [f for f in frames if "/railtrace/" in f.filename or "/api/" in f.filename]
        last = (mine or frames)[-1] if frames else None
        at = "?" if last is None else f"{Path(last.filename).name}:{last.lineno}"
        super().__init__(f"{type(exc).__name__} at {at}: {exc}")
        self.kind = f"{type(exc).__name__} at {at}"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Figures:
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)
    failing: int = 0
    first: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    slowest: float = 0.0
    route_s: dict[str, float] = field(default_factory=dict)
    route_n: Counter[str] = field(default_factory=Counter)

    def add(
        self,
        spec: Spec,
        req: Req,
        resp: httpx.Response | None,
        problems: list[str],
        elapsed: float,
    ) -> None:
        self.requests += 1
        self.statuses[500 if resp is None else resp.status_code] += 1
        self.slowest = max(self.slowest, elapsed)
        where = (spec.match(decoded(resp)) if resp is not None else None) or "(other)"
        self.route_s[where] = self.route_s.get(where, 0.0) + elapsed
        self.route_n[where] += 1
        if problems:
            self.failing += 1
        for p in problems:
            kind = _kind(p)
            self.problems[kind] += 1
            self.first.setdefault(kind, req.index)


def _kind(problem: str) -> str:
    """A problem without its particulars, to count and group by."""
    if problem.startswith("server error 500 ("):
        return problem.split("):", 1)[0] + ")"
    return re.sub(r"\s+", " ", re.sub(r"\([^)]*\)|\[[^]]*\]", "", problem)).strip()


async def run(args: argparse.Namespace, work: Path) -> Outcome:
    """Replay the incident into a fresh store under `work`, serve it, send the requests."""
    started = time.perf_counter()
    cap = work / "cap"
    write_capture(
        cap, args.nodes, Fault.LINK_DOWN, args.capture_seed, watchdog_s=120, sample_s=args.sample_s
    )
    capture = open_capture(cap)
    store = ChdbStore(work / "data")
    try:
        store.migrate()
        replay(capture, store)
        return await _fuzz(args, work, store, capture, started)
    finally:
        store.close()


async def _fuzz(
    args: argparse.Namespace, work: Path, store: ChdbStore, capture: Any, started: float
) -> Outcome:
    book = TokenBook(work / "tokens.json")
    read, _ = book.issue("fuzz-read", {Scope.READ})
    admin, _ = book.issue("fuzz-admin", {Scope.READ, Scope.ADMIN})
    victim, victim_info = book.issue("fuzz-victim", {Scope.READ})
    expired, _ = book.issue("fuzz-expired", {Scope.READ}, expires_in=timedelta(seconds=-1))
    tokens = Tokens(read, admin, victim, victim_info.token_id, expired)
    app = create_app(store, book, fabric=capture.fabric)
    transport = httpx.ASGITransport(app=app)
    world = World(
        jobs=[j.job_id for j in store.list_jobs(limit=1000)],
        links=sorted(capture.fabric.links)[:200],
        nodes=capture.fabric.hosts()[:50],
        devices=capture.fabric.switches()[:50],
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://railtrace.test") as client:
        doc = (await client.get("/openapi.json")).json()
        spec = Spec.of(doc)
        setup_s = time.perf_counter() - started
        print(
            f"store: {args.nodes}-node incident replayed, {len(world.jobs)} jobs, "
            f"{len(capture.fabric.links)} links; {len(spec.ops)} documented paths; "
            f"set up in {setup_s:.1f} s",
            flush=True,
        )
        if args.index is not None:
            return await _one(args, client, spec, world, tokens)
        return await _all(args, client, spec, world, tokens)


async def _one(
    args: argparse.Namespace, client: httpx.AsyncClient, spec: Spec, world: World, tokens: Tokens
) -> Outcome:
    req = generate(random.Random(f"{args.seed}/api/{args.index}"), args.index, spec, world)
    resp, problems, elapsed = await exchange(client, req, spec, tokens, args.request_budget)
    print(json.dumps(_record(req, resp, problems), indent=2))
    fig = Figures()
    fig.add(spec, req, resp, problems, elapsed)
    return Outcome(fig)


def _record(req: Req, resp: httpx.Response | None, problems: list[str]) -> dict[str, Any]:
    return {
        "index": req.index,
        "method": req.method,
        "target": req.path + ("?" + req.query if req.query else ""),
        "token": req.token,
        "headers": [[k, v[:200].decode("latin-1")] for k, v in req.headers][:10],
        "body": req.body[:200].decode("latin-1"),
        "status": None if resp is None else resp.status_code,
        "response": None if resp is None else resp.content[:1000].decode("utf-8", "replace"),
        "problems": problems,
    }


async def exchange(
    client: httpx.AsyncClient, req: Req, spec: Spec, tokens: Tokens, budget: float
) -> tuple[httpx.Response | None, list[str], float]:
    """Send one request; its response (None if the app raised or hung), problems, seconds."""
    begun = time.perf_counter()
    resp: httpx.Response | None = None
    try:
        resp = await send(client, req, tokens, budget)
    except TimeoutError:
        problems = [f"hang: no answer within {budget} s"]
    except AppError as exc:
        problems = [f"server error 500 ({exc.kind}): {str(exc)[:200]}"]
    else:
        problems = check(req, resp, spec, tokens, decoded(resp))
    elapsed = time.perf_counter() - begun
    if elapsed > budget:
        problems.append(f"slow: {elapsed:.1f} s over the {budget} s budget")
    return resp, problems, elapsed


async def _all(
    args: argparse.Namespace,
    client: httpx.AsyncClient,
    spec: Spec,
    world: World,
    tokens: Tokens,
) -> Outcome:
    fig = Figures()
    failures = Path(args.failures) if args.failures else None
    out = None
    if failures is not None:
        failures.mkdir(parents=True, exist_ok=True)
        out = (failures / "api-failures.jsonl").open("w")
    warm_rss = 0.0
    warm_metrics = 0
    t0 = time.perf_counter()
    deadline = t0 + args.time_limit
    revoke_at = args.requests // 2
    for index in range(args.requests):
        if time.perf_counter() > deadline:
            break
        if index == revoke_at:
            revoked = await client.delete(
                f"/v1/tokens/{tokens.victim_id}",
                headers={"Authorization": f"Bearer {tokens.admin}"},
            )
            tokens.revoked = True
            if revoked.status_code != 204:
                fig.problems[f"revoking the victim token answered {revoked.status_code}"] += 1
        if index == args.warmup:
            warm_rss = rss_mib()
            warm_metrics = len((await client.get("/metrics", headers=_bearer(tokens))).content)
        req = generate(random.Random(f"{args.seed}/api/{index}"), index, spec, world)
        resp, problems, elapsed = await exchange(client, req, spec, tokens, args.request_budget)
        fig.add(spec, req, resp, problems, elapsed)
        if problems and out is not None:
            out.write(json.dumps(_record(req, resp, problems)) + "\n")
        if index % 10_000 == 0 and index:
            print(
                f"  {index} requests, {fig.failing} failing, RSS {rss_mib():.0f} MiB, "
                f"{index / (time.perf_counter() - t0):,.0f} requests/s",
                flush=True,
            )
    fig.seconds = time.perf_counter() - t0
    end_rss = rss_mib()
    metrics = await client.get("/metrics", headers=_bearer(tokens))
    bounded = metrics_bounds(metrics.text, spec, fig)
    if out is not None:
        out.close()
    growth = end_rss - warm_rss
    if warm_rss and growth > args.rss_growth_mib:
        fig.problems[f"RSS grew {growth:.0f} MiB after the warm-up"] += 1
    return Outcome(fig, warm_rss, end_rss, warm_metrics, len(metrics.content), bounded)


@dataclass
class Outcome:
    """A run's figures and what was measured at its end."""

    fig: Figures
    warm_rss: float = 0.0
    end_rss: float = 0.0
    warm_metrics: int = 0
    metrics_size: int = 0
    labels: str = ""
    args: argparse.Namespace = field(default_factory=argparse.Namespace)


def _bearer(tokens: Tokens) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens.read}"}


_SERIES = re.compile(r"^railtrace_api_request_seconds_count\{(.*)\}", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metrics_bounds(text: str, spec: Spec, fig: Figures) -> str:
    """Problems with /metrics: labels outside the route templates and HTTP methods, or a size
    beyond what that label space allows."""
    series = [dict(_LABEL.findall(m.group(1))) for m in _SERIES.finditer(text)]
    routes = {re.sub(r":path}", "}", s.get("route", "")) for s in series}
    methods = {s.get("method", "") for s in series}
    statuses = {s.get("status", "") for s in series}
    allowed_routes = set(spec.ops) | {"unmatched"} | set(PAGES_TEMPLATES) | {"/static"}
    problems = []
    odd_routes = sorted(routes - allowed_routes)
    if odd_routes:
        problems.append(f"route labels outside the templates: {odd_routes[:5]} ({len(odd_routes)})")
    odd_methods = sorted(methods - set(STANDARD_METHODS))
    if len(odd_methods) > 1:  # one "other" bucket would be fine
        problems.append(
            f"{len(odd_methods)} method labels beyond HTTP's ({', '.join(odd_methods[:5])}, ...): "
            "every invented method adds series"
        )
    # Histogram series: one per route x method x status, each about 20 lines.
    per_series = max((len(text) // max(len(series), 1)), 1)
    bound = len(allowed_routes) * (len(STANDARD_METHODS) + 1) * max(len(statuses), 1) * per_series
    bound = min(bound, 4 * 1024 * 1024)
    if len(text) > bound:
        problems.append(f"/metrics is {len(text):,} bytes, over the {bound:,} its labels allow")
    fig.problems.update(problems)
    counts = f"{len(routes)} routes, {len(methods)} methods, {len(statuses)} statuses"
    return f"{len(series)} series, {counts}"


PAGES_TEMPLATES = (
    "/incidents",
    "/incidents/{job_id}",
    "/links/{link_id}",
    "/cabling",
    "/nodes/{name}",
    "/openapi.json",
    "/docs",
    "/docs/oauth2-redirect",
    "/redoc",
)


def report(args: argparse.Namespace, outcome: Outcome) -> int:
    fig = outcome.fig
    growth = outcome.end_rss - outcome.warm_rss
    print()
    print(
        f"seed {args.seed}: {fig.requests} requests in {fig.seconds:.1f} s "
        f"({fig.requests / max(fig.seconds, 1e-9):,.0f}/s), slowest {fig.slowest * 1000:.0f} ms"
    )
    print(f"  statuses: {dict(sorted(fig.statuses.items()))}")
    print(f"  failing requests: {fig.failing}")
    print(
        f"  RSS: {outcome.warm_rss:.0f} MiB after {args.warmup} requests, "
        f"{outcome.end_rss:.0f} MiB at the end (+{growth:.0f} MiB, bound {args.rss_growth_mib} MiB)"
    )
    print(
        f"  /metrics: {outcome.warm_metrics:,} bytes after the warm-up, "
        f"{outcome.metrics_size:,} at the end; {outcome.labels}"
    )
    slow = sorted(fig.route_s, key=lambda r: -fig.route_s[r])[:5]
    mean = {r: fig.route_s[r] / fig.route_n[r] * 1000 for r in slow}
    print("  time by route: " + ", ".join(f"{r} {fig.route_n[r]} x {mean[r]:.1f} ms" for r in slow))
    for kind, count in fig.problems.most_common():
        first = fig.first.get(kind)
        print(
            f"  {count:>7} x {kind}" + (f"   (first: --index {first})" if first is not None else "")
        )
    short = fig.requests < args.requests
    if short:
        print(f"time limit reached after {fig.requests} of {args.requests} requests")
    if args.failures and fig.problems:
        print(f"failing requests written to {args.failures}/api-failures.jsonl")
    return 1 if fig.problems or short else 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--time-limit", type=float, default=1800.0, help="seconds for the requests")
    ap.add_argument("--nodes", type=int, default=16, help="size of the simulated incident")
    ap.add_argument("--capture-seed", type=int, default=5)
    ap.add_argument("--failures", help="directory for api-failures.jsonl: every failing request")
    ap.add_argument("--warmup", type=int, default=2000, help="requests before RSS is taken")
    ap.add_argument("--rss-growth-mib", type=float, default=256.0)
    ap.add_argument("--request-budget", type=float, default=10.0, help="seconds one may take")
    ap.add_argument("--index", type=int, help="send only this request, and show it")
    ap.add_argument("--sample-s", type=int, default=10, help="the incident's telemetry interval")
    return ap


def fuzz(argv: Sequence[str]) -> Outcome:
    """One run with these command-line arguments, in a temporary directory."""
    args = parser().parse_args(argv)
    args.warmup = min(args.warmup, max(args.requests // 10, 1))
    work = Path(tempfile.mkdtemp(prefix="railtrace-fuzz-api-"))
    try:
        outcome = asyncio.run(run(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    outcome.args = args
    return outcome


def main() -> int:
    outcome = fuzz(sys.argv[1:])
    if outcome.args.index is not None:
        return 1 if outcome.fig.problems else 0
    return report(outcome.args, outcome)


if __name__ == "__main__":
    sys.exit(main())
