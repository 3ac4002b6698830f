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
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# The harness itself is the package benchmarks/fuzzing/ (api_values, api_requests, api_spec,
# api_checks, api_run, api_figures); this file is its command line. It is imported from the
# repository root as `benchmarks.fuzzing`, the name mypy checks it under.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.fuzzing.api_figures import Outcome, report
from benchmarks.fuzzing.api_run import run


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
