"""`railtrace serve` as a newcomer runs it: the README's and the demo's own commands, word for
word, in real processes, and what the incident and link pages then get from the API."""

from __future__ import annotations

import json
import shutil
import stat
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_support import get_json, invoke, serving

from railtrace.replay.plan import PLAN_DIR
from railtrace.store import read_owner

#: Every test here stands on a simulated, replayed demo in an embedded store.
pytestmark = [pytest.mark.e2e, pytest.mark.chdb]


@dataclass(frozen=True)
class Demo:
    workdir: Path
    truth: dict[str, Any]
    job: str  #: the job the demo's fault stalled

    @property
    def data(self) -> Path:
        return self.workdir / "data"

    @property
    def capture(self) -> Path:
        return self.workdir / "capture"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """`railtrace demo`, small: a link goes down under one job."""
    workdir = tmp_path_factory.mktemp("newcomer") / "railtrace-demo"
    result = invoke("demo", "--workdir", workdir, "--nodes", 2, "--seed", 5)
    assert result.exit_code == 0, result.output
    truth = json.loads((workdir / "capture" / "truth.json").read_text())
    stalled = [job for job, t in truth["jobs"].items() if t["state"] == "stalled"]
    assert len(stalled) == 1, truth["jobs"]
    return Demo(workdir, truth, stalled[0])


def _token(data: Path) -> str:
    owner = read_owner(data)
    assert owner is not None and owner.api_token
    return owner.api_token


def _status(url: str, token: str) -> int:
    try:
        get_json(url, token)
    except urllib.error.HTTPError as exc:
        return exc.code
    return 200


@pytest.fixture(scope="module")
def served_as_documented(demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`railtrace serve --data railtrace-demo/data`, exactly as the demo's "Next:" says."""
    with serving(demo.data, tmp_path_factory.mktemp("serve")) as server:
        yield server.url


def test_serve_as_the_demo_says_draws_the_job_fabric_with_no_setting(
    demo: Demo, served_as_documented: str
) -> None:
    doc = get_json(f"{served_as_documented}/v1/topology?job={demo.job}", _token(demo.data))
    assert demo.truth["fault_link"]["id"] in {link["id"] for link in doc["links"]}


def test_serve_as_the_demo_says_answers_the_culprit_link_page(
    demo: Demo, served_as_documented: str
) -> None:
    link = demo.truth["fault_link"]["id"]
    doc = get_json(f"{served_as_documented}/v1/links/{link}", _token(demo.data))
    assert doc["id"] == link
    assert {j["job_id"]: j["blamed"] for j in doc["jobs"]}[demo.job] is True


def test_replay_keeps_the_capture_plan_private_beside_the_store(demo: Demo) -> None:
    kept = demo.data / PLAN_DIR
    assert (kept / "cables.csv").read_bytes() == (demo.capture / "cables.csv").read_bytes()
    assert (kept / "hosts.csv").read_bytes() == (demo.capture / "hosts.csv").read_bytes()
    assert stat.S_IMODE((kept / "cables.csv").stat().st_mode) == 0o600


def test_serve_topology_option_gives_the_fabric_to_a_store_without_a_plan(
    demo: Demo, tmp_path: Path
) -> None:
    """A store filled live (the sink) keeps no plan: `--topology` is what gives it one."""
    data = tmp_path / "data"
    assert invoke("replay", demo.capture, "--data", data).exit_code == 0
    shutil.rmtree(data / PLAN_DIR)
    with serving(data, tmp_path) as bare:
        url = f"{bare.url}/v1/topology?job={demo.job}"
        assert _status(url, _token(data)) == 503
    with serving(data, tmp_path, "--topology", demo.capture) as given:
        assert _status(f"{given.url}/v1/topology?job={demo.job}", _token(data)) == 200


def test_demo_refuses_to_delete_the_store_a_running_serve_holds(
    demo: Demo, served_as_documented: str
) -> None:
    """Last in this module: without the refusal it would delete the store the tests above use."""
    result = invoke("demo", "--workdir", demo.workdir, "--nodes", 2, "--seed", 6)
    assert result.exit_code == 1, result.output
    said = " ".join(result.stderr.split())
    owner = read_owner(demo.data)
    assert owner is not None
    assert f"in use by process {owner.pid}, serving {served_as_documented}" in said
    assert "Traceback" not in result.output
    assert json.loads((demo.capture / "truth.json").read_text())["seed"] == 5
    doc = get_json(f"{served_as_documented}/v1/jobs/{demo.job}/verdict", _token(demo.data))
    assert doc["state"] == "stalled"
