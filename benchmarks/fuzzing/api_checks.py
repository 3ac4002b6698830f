"""What every response is checked for (no 5xx, a status the document declares, no 2xx without
the live token a secured route needs), what each token kind may do, and the bounds /metrics
must keep at the end of a run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from railtrace.api.tokens import Scope

from .api_figures import Figures
from .api_requests import Req
from .api_spec import Spec
from .api_values import STANDARD_METHODS


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
