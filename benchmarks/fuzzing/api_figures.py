"""A run's figures (statuses, problems by kind and the first request of each, time by route),
what was measured at its end, and the summary printed from them."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from dataclasses import dataclass, field

import httpx

from .api_requests import Req
from .api_spec import Spec, decoded


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
