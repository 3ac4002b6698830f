"""deploy/screenshots.py, which regenerates docs/'s pictures of the incident page, run for its
quickest case: it simulates, replays, serves and shoots a PNG of a tie, 1600 px wide and as
tall as the page down to the fabric's legend."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import gates
from browser_support import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]


def test_the_script_shoots_the_tie_case_1600_px_wide_down_to_the_fabric(tmp_path: Path) -> None:
    gates.require("browser", Path(CHROMIUM).exists(), "chromium (`make system-deps` installs it)")
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "screenshots.py"), "--case", "tie",
         "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "out")],
        check=False, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    png = (tmp_path / "out" / "incident-tie.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    # Not a fixed window: the summary, the next steps and the whole drawing of 8 hosts.
    assert width == 1600 and 800 < height <= 2400
    assert "job 4242" in done.stdout
