"""A run against the app: the incident replayed into a fresh chDB store, the app served over
httpx's ASGI transport with real tokens, the requests sent (the victim token revoked halfway),
each response checked, and RSS and /metrics measured after the warm-up and at the end."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from railtrace.api import create_app
from railtrace.api.tokens import Scope, TokenBook
from railtrace.replay import open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore

from .api_checks import Tokens, check, metrics_bounds
from .api_figures import Figures, Outcome
from .api_requests import Req, World, generate
from .api_spec import Spec, decoded


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


def _bearer(tokens: Tokens) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens.read}"}
