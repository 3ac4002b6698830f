"""The operations the app's OpenAPI document declares, and the path a request was routed on:
what requests are generated for, checked against and counted by."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from .api_values import STANDARD_METHODS


@dataclass
class Spec:
    """The declared operations of the OpenAPI document, keyed by template then method."""

    ops: dict[str, dict[str, dict[str, Any]]]
    patterns: list[tuple[re.Pattern[str], str]]

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Spec:
        ops: dict[str, dict[str, dict[str, Any]]] = {}
        patterns: list[tuple[re.Pattern[str], str]] = []
        for template, item in doc["paths"].items():
            methods = {m.upper(): op for m, op in item.items() if m.upper() in STANDARD_METHODS}
            ops[template] = methods
            params = {
                p["name"]: p.get("schema", {})
                for op in methods.values()
                for p in op.get("parameters", [])
                if p.get("in") == "path"
            }

            def piece(m: re.Match[str], params: dict[str, Any] = params) -> str:
                pattern = str(params.get(m.group(1), {}).get("pattern", ""))
                return "(.+)" if "/" in pattern else "([^/]+)"

            regex = re.sub(r"\\\{([^}]+)\\\}", piece, re.escape(template))
            patterns.append((re.compile(f"^{regex}$"), template))
        # Templates without parameters first, as the router tries them.
        patterns.sort(key=lambda p: "{" in p[1])
        return cls(ops, patterns)

    def match(self, path: str) -> str | None:
        return next((t for pattern, t in self.patterns if pattern.match(path)), None)


def decoded(resp: httpx.Response) -> str:
    """The path the app routed on: what the ASGI transport put in the scope."""
    from urllib.parse import unquote

    return unquote(resp.request.url.path)
