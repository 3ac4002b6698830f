"""`make demo`'s install step as a newcomer sees it: it says what it is doing before the quiet
minute or two, keeps pip's and setuptools' pages of warnings out of sight when the install
works, and shows them all when it fails. The interpreter of the venv is a stand-in that prints
what pip prints, so the recipe runs in a second instead of installing for minutes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOISE = "SetuptoolsDeprecationWarning: License classifiers are deprecated."


def _make_install(venv: Path, exit_code: int) -> subprocess.CompletedProcess[str]:
    python = venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\necho '{NOISE}' >&2\nexit {exit_code}\n")
    python.chmod(0o755)
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "install", f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
        check=False,
    )


@pytest.mark.integration
def test_a_working_install_says_what_it_does_and_hides_the_warnings(tmp_path: Path) -> None:
    done = _make_install(tmp_path / "venv", 0)
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "Installing railtrace and its dependencies into" in said
    assert "Installed." in said and NOISE not in said
    assert NOISE in (tmp_path / "venv" / "install.log").read_text()


@pytest.mark.integration
def test_a_failed_install_shows_what_pip_said(tmp_path: Path) -> None:
    done = _make_install(tmp_path / "venv", 1)
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert NOISE in said and "Install failed" in said and "Installed." not in said
