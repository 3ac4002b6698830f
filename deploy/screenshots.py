"""Screenshots of the incident page for docs/: one simulated incident per case, replayed into
its own store, served by `railtrace serve`, shot in headless Chromium 1600 px wide from the top
of the page down to the fabric's legend.

    .venv/bin/python deploy/screenshots.py            # all cases into docs/
    .venv/bin/python deploy/screenshots.py --case tie --workdir /tmp/shots --keep

Each case is a fault of `railtrace demo` with a seed. No seed of the simulator we tried (gray,
ecmp and flap, seeds 1-5) gives a flagged tie, so `tie` replays a link-down incident and stores
its stalled job again under another id with its two best candidates tied, as the page's tests
do: the drawing of a tie is what it shows. Otherwise the pictures come from the real path:
simulate, replay, serve, browser. `--keep` reuses a
case's store when its folder already holds one (the replay of 64 nodes takes minutes).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from playwright.sync_api import sync_playwright

from railtrace.replay import open_capture, replay
from railtrace.simulate import Fault, write_capture
from railtrace.store.chdb_store import ChdbStore
from railtrace.store.rows import STRUCTURE_FACT_KINDS
from railtrace.streams.records import JobState

ROOT = Path(__file__).resolve().parents[1]
RAILTRACE = str(Path(sys.executable).with_name("railtrace"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update"]  # fmt: skip
WIDTH, HEIGHT = 1600, 1000
#: The tallest a picture gets: a drawing taller than this is cut at its bottom.
MAX_HEIGHT = 2400
TIE_JOB = "4242"


@dataclass(frozen=True)
class Case:
    name: str
    fault: Fault
    nodes: int
    seed: int
    tie: bool = False  # store the stalled job again as a tie of its two best candidates


CASES = {
    c.name: c
    for c in (
        Case("link-down", Fault.LINK_DOWN, 64, 11),
        Case("pfc-storm", Fault.PFC_STORM, 64, 11),
        Case("gpu-xid", Fault.GPU_XID, 64, 11),
        Case("tie", Fault.LINK_DOWN, 32, 11, tie=True),
    )
}


def build(case: Case, folder: Path, keep: bool) -> None:
    """Simulate and replay the case into `folder` (cap/, data/), unless kept from before."""
    if keep and (folder / "data").exists():
        return
    shutil.rmtree(folder, ignore_errors=True)
    write_capture(folder / "cap", case.nodes, case.fault, case.seed, watchdog_s=120)
    store = ChdbStore(folder / "data")
    try:
        store.migrate()
        replay(open_capture(folder / "cap"), store)
        if case.tie:
            store_as_tie(store)
    finally:
        store.close()


def store_as_tie(store: ChdbStore) -> None:
    """The first stalled job again as TIE_JOB, its verdict a tie of its two best candidates."""
    stalled = next(
        v
        for j in store.list_jobs(state=JobState.STALLED, limit=10, offset=0)
        if (v := store.get_verdict(j.job_id)) is not None and len(v.candidates) >= 2
    )
    first, second = (c.link for c in stalled.candidates[:2])
    assert first is not None and second is not None
    facts = store.job_facts_of(stalled.job_id, STRUCTURE_FACT_KINDS)
    store.write_job_facts([replace(f, job_id=TIE_JOB) for f in facts])
    store.write_verdicts([replace(stalled, job_id=TIE_JOB, tied=(first.link_id, second.link_id))])


def pick_job(case: Case, folder: Path) -> str:
    """The stalled (or slow) job the picture is of; for `tie`, the one whose verdict is one."""
    store = ChdbStore(folder / "data")
    try:
        jobs = [j for j in store.list_jobs(state=None, limit=100, offset=0) if j.state != "healthy"]
    finally:
        store.close()
    chosen = [j for j in jobs if (j.job_id == TIE_JOB) == case.tie]
    if not chosen:
        raise SystemExit(f"{case.name}: no {'tied ' if case.tie else ''}verdict in this replay")
    return chosen[0].job_id


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[tuple[str, str]]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")},
        "RAILTRACE_API__TOKENS_FILE": str(folder / "tokens.json"),
        "RAILTRACE_API__TOPOLOGY_DIR": str(folder / "cap"),
    }
    token = subprocess.run(
        [RAILTRACE, "token", "create", "--name", "screenshots", "--quiet"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    port = 18_700 + os.getpid() % 1000
    with (folder / "serve.log").open("wb") as log:
        proc = subprocess.Popen(
            [RAILTRACE, "serve", "--data", str(folder / "data"), "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise SystemExit((folder / "serve.log").read_text())
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "/healthz", timeout=2).close()
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"serve did not answer within 60 s: {folder / 'serve.log'}")
            time.sleep(0.2)
        yield url, token
    finally:
        proc.terminate()
        proc.wait(20)


def shoot(url: str, token: str, job: str, out: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(f"{url}/incidents/{job}#token={token}")
            page.wait_for_selector("#app[data-ready]", state="attached")
            if page.locator("#app").get_attribute("data-ready") != "true":
                raise SystemExit(page.locator("#app").inner_text())
            # Down to the fabric and its legend, whatever their height: a fixed window cut the
            # drawing off above the culprit once the next-steps card pushed it down.
            bottom = page.evaluate("document.querySelector('.grid').getBoundingClientRect().bottom")
            page.screenshot(
                path=str(out),
                full_page=True,
                clip={"x": 0, "y": 0, "width": WIDTH, "height": min(bottom + 16, MAX_HEIGHT)},
            )
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="reuse a case's replayed store")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="railtrace-shots-"))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.case or list(CASES):
        case = CASES[name]
        folder = work / name
        build(case, folder, args.keep)
        job = pick_job(case, folder)
        out = args.out / f"incident-{name}.png"
        with serving(folder) as (url, token):
            shoot(url, token, job, out)
        print(f"{out} (job {job}, {out.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
