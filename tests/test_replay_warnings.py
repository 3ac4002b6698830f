"""What a replay must tell a person beyond its verdicts: missing input and impossible clocks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from railtrace.replay import ReplayReport, open_capture, warnings
from railtrace.topology.cabling import CABLE_COLUMNS

H = 3600 * 10**9
NOW = 1_780_000_000 * 10**9


def _report(**kw: object) -> ReplayReport:
    base = {"telemetry_values": 10, "facts": 5, "gnmi_files": 1, "log_files": 1}
    return ReplayReport(**{**base, **kw})


def test_a_capture_with_telemetry_and_logs_stamped_in_the_past_warns_of_nothing() -> None:
    assert warnings(_report(last_event_ns=NOW - 30 * 86_400 * 10**9), NOW) == []


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"telemetry_values": 0, "gnmi_files": 0}, "gnmi/ is missing or holds no"),
        ({"telemetry_values": 0, "gnmi_files": 3}, "from the 3 files in gnmi/"),
        ({"facts": 0, "log_files": 0}, "logs/<job_id>/ is missing or empty"),
        ({"facts": 0, "log_files": 7}, "the 7 log files gave no job facts"),
        (
            {"facts": 3, "placements": 3, "log_files": 0, "scheduler_files": 1},
            "the jobs the 3 placements of scheduler/ name are judged on their hosts' links alone",
        ),
        (
            {"scheduler_files": 2, "placements": 0},
            "the 2 files in scheduler/ gave no job placement",
        ),
        ({"last_event_ns": NOW + 2 * H}, "2.0 hours after this machine's clock"),
        ({"last_event_ns": NOW + 400 * 24 * H}, "400 days after this machine's clock"),
        ({"retimed_stamps": Counter({"ms": 4, "s": 1})}, "(4 in ms, 1 in s) were read in that"),
        ({"pathless_values": 6}, "6 telemetry values had no path"),
    ],
)
def test_each_missing_input_or_clock_ahead_is_one_warning(kw: dict[str, object], says: str) -> None:
    (warning,) = warnings(_report(**kw), NOW)
    assert says in warning


def test_a_clock_a_few_minutes_ahead_is_no_warning() -> None:
    assert warnings(_report(last_event_ns=NOW + 10 * 60 * 10**9), NOW) == []


@pytest.mark.parametrize("name", ["job 1", "..x", "-rf", "a" * 129, "caf\u00e9"])
def test_a_logs_folder_that_is_no_job_id_is_left_out_and_said_so(tmp_path: Path, name: str) -> None:
    """Stored under such an id, a job could never be asked for by URL."""
    (tmp_path / "cables.csv").write_text(
        ",".join(CABLE_COLUMNS) + "\nn1,dcim.interface,mlx5_0,leaf,dcim.interface,swp1\n"
    )
    for job in (name, "4812"):
        (tmp_path / "logs" / job).mkdir(parents=True)
        (tmp_path / "logs" / job / "rank0.log").write_text("hello\n")
    capture = open_capture(tmp_path)
    assert list(capture.log_files) == ["4812"]
    (skipped,) = capture.skipped
    assert skipped.startswith(f"logs/{name}/ (1 files)") and "is not a job id" in skipped
