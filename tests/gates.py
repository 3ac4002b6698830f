"""The one rule for tests that need a real service (a Kafka broker, net-snmp, snmpsim, Slurm,
Chromium, a ClickHouse server, openconfig's Go gNMI fake target and client): with CI set (to
anything non-empty; `.ci/run` sets CI=true) a missing service FAILS the test; without CI it
skips, so a laptop without a broker still runs the rest.

    gates.require("kafka", broker_answers, f"a Kafka broker at {BOOTSTRAP}")

The first argument is the service's pytest marker (registered in pyproject.toml). Before
looking for the service, the gate checks that the running test carries that marker: the tiers
(`pytest -m core`, `-m "not kafka"`, ...) are chosen from markers before anything runs, so a
test that reaches a gate its markers do not name is misclassified, and fails wherever it runs.
tests/conftest.py gives the markers: a test whose code (or a helper or fixture of tests/ it
uses) calls `gates.require` with a literal marker gets that marker.

A skip that is not a missing service (the environment chose not to run a test: a backend that
is not configured, a broker that is not ours to restart) goes through `deliberately`, in CI as
well, and says so in its reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

#: Markers of the real services a test may need (each registered in pyproject.toml).
SERVICES = ("kafka", "snmp", "snmpsim", "slurm", "browser", "gnmi_fake", "clickhouse_server")
#: Every marker that keeps a test out of the `core` tier.
NOT_CORE = (*SERVICES, "integration", "chdb", "e2e")
#: The prefix of every deliberate skip's reason.
DELIBERATE = "deliberate skip, not a missing service: "

#: The test running now (set by tests/conftest.py around each test's setup, call, teardown).
current: pytest.Item | None = None


def in_ci() -> bool:
    """CI mode: the CI variable is set to anything non-empty (`true`, `1`, ...)."""
    return bool(os.environ.get("CI"))


def check_marked(service: str) -> None:
    """Fail the running test unless it carries the marker of `service`."""
    if service not in SERVICES:
        raise ValueError(f"unknown service {service!r}: one of {SERVICES} (see tests/gates.py)")
    item = current
    if item is None:
        raise RuntimeError(
            f"the {service} gate was reached outside a test: call gates inside a test or "
            "fixture, so the test's markers can be checked"
        )
    if item.get_closest_marker(service) is None:
        pytest.fail(
            f"{item.nodeid} needs {service} but is not marked `{service}`, so tiers chosen by "
            f"marker misplace it (`pytest -m core` would run it). tests/conftest.py marks a "
            f"test whose code calls gates.require({service!r}, ...) with that literal; "
            f"otherwise add @pytest.mark.{service}",
            pytrace=False,
        )


def require(service: str, available: bool | Callable[[], bool], what: str) -> None:
    """Go on when `available` (a bool, or a check called after the marker check) holds;
    otherwise fail in CI and skip elsewhere, naming `what` is missing."""
    check_marked(service)
    if available() if callable(available) else available:
        return
    if in_ci():
        pytest.fail(
            f"{what} is not available, and CI is set: a test that needs {service} fails in CI "
            "rather than skipping",
            pytrace=False,
        )
    pytest.skip(f"{what} is not available ({service}; with CI set this fails)")


def deliberately(reason: str) -> None:
    """Skip, in CI as well, for a reason that is not a missing service."""
    pytest.skip(DELIBERATE + reason)


def configured(service: str, value: str | None, variable: str) -> str:
    """`value` (a service's address, from `variable`) when set; when it is not, nothing is
    configured to test against: a deliberate skip, in CI as well."""
    check_marked(service)
    if not value:
        deliberately(f"{variable} is not set, so no {service} is configured to test against")
    assert value is not None
    return value
