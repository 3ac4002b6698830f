"""The cabling plan a replay read, kept beside the store it filled.

`railtrace serve --data DIR` draws the fabric, a link's counters and its blast radius from the
cabling plan; without one those pages answered 503, and the README's and the demo's own
commands gave no plan. So a replay into the embedded store copies its capture's plan files
(`cables.csv`, `hosts.csv`, `gids/`, `gpu-nics/`) into `DIR/railtrace-plan/`, and `serve` uses
that copy when no topology is configured. A copy rather than a pointer to the capture: the
capture may be moved or deleted after the replay, and the store would then lose its fabric.
The latest replay's plan wins, since a store holds one fabric.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from railtrace.private import private_dir, private_opener

PLAN_DIR = "railtrace-plan"

#: The plan's files in a capture, all that `open_capture` reads to build the fabric.
PLAN_FILES = ("cables.csv", "hosts.csv")
PLAN_FOLDERS = ("gids", "gpu-nics")


def keep_plan(capture_root: Path, data_dir: Path) -> Path:
    """Copy the capture's plan into `data_dir` (files 0600), replacing the one kept before;
    the old copy stays whole until the new one is complete."""
    final = data_dir / PLAN_DIR
    staging = private_dir(data_dir / f".{PLAN_DIR}.new")
    shutil.rmtree(staging)
    private_dir(staging)
    for name in PLAN_FILES:
        if (capture_root / name).is_file():
            _copy(capture_root / name, staging / name)
    for folder in PLAN_FOLDERS:
        found = sorted(p for p in (capture_root / folder).glob("*") if p.is_file())
        if found:
            private_dir(staging / folder)
        for path in found:
            _copy(path, staging / folder / path.name)
    old = data_dir / f".{PLAN_DIR}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def kept_plan(data_dir: Path) -> Path | None:
    """The plan the last replay into `data_dir` kept, if any."""
    found = data_dir / PLAN_DIR
    return found if (found / "cables.csv").is_file() else None


def _copy(source: Path, target: Path) -> None:
    with source.open("rb") as src, open(target, "wb", opener=private_opener) as out:
        shutil.copyfileobj(src, out)
