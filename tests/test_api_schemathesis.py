"""Schemathesis against the API's own OpenAPI document: generated requests, valid and not,
to every operation over a replayed incident; no 5xx, and every answer in its declared shape.

Sized for CI on two cores: a few dozen examples per operation, no deadline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from api_support import replayed, token_book
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from railtrace.api import create_app
from railtrace.api.tokens import Scope
from railtrace.simulate import Fault

EXAMPLES = 40
#: Routes with a time window: they refuse windows their schema cannot describe (since after
#: until, longer than a week, outside 1970-2200) with a 422, which schemathesis's
#: positive-data check would call a valid request rejected. Every other check still runs.
WINDOWED = {"/v1/links", "/v1/links/{link_id}", "/v1/topology"}
WINDOWED_EXCLUDED = [positive_data_acceptance]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    with replayed(tmp_path_factory.mktemp("schemathesis"), 16, Fault.LINK_DOWN, 5) as (
        store,
        capture,
        _,
    ):
        book = token_book()
        # A read token: an admin one would let the fuzzer revoke tokens mid-run.
        token, _ = book.issue("schemathesis", {Scope.READ})
        yield create_app(store, book, fabric=capture.fabric), token


@pytest.fixture(scope="module")
def api_schema(served: tuple[Any, str]) -> Any:
    app, token = served
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    schema.config.update(headers={"Authorization": f"Bearer {token}"})
    return schema


def _fuzz(operation: Any) -> str | None:
    """Run one operation's examples; the failure, if any, as text."""
    excluded = WINDOWED_EXCLUDED if operation.path in WINDOWED else []

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def fuzz(case: Any) -> None:
        case.call_and_validate(excluded_checks=excluded)

    try:
        fuzz()
    except (Exception, BaseExceptionGroup) as exc:  # reported by the caller
        return f"{type(exc).__name__}: {exc}"[:3000]
    return None


def test_no_request_gets_a_server_error_or_an_undeclared_answer(api_schema: Any) -> None:
    """Every operation in turn (schemathesis's pytest plugin does not run under pytest 9);
    all operations are tried before the failures are reported together."""
    failures: dict[str, str] = {}
    tried = []
    for result in api_schema.get_all_operations():
        operation = result.ok()
        tried.append(operation.label)
        if (failure := _fuzz(operation)) is not None:
            failures[operation.label] = failure
    assert "GET /v1/links/{link_id}" in tried and "GET /v1/jobs/{job_id}/timeline" in tried
    assert not failures, "\n\n".join(f"{k}:\n{v}" for k, v in failures.items())
