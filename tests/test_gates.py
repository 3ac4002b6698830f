"""The tiers' own rules, run on a small test project with this directory's conftest.py and
gates.py and pyproject.toml's markers, in a pytest of its own: a missing service skips without
CI and fails with it, a deliberate skip stays a skip, a gate reached by a test not marked for
it fails, and a core test that starts a process, connects or opens a chDB store fails."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
OUTCOME = re.compile(r"test_project\.py::(\w+) (PASSED|FAILED|SKIPPED|ERROR)")

PROJECT = """
import contextlib
import importlib
import os
import subprocess

import gates

SNMP = "snmp"  # a name, not a literal, at the call below: nothing marks that test snmp


def test_a_missing_service():
    gates.require("kafka", False, "a broker that is not there")


def test_a_present_service():
    gates.require("kafka", lambda: True, "a broker that is there")


def test_a_gate_the_markers_do_not_name():
    gates.require(SNMP, True, "net-snmp")


def test_a_deliberate_skip():
    gates.deliberately("nothing is configured to test against")


def test_a_core_test_that_starts_a_process():
    os.system("true")


def test_a_core_test_that_connects():
    sock = getattr(importlib.import_module("_socket"), "socket")()
    with contextlib.suppress(OSError):  # refused or not: the attempt is what counts
        sock.connect(("127.0.0.1", 9))
    sock.close()


def test_a_core_test_that_opens_a_store(tmp_path):
    from railtrace.store import chdb_store

    chdb_store._open_session(str(tmp_path))


def test_a_process_in_an_integration_test():
    subprocess.run(["true"], check=True)


def test_pure():
    assert sorted([3, 1, 2]) == [1, 2, 3]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    for name in ("conftest.py", "gates.py"):
        shutil.copy(TESTS / name, pytester.path / name)
    ini = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]
    markers = "\n".join(f"    {m}" for m in ini["ini_options"]["markers"])
    pytester.makefile(
        ".ini", pytest=f"[pytest]\naddopts = --strict-markers -rs -p no:cacheprovider\n"
        f"markers =\n{markers}\n"
    )  # fmt: skip
    pytester.makepyfile(test_project=PROJECT)
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """test name -> PASSED / FAILED / SKIPPED, from `-v` lines."""
    lines = (OUTCOME.match(line) for line in result.outlines)
    return {m[1]: m[2] for m in lines if m}


def _run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> dict[str, Any]:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    result = project.runpytest_subprocess("-v", timeout=300)
    return {"outcomes": _outcomes(result), "text": result.stdout.str()}


COMMON = {
    "test_a_present_service": "PASSED",
    "test_a_gate_the_markers_do_not_name": "FAILED",
    "test_a_deliberate_skip": "SKIPPED",
    "test_a_core_test_that_starts_a_process": "FAILED",
    "test_a_core_test_that_connects": "FAILED",
    "test_a_core_test_that_opens_a_store": "FAILED",
    "test_a_process_in_an_integration_test": "PASSED",
    "test_pure": "PASSED",
}


def test_without_ci_a_missing_service_skips(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(project, monkeypatch, None)
    assert run["outcomes"] == {**COMMON, "test_a_missing_service": "SKIPPED"}, run["text"]
    assert "a broker that is not there is not available (kafka; with CI set" in run["text"]
    assert "deliberate skip, not a missing service: nothing is configured" in run["text"]
    assert "needs snmp but is not marked `snmp`" in run["text"]
    assert "is in the core tier but started a process" in run["text"]
    assert "chdb.session.Session" in run["text"]
    assert "socket.connect" in run["text"]
    assert "os.system" in run["text"]


@pytest.mark.parametrize("ci", ["true", "1"])
def test_with_ci_set_a_missing_service_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    run = _run(project, monkeypatch, ci)
    assert run["outcomes"] == {**COMMON, "test_a_missing_service": "FAILED"}, run["text"]
    assert "a broker that is not there is not available, and CI is set" in run["text"]


def test_the_tiers_are_read_from_what_the_code_uses(project: pytest.Pytester) -> None:
    core = project.runpytest_subprocess("--collect-only", "-q", "-m", "core", timeout=300)
    kafka = project.runpytest_subprocess("--collect-only", "-q", "-m", "kafka", timeout=300)
    integration = project.runpytest_subprocess(
        "--collect-only", "-q", "-m", "integration", timeout=300
    )

    def names(result: pytest.RunResult) -> set[str]:
        return {line.split("::")[1] for line in result.outlines if "::" in line}

    assert names(kafka) == {"test_a_missing_service", "test_a_present_service"}
    assert names(integration) == {"test_a_process_in_an_integration_test"}
    assert names(core) == {
        "test_a_gate_the_markers_do_not_name",
        "test_a_deliberate_skip",
        "test_a_core_test_that_starts_a_process",
        "test_a_core_test_that_connects",
        "test_a_core_test_that_opens_a_store",
        "test_pure",
    }
