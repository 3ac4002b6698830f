"""The `railtrace` command line, end to end: one simulated incident, replayed into a store, asked
about in process (CliRunner) and, where a second process is the point, through real processes:
`serve` holds the chDB directory and `verdict` in another process reads through its API."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_support import (
    Server,
    get_json,
    invoke,
    railtrace_command,
    run_process,
    serving,
    stop,
    subprocess_env,
)
from click.testing import Result

from railtrace import __version__
from railtrace.cli.capture import DEMO_MARK
from railtrace.replay.marker import MARKER_FILE
from railtrace.store import read_owner
from railtrace.store.chdb_store import ChdbStore
from railtrace.store.owner import Owner, owner_path


def _flat(text: str) -> str:
    """Whitespace collapsed, so rich's line breaks do not matter to the assertions."""
    return " ".join(text.split())


def _ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def _refused(result: Result, code: int | None = None) -> str:
    """Assert the command failed on purpose (an error message, no traceback); its stderr."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), f"crashed: {result.exception!r}"
    if code is not None:
        assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return _flat(result.stderr)


def _json(text: str) -> Any:
    return json.loads(text)


# --- one incident, replayed once for the module ---------------------------------------------


@dataclass(frozen=True)
class Incident:
    capture: Path
    data: Path
    truth: dict[str, Any]
    job: str  #: the one job the simulated fault stalled


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Incident:
    base = tmp_path_factory.mktemp("incident")
    capture, data = base / "capture", base / "data"
    sim = "simulate", capture, "--nodes", 64, "--fault", "link-down", "--seed", 3
    _ok(invoke(*sim, "--watchdog", 120))
    _ok(invoke("replay", capture, "--data", data))
    truth = _json((capture / "truth.json").read_text())
    stalled = [job for job, t in truth["jobs"].items() if t["state"] == "stalled"]
    assert len(stalled) == 1, f"seed 3 should stall exactly one job: {truth['jobs']}"
    return Incident(capture, data, truth, stalled[0])


@pytest.fixture(scope="module")
def local_verdict(incident: Incident) -> dict[str, Any]:
    """`verdict --json` read straight from the directory (nothing else holds it yet)."""
    assert read_owner(incident.data) is None, "the data directory should be free here"
    result = _ok(invoke("verdict", incident.job, "--data", incident.data, "--json"))
    doc: dict[str, Any] = _json(result.stdout)
    return doc


# --- 1. help --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "purpose"),
    [
        ([], "Which fabric link stalled job X?"),
        (["simulate"], "Simulate an incident on a rail-optimized cluster"),
        (["replay"], "Replay a capture through the attribution"),
        (["verdict"], "Which link stalled JOB_ID"),
        (["jobs"], "List the jobs in the store"),
        (["serve"], "Serve the HTTP API"),
        (["demo"], "Simulate a 64-node cluster with a fault, replay it"),
        (["cabling"], "Show the ports whose LLDP neighbour differs from cables.csv"),
        (["nodes"], "List the GPU nodes that reported Xids"),
        (["release-node"], "Put a quarantined GPU node back in service"),
        (["db", "migrate"], "Apply the schema migrations the store lacks"),
        (["alert"], "Slack"),
        (["token"], "Bearer tokens for the HTTP API"),
        (["token", "create"], "Create a token and print it"),
    ],
    ids=[
        "railtrace",
        "simulate",
        "replay",
        "verdict",
        "jobs",
        "serve",
        "demo",
        "cabling",
        "nodes",
        "release-node",
        "db-migrate",
        "alert",
        "token",
        "token-create",
    ],
)
def test_help_of_every_command_states_its_purpose(command: list[str], purpose: str) -> None:
    result = _ok(invoke(*command, "--help"))
    assert purpose in _flat(result.stdout)


def test_top_level_help_lists_every_command() -> None:
    out = _flat(_ok(invoke("--help")).stdout)
    for name in (
        "simulate",
        "replay",
        "verdict",
        "jobs",
        "serve",
        "demo",
        "cabling",
        "nodes",
        "release-node",
        "db",
        "alert",
        "token",
        "collect",
        "worker",
        "sink",
    ):
        assert name in out


@pytest.mark.parametrize("command", ["verdict", "jobs", "replay"])
def test_store_commands_document_data_and_json_options(command: str) -> None:
    out = _flat(_ok(invoke(command, "--help")).stdout)
    assert "--data" in out
    assert "--json" in out


def test_installed_console_script_runs(tmp_path: Path) -> None:
    done = run_process("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Which fabric link stalled job X?" in _flat(done.stdout)


def test_version_option_prints_the_version() -> None:
    result = _ok(invoke("--version"))
    assert result.stdout.startswith(f"railtrace {__version__}")


# --- 2. replay, verdict, jobs on one incident -----------------------------------------------


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_verdict_json_has_the_documented_shape(
    incident: Incident, local_verdict: dict[str, Any]
) -> None:
    doc = local_verdict
    for key in ("job_id", "state", "stalled_at", "decided_at", "cause", "candidates", "evidence"):
        assert key in doc
    assert doc["job_id"] == incident.job
    assert doc["state"] == "stalled"
    assert doc["stalled_at"].endswith("Z")
    assert doc["decided_at_ns"] >= doc["stalled_at_ns"]
    assert set(doc["cause"]) >= {"kind", "link", "node", "confidence"}
    assert set(doc["cause"]["link"]["a"]) == {"device", "interface"}
    assert set(doc["cause"]["link"]["b"]) == {"device", "interface"}
    assert 0 < doc["cause"]["confidence"] <= 1
    assert [c["rank"] for c in doc["candidates"]] == list(range(1, len(doc["candidates"]) + 1))
    assert doc["evidence"], "a stalled verdict must show its evidence"
    cost = doc["cost"]
    assert cost["gpus"] == doc["ranks"] > 0
    assert cost["to_verdict_s"] < cost["to_watchdog_s"]
    assert cost["saved_gpu_hours"] > 0


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_verdict_names_the_link_the_simulation_broke(
    incident: Incident, local_verdict: dict[str, Any]
) -> None:
    truth = incident.truth["fault_link"]
    cause = local_verdict["cause"]
    assert cause["kind"] == "link"
    assert cause["node"] is None
    assert {"a": cause["link"]["a"], "b": cause["link"]["b"]} == {"a": truth["a"], "b": truth["b"]}
    assert cause["link"]["id"] == truth["id"]
    assert local_verdict["candidates"][0]["link"]["id"] == truth["id"]


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_verdict_without_json_shows_the_link_to_a_person(incident: Incident) -> None:
    out = _flat(_ok(invoke("verdict", incident.job, "--data", incident.data)).stdout)
    a, b = incident.truth["fault_link"]["a"], incident.truth["fault_link"]["b"]
    assert incident.job in out
    assert "stalled" in out
    assert f"{a['device']}:{a['interface']} <-> {b['device']}:{b['interface']}" in out
    assert re.search(r"Cost: \d+ GPUs idle \d+ s before this answer .* GPU-h saved", out), out


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_jobs_state_filter_lists_exactly_the_stalled_job(
    incident: Incident, local_verdict: dict[str, Any]
) -> None:
    result = _ok(invoke("jobs", "--data", incident.data, "--state", "stalled", "--json"))
    docs = _json(result.stdout)
    assert [d["job_id"] for d in docs] == [incident.job]
    assert docs[0] == local_verdict


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_jobs_lists_every_job_of_the_capture_with_its_state(incident: Incident) -> None:
    docs = _json(_ok(invoke("jobs", "--data", incident.data, "--json")).stdout)
    assert {d["job_id"]: d["state"] for d in docs} == {
        job: t["state"] for job, t in incident.truth["jobs"].items()
    }


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_unknown_job_exits_2_and_says_how_to_list_jobs(incident: Incident) -> None:
    err = _refused(invoke("verdict", "no-such-job", "--data", incident.data), code=2)
    assert "no job 'no-such-job'" in err
    assert "railtrace jobs" in err


@pytest.mark.e2e  # simulates 64 nodes and replays them twice
def test_replay_says_what_the_store_holds_and_a_second_replay_that_it_held_it_already(
    tmp_path: Path,
) -> None:
    capture, data = tmp_path / "capture", tmp_path / "data"
    _ok(invoke("simulate", capture, "--nodes", 64, "--fault", "crc-burst", "--seed", 4))
    first = _flat(_ok(invoke("replay", capture, "--data", data)).stderr)
    store = ChdbStore(data)
    try:
        held = {t: store.count(t) for t in ("link_samples", "link_events", "verdicts")}
    finally:
        store.close()
    assert held["link_events"] > 0
    assert (
        f"the store gained {held['link_samples']:,} link samples, "
        f"{held['link_events']:,} link events, "
    ) in first, first
    assert "already held" not in first
    again = _flat(_ok(invoke("replay", capture, "--data", data)).stderr)
    assert (
        f"the store gained 0 link samples ({held['link_samples']:,} already held), "
        f"0 link events ({held['link_events']:,} already held)"
    ) in again, again


def test_a_killed_replay_is_not_taken_for_a_store_without_jobs(tmp_path: Path) -> None:
    """A replay writes its verdicts last: killed half way, `jobs` showed an empty table and
    exited 0 though part of the capture was stored."""
    capture, data = tmp_path / "capture", tmp_path / "data"
    _ok(invoke("simulate", capture, "--nodes", 64, "--fault", "link-down", "--seed", 4))
    proc = subprocess.Popen(
        [*railtrace_command(), "replay", str(capture), "--data", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=subprocess_env(),
    )
    deadline = time.monotonic() + 120
    while not (data / MARKER_FILE).exists():
        assert proc.poll() is None, "the replay ended before it could be killed"
        assert time.monotonic() < deadline, "the replay never started storing"
        time.sleep(0.05)
    proc.kill()
    proc.wait(30)
    listed = invoke("jobs", "--data", data)
    assert listed.exit_code == 1, listed.output
    said = _flat(listed.stderr)
    assert f"the replay of {capture} into {data}" in said and "did not finish" in said, said
    assert f"railtrace replay {capture} --data {data}" in said
    unknown = invoke("verdict", "4812", "--data", data)
    assert unknown.exit_code == 2 and "did not finish" in _flat(unknown.stderr)
    _ok(invoke("replay", capture, "--data", data))  # the replay again: whole and unmarked
    assert not (data / MARKER_FILE).exists()
    assert _ok(invoke("jobs", "--data", data)).exit_code == 0


@pytest.mark.chdb
def test_replay_warns_of_a_capture_without_telemetry_or_logs(
    tmp_path: Path,
) -> None:
    capture, data = tmp_path / "capture", tmp_path / "data"
    _ok(invoke("simulate", capture, "--nodes", 64, "--fault", "link-down", "--seed", 4))
    shutil.rmtree(capture / "logs")
    files = sorted((capture / "gnmi").iterdir())
    for f in files:
        f.write_text("")
    said = _flat(_ok(invoke("replay", capture, "--data", data)).stderr)
    assert f"Warning: no switch telemetry was read from the {len(files)} files in gnmi/" in said
    assert "Warning: no job logs: logs/<job_id>/ is missing or empty" in said


def test_replay_without_cables_csv_names_the_missing_file(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    (capture / "gnmi").mkdir(parents=True)
    err = _refused(invoke("replay", capture, "--data", tmp_path / "data"))
    assert "cables.csv" in err
    assert not (tmp_path / "data").exists(), "a refused replay must not create the store"


def test_verdict_on_a_missing_data_dir_says_to_replay_first(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    err = _refused(invoke("verdict", "1234", "--data", missing))
    assert f"no data directory {missing}" in err
    assert "railtrace replay" in err
    assert not missing.exists()


def test_jobs_on_a_missing_data_dir_fails_cleanly_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    err = _refused(invoke("jobs", "--data", missing))
    assert "railtrace replay" in err
    assert not missing.exists()


@pytest.mark.chdb  # the CLI opens the store
def test_verdict_on_a_never_replayed_data_dir_fails_cleanly(tmp_path: Path) -> None:
    err = _refused(invoke("verdict", "1234", "--data", tmp_path))
    assert "railtrace replay" in err


# --- 3. a second process reads through the one that holds the directory ---------------------


def _owner_token(server: Server) -> str:
    owner = read_owner(server.data)
    assert owner is not None and owner.api_token
    return owner.api_token


@pytest.fixture(scope="class")
def served(
    incident: Incident, local_verdict: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """`serve` holding the incident's directory for the tests of one class. Depends on
    `local_verdict` so that the direct read happens before the directory is taken."""
    with serving(incident.data, tmp_path_factory.mktemp("serve")) as server:
        yield server


class TestReadingThroughTheServingProcess:
    def test_serve_records_itself_as_the_owner_with_its_url_and_a_private_token(
        self, served: Server
    ) -> None:
        owner = read_owner(served.data)
        assert owner is not None and owner.api_token
        assert owner == Owner(pid=served.proc.pid, api_url=served.url, api_token=owner.api_token)
        assert (owner_path(served.data).stat().st_mode & 0o777) == 0o600

    def test_the_api_refuses_a_request_without_a_token(
        self, served: Server, incident: Incident
    ) -> None:
        with pytest.raises(urllib.error.HTTPError) as refused:
            get_json(f"{served.url}/v1/jobs/{incident.job}/verdict")
        assert refused.value.code == 401
        assert refused.value.headers["WWW-Authenticate"] == "Bearer"

    def test_verdict_in_another_process_reads_through_the_api(
        self, served: Server, incident: Incident, local_verdict: dict[str, Any]
    ) -> None:
        done = run_process(
            "verdict", incident.job, "--data", served.data, "--json", cwd=served.log.parent
        )
        assert done.returncode == 0, done.stderr
        doc = _json(done.stdout)
        assert doc["cause"] == local_verdict["cause"]
        assert doc["cause"]["confidence"] == local_verdict["cause"]["confidence"]
        assert doc == local_verdict

    def test_api_serves_the_same_verdict_document(
        self, served: Server, incident: Incident, local_verdict: dict[str, Any]
    ) -> None:
        token = _owner_token(served)
        assert get_json(f"{served.url}/v1/jobs/{incident.job}/verdict", token) == local_verdict

    def test_unknown_job_through_the_api_exits_2(self, served: Server) -> None:
        done = run_process("verdict", "no-such-job", "--data", served.data, cwd=served.log.parent)
        assert done.returncode == 2, done.stderr
        assert "no job 'no-such-job'" in _flat(done.stderr)
        assert "Traceback" not in done.stderr

    @pytest.mark.parametrize("job", ["../tokens", "a b", "x?state=stalled", "4%2F2", "j#1"])
    def test_a_job_id_that_is_none_asks_nothing_else_through_the_api(
        self, served: Server, job: str
    ) -> None:
        """Put in the URL unquoted, `../tokens` asked another route and `a b` was a
        traceback; each is a job that is not there."""
        done = run_process("verdict", job, "--data", served.data, cwd=served.log.parent)
        assert done.returncode in (1, 2), done.stderr
        assert "Traceback" not in done.stderr
        assert f"no job {job!r}: a job id is" in _flat(done.stderr), done.stderr

    def test_replay_into_the_held_directory_is_refused(
        self, served: Server, incident: Incident
    ) -> None:
        done = run_process("replay", incident.capture, "--data", served.data, cwd=served.log.parent)
        assert done.returncode != 0
        err = _flat(done.stderr)
        assert "already open in another process" in err
        assert served.url in err
        assert "Traceback" not in done.stderr
        assert get_json(served.url + "/healthz") == {"status": "ok"}, "the server must keep serving"

    def test_jobs_json_is_the_same_document_through_the_api(
        self, served: Server, local_verdict: dict[str, Any]
    ) -> None:
        args = "jobs", "--data", served.data, "--state", "stalled", "--json"
        done = run_process(*args, cwd=served.log.parent)
        assert done.returncode == 0, done.stderr
        assert _json(done.stdout) == [local_verdict]


@pytest.mark.parametrize(
    "sig",
    [
        pytest.param(signal.SIGINT, id="SIGINT"),
        pytest.param(signal.SIGTERM, id="SIGTERM"),
    ],
)
def test_serve_releases_the_directory_when_stopped(tmp_path: Path, sig: int) -> None:
    with serving(tmp_path / "data", tmp_path) as server:
        assert owner_path(server.data).exists()
        stop(server.proc, sig)
        assert server.proc.returncode is not None
        assert not owner_path(server.data).exists(), server.log.read_text()


# --- 4. demo --------------------------------------------------------------------------------


@pytest.mark.e2e  # the whole 64-node demo
def test_demo_shows_the_stalled_job_and_the_link_it_simulated(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    out = _flat(_ok(invoke("demo", "--workdir", workdir, "--seed", 5)).stdout)
    truth = _json((workdir / "capture" / "truth.json").read_text())
    assert truth["nodes"] == 64
    stalled = [job for job, t in truth["jobs"].items() if t["state"] == "stalled"]
    assert stalled, "seed 5 should stall a job"
    link = truth["fault_link"]
    assert f"│ {stalled[0]} │ stalled │" in out
    assert f"{link['a']['device']}:{link['a']['interface']} <->" in out
    assert (
        f"Simulated: job {stalled[0]} stalled by link-down on link {link['id']}, side switch-port"
        in out
    )
    assert f"railtrace verdict {stalled[0]} --data {workdir / 'data'}" in out
    assert (workdir / DEMO_MARK).exists()


def test_demo_refuses_a_directory_that_is_not_its_own(tmp_path: Path) -> None:
    workdir = tmp_path / "mine"
    workdir.mkdir()
    (workdir / "precious.txt").write_text("keep me")
    err = _refused(invoke("demo", "--workdir", workdir, "--seed", 5))
    assert "not a railtrace demo directory" in err
    assert sorted(p.name for p in workdir.iterdir()) == ["precious.txt"]


@pytest.mark.e2e  # a whole (2-node) demo
def test_demo_runs_again_over_its_own_directory(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    workdir.mkdir()
    (workdir / DEMO_MARK).touch()
    (workdir / "left-over").write_text("from an earlier run")
    _ok(invoke("demo", "--workdir", workdir, "--nodes", 2, "--seed", 5))
    assert not (workdir / "left-over").exists()
    assert _json((workdir / "capture" / "truth.json").read_text())["nodes"] == 2


# --- 5. settings ----------------------------------------------------------------------------


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "railtrace.toml"
    path.write_text(text)
    return path


def _with_config(how: str, config: Path, *args: object) -> Result:
    if how == "env":
        return invoke(*args, env={"RAILTRACE_CONFIG": str(config)})
    return invoke("--config", config, *args)


@pytest.mark.parametrize("how", ["env", "flag"])
def test_unknown_settings_key_is_a_bad_settings_error(tmp_path: Path, how: str) -> None:
    config = _config(tmp_path, "bogus_key = 1\n")
    err = _refused(_with_config(how, config, "verdict", "1234", "--data", tmp_path / "none"))
    assert err.startswith("error: bad settings:")
    assert "bogus_key" in err


def test_unknown_key_inside_a_section_is_a_bad_settings_error(tmp_path: Path) -> None:
    config = _config(tmp_path, '[store]\ndata_dirr = "/somewhere"\n')
    err = _refused(_with_config("env", config, "verdict", "1234", "--data", tmp_path / "none"))
    assert "bad settings" in err
    assert "data_dirr" in err


def test_missing_config_file_is_a_bad_settings_error(tmp_path: Path) -> None:
    err = _refused(_with_config("env", tmp_path / "absent.toml", "jobs"))
    assert "bad settings: config file not found" in err


@pytest.mark.e2e  # the `incident` fixture simulates 64 nodes and replays them
def test_data_dir_from_the_config_file_is_used(
    tmp_path: Path, incident: Incident, local_verdict: dict[str, Any]
) -> None:
    config = _config(tmp_path, f"[store]\ndata_dir = {json.dumps(str(incident.data))}\n")
    result = _ok(_with_config("env", config, "verdict", incident.job, "--json"))
    assert _json(result.stdout) == local_verdict
