"""Operator requests (`railtrace release-node`) reaching a running Xid collector through its
requests folder: applied in order, kept while the collector is down, never silently dropped."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from railtrace.collectors.emit import Collected
from railtrace.collectors.hosts import XidScraper, XidScraperConfig, nodeevents
from railtrace.collectors.hosts.requests import Request, pending, submit

XID79 = (
    "2026-11-28T18:44:12+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus."
)
XID95 = (
    "2026-11-28T18:46:00+0000 gpu8 kernel: NVRM: Xid (PCI:0000:5d:00): 95, pid=9, "
    "name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No"
)


def _config(tmp: Path) -> XidScraperConfig:
    kern = tmp / "kern.log"
    if not kern.exists():
        kern.write_text(f"{XID79}\n{XID95}\n")
    return XidScraperConfig(
        file=kern,
        node="host-a",
        state_file=tmp / "xid-state.json",
        requests_dir=tmp / "requests",
        poll_interval_ms=10,
    )


def _events(out: Collected) -> list[dict[str, Any]]:
    return [nodeevents.decode(m.value) for m in out.on("node-events")]


async def _until(cond: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def _running(cfg: XidScraperConfig, out: Collected, until: Any) -> XidScraper:
    scraper = XidScraper(cfg, out)
    task = asyncio.create_task(scraper.run())
    try:
        await _until(lambda: until(scraper))
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return scraper


def test_a_release_written_while_the_collector_runs_is_applied_and_removed(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    out = Collected()

    async def go() -> XidScraper:
        scraper = XidScraper(cfg, out)
        task = asyncio.create_task(scraper.run())
        await _until(lambda: scraper.policy.quarantined() == ["gpu7", "gpu8"])
        assert cfg.requests_dir is not None
        submit(cfg.requests_dir, Request("release", "gpu7", "alice", "GPU reseated"))
        await _until(lambda: not scraper.policy.is_quarantined("gpu7"))
        await _until(lambda: pending(cfg.requests_dir) == [] and len(_events(out)) == 3)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return scraper

    scraper = asyncio.run(go())
    release = _events(out)[-1]
    assert (release["kind"], release["node"], release["quarantined"]) == ("release", "gpu7", False)
    assert release["decision"]["reason"] == "released by alice (GPU reseated)"
    assert scraper.policy.quarantined() == ["gpu8"]
    assert list((tmp_path / "requests").iterdir()) == []


def test_clear_leaves_a_node_suspected_of_silent_data_corruption_quarantined(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path)
    assert cfg.requests_dir is not None
    submit(cfg.requests_dir, Request("clear", "gpu8", "healthcheck", "dcgm diag passed"))
    submit(cfg.requests_dir, Request("clear", "gpu7", "healthcheck", "dcgm diag passed"))
    out = Collected()
    scraper = asyncio.run(
        _running(cfg, out, lambda s: s.stats.releases == 1 and not pending(cfg.requests_dir))
    )
    assert scraper.policy.quarantined() == ["gpu8"]
    assert scraper.policy.is_sdc_suspect("gpu8")
    (release,) = [e for e in _events(out) if e["kind"] == "release"]
    assert (release["node"], release["decision"]["reason"]) == ("gpu7", "dcgm diag passed")


def test_requests_left_while_the_collector_was_down_apply_at_its_next_start_in_order(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path)
    asyncio.run(_running(cfg, Collected(), lambda s: len(s.policy.quarantined()) == 2))
    assert cfg.requests_dir is not None
    submit(cfg.requests_dir, Request("release", "gpu8", "bob", ""))
    submit(cfg.requests_dir, Request("release", "gpu7", "bob", ""))
    out = Collected()
    scraper = asyncio.run(_running(cfg, out, lambda s: s.stats.releases == 2))
    assert scraper.policy.quarantined() == []
    assert [e["node"] for e in _events(out) if e["kind"] == "release"] == ["gpu8", "gpu7"]


def test_an_unreadable_request_is_set_aside_not_dropped(tmp_path: Path) -> None:
    requests_dir = tmp_path / "requests"
    requests_dir.mkdir()
    (requests_dir / "0001-garbled.json").write_text('{"action": "reboot", "node": "gpu7"}')
    submit(requests_dir, Request("release", "gpu7", "carol", ""))
    (only,) = pending(requests_dir)
    assert only[1] == Request("release", "gpu7", "carol", "")
    assert (requests_dir / "0001-garbled.bad").exists()
