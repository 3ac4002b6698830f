"""deploy/screenshots.py, which regenerates docs/'s pictures of the incident page, run for its
quickest case: it simulates, replays, serves and shoots a 1600x1000 PNG of a tie."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import gates
from browser_support import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]


def test_the_script_shoots_the_tie_case_as_a_1600_by_1000_png(tmp_path: Path) -> None:
    gates.require("browser", Path(CHROMIUM).exists(), "chromium (`make system-deps` installs it)")
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "screenshots.py"), "--case", "tie",
         "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "out")],
        check=False, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    png = (tmp_path / "out" / "incident-tie.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1600, 1000)
    assert "job 4242" in done.stdout
