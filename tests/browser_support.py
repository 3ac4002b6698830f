"""The incident pages in headless Chromium: a real `railtrace serve` over a replayed store, the
browser that reads it, and the checks a person makes by eye (nothing spills sideways, no
label cut, text large enough), as functions of the page."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_support import RAILTRACE, free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# This machine has no route out: without these Chromium keeps trying to reach Google.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Served:
    url: str
    token: str
    log: Path


@contextlib.contextmanager
def serving(base: Path, capture: Path, data: Path) -> Iterator[Served]:
    """`railtrace serve` over `data` with the fabric of `capture`, and a read token for it."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")},
        "RAILTRACE_API__TOKENS_FILE": str(base / "tokens.json"),
        "RAILTRACE_API__TOPOLOGY_DIR": str(capture),
    }
    made = subprocess.run(
        [RAILTRACE, "token", "create", "--name", "browser-test", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    port = free_port()
    log = base / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [RAILTRACE, "serve", "--data", str(data), "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "/healthz", timeout=2).close()
                break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield Served(url, made.stdout.strip(), log)
    finally:
        proc.terminate()
        proc.wait(20)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@contextlib.contextmanager
def page_of(browser: Any, width: int, height: int = 1000) -> Iterator[Any]:
    """A fresh page `width` px wide that keeps its console errors in `page.problems`."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.problems = problems
    try:
        yield page
    finally:
        context.close()


def loaded(page: Any) -> None:
    """Until the page has rendered from the API; what it shows instead, if it failed."""
    page.wait_for_selector("#app[data-ready]", state="attached")
    state = page.locator("#app").get_attribute("data-ready")
    assert state == "true", page.locator("#app").inner_text()


def overflow(page: Any) -> list[str]:
    """What sticks out past the right edge of the window, making the page scroll sideways."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > innerWidth + 0.5
                         && !e.closest('.fabric-box'))
            .map(e => `${e.tagName} ${(e.textContent || '').slice(0, 60)}`)"""
    )
    wide = page.evaluate("document.documentElement.scrollWidth > innerWidth")
    return found + (["the page scrolls sideways"] if wide else [])


def clipped_labels(page: Any, selector: str) -> list[str]:
    """The texts under `selector`'s SVGs that reach outside their SVG's box (cut off)."""
    found: list[str] = page.evaluate(
        """(sel) => [...document.querySelectorAll(sel + ' svg')].flatMap(s => {
              const box = s.getBoundingClientRect();
              return [...s.querySelectorAll('text')].filter(t => {
                const r = t.getBoundingClientRect();
                return r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1
                                       || r.top < box.top - 1 || r.bottom > box.bottom + 1);
              }).map(t => t.textContent);
            })""",
        selector,
    )
    return found


def smallest_text_px(page: Any, selector: str) -> float:
    """The height on screen of the smallest text under `selector`'s SVGs, in CSS pixels."""
    return float(
        page.evaluate(
            """(sel) => Math.min(...[...document.querySelectorAll(sel + ' svg text')]
                 .map(t => t.getBoundingClientRect().height).filter(h => h > 0))""",
            selector,
        )
    )


def overlapping_labels(page: Any, selector: str) -> list[str]:
    """Pairs of texts (or marks) under `selector` drawn over each other (unreadable), as
    'a / b'; a mark without text is named by the link it belongs to."""
    found: list[str] = page.evaluate(
        """(sel) => {
              const boxes = [...document.querySelectorAll(sel)]
                .map(t => [t.textContent || t.closest('[data-link]')?.dataset.link,
                           t.getBoundingClientRect()])
                .filter(([, r]) => r.width > 0);
              const out = [];
              boxes.forEach(([a, r], i) => boxes.slice(i + 1).forEach(([b, q]) => {
                const x = Math.min(r.right, q.right) - Math.max(r.left, q.left);
                const y = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
                if (x > 1 && y > 1) out.push(a + ' / ' + b);
              }));
              return out;
            }""",
        selector,
    )
    return found
