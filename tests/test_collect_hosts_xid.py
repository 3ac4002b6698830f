"""The kernel Xid scraper (`railtrace collect xid`): kernel lines from a real subprocess or a
followed file, read by the project's log parser, out as node events with quarantine decisions."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from logs_support import real_lines, utc_ns

from railtrace.collectors.emit import Collected
from railtrace.collectors.hosts import XidScraper, XidScraperConfig, nodeevents

XID79 = (
    "2026-12-06T18:44:12+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus."
)
XID13 = (  # dmesg -w --time-format iso: no host on the line
    "2026-12-06T18:45:00,123456+00:00 NVRM: Xid (PCI:0000:18:00): 13, pid=4242, "
    "name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)"
)
OTHER = "2026-12-06T18:45:01+0000 gpu7 kernel: mlx5_core 0000:0c:00.0: mlx5e: Link up"
BROKEN = "2026-12-06T18:45:02+0000 gpu7 kernel: NVRM: Xid (PCI:0000:01"
XID95 = (
    "2026-12-06T18:46:00+0000 gpu8 kernel: NVRM: Xid (PCI:0000:5d:00): 95, pid=9, "
    "name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No"
)


def config(tmp_path: Path, **kw: Any) -> XidScraperConfig:
    base: dict[str, Any] = {
        "node": "host-a",
        "state_file": tmp_path / "xid-state.json",
        "restart_delay_s": 0.05,
        "poll_interval_ms": 10,
    }
    base.update(kw)
    return XidScraperConfig(**base)


async def until(cond: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def events(out: Collected) -> list[dict[str, Any]]:
    return [nodeevents.decode(m.value) for m in out.on("node-events")]


@pytest.mark.integration  # the collector runs its command as a process
def test_xids_from_a_subprocess_become_node_events(tmp_path: Path) -> None:
    kern = tmp_path / "kern.txt"
    kern.write_text("\n".join([XID79, OTHER, XID13, BROKEN]) + "\n")
    cfg = config(tmp_path, command=["cat", str(kern)])
    out = Collected()

    async def go() -> XidScraper:
        s = XidScraper(cfg, out)
        task = asyncio.create_task(s.run())
        await until(lambda: len(out.messages) >= 2, "two node events")
        # `cat` exits and is run again: its lines come back and are recognised as repeats.
        await until(lambda: s.stats.source_restarts >= 2, "the command to be run again")
        await stop(task)
        return s

    s = asyncio.run(go())
    assert [(m.stream, m.key, m.state_change) for m in out.messages] == [
        ("node-events", b"gpu7", True),
        ("node-events", b"host-a", True),
    ]
    first, second = events(out)
    assert {k: first[k] for k in ("kind", "node", "ts_ns", "xid", "pci", "quarantined")} == {
        "kind": "xid",
        "node": "gpu7",
        "ts_ns": utc_ns(2026, 12, 6, 18, 44, 12),
        "xid": 79,
        "pci": "0000:3b:00",
        "quarantined": True,
    }
    assert first["detail"].endswith("GPU has fallen off the bus.")
    assert first["line"] == XID79 and first["source"] == f"cat {kern}"
    assert first["decision"]["action"] == "quarantine" and first["decision"]["sdc"] is False
    assert [e["xid"] for e in first["decision"]["evidence"]] == [79]
    assert out.messages[0].ts_ns == first["ts_ns"]
    assert (second["node"], second["xid"], second["quarantined"], second["decision"]) == (
        "host-a",
        13,
        False,
        None,
    )
    assert second["ts_ns"] == utc_ns(2026, 12, 6, 18, 45, 0, 123_456_000)
    # Read again, the Xid 13 is a repeat the collector recognises; the Xid 79 does not even
    # reach it: to the parser, the same GPU lost again within minutes is the same loss.
    assert s.stats.malformed >= 1 and s.stats.repeats >= 1
    assert len(out.messages) == 2


@pytest.mark.integration  # the collector runs its command as a process
def test_printf_subprocess_and_sdc_release(tmp_path: Path) -> None:
    cfg = config(tmp_path, command=["sh", "-c", f"printf '%s\\n' \"{XID95}\""])
    out = Collected()

    async def go() -> None:
        s = XidScraper(cfg, out)
        task = asyncio.create_task(s.run())
        await until(lambda: len(out.messages) >= 1, "the Xid 95 event")
        assert await s.clear("gpu8") is None  # suspected SDC: a health signal is not enough
        d = await s.release("gpu8", by="oncall")
        assert d is not None
        await stop(task)

    asyncio.run(go())
    xid_event, release = events(out)
    assert xid_event["decision"]["sdc"] is True and xid_event["quarantined"] is True
    assert release["kind"] == "release" and release["node"] == "gpu8"
    assert release["quarantined"] is False
    assert release["decision"]["reason"] == "released by oncall"
    assert [e["xid"] for e in release["decision"]["evidence"]] == [95]


def test_a_followed_file_and_a_restart_neither_repeat_nor_forget(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text(XID13.replace("18:45:00", "18:00:00") + "\n")
    cfg = config(tmp_path, file=kern)
    out = Collected()

    async def go() -> None:
        s = XidScraper(cfg, out)
        task = asyncio.create_task(s.run())
        await until(lambda: len(out.messages) == 1, "the first Xid 13")
        with open(kern, "a") as fh:
            fh.write(XID13.replace("18:45:00", "18:10:00") + "\n")
        await until(lambda: len(out.messages) == 2, "the appended Xid 13")
        await stop(task)
        # Restarted: the file is read from its start again, and the third Xid 13 within the
        # hour quarantines, because the two before the restart were kept.
        with open(kern, "a") as fh:
            fh.write(XID13.replace("18:45:00", "18:20:00") + "\n")
        s = XidScraper(cfg, out)
        task = asyncio.create_task(s.run())
        await until(lambda: len(out.messages) == 3, "the third Xid 13")
        # Not a pause for more to show up: the scraper has read all three lines, and a line
        # is done with (its message emitted) before the next is read.
        await until(lambda: s.stats.lines == 3, "every line of the file")
        await stop(task)
        assert s.stats.repeats == 2

    asyncio.run(go())
    got = events(out)
    assert len(got) == 3
    assert [e["decision"] is None for e in got] == [True, True, False]
    assert got[2]["decision"]["reason"].startswith("3 x Xid 13")
    assert len(got[2]["decision"]["evidence"]) == 3


def test_an_unreadable_state_file_is_set_aside(tmp_path: Path) -> None:
    cfg = config(tmp_path, command=["true"])
    assert cfg.state_file is not None
    cfg.state_file.write_text("garbage")
    s = XidScraper(cfg, Collected())
    assert s.policy.quarantined() == []
    assert cfg.state_file.with_name("xid-state.json.bad").read_text() == "garbage"


def test_an_untimed_kernel_line_is_dated_when_it_was_read_never_at_the_epoch(
    tmp_path: Path,
) -> None:
    """Plain `dmesg` stamps lines with seconds since boot (Bumblebee-Project/Bumblebee#677):
    the collector is the line's shipper, and dates it when it read it."""
    line = real_lines("bumblebee_677_dmesg_monotonic.log")[0].decode()
    out = Collected()
    s = XidScraper(config(tmp_path, command=["true"]), out)
    before = time.time_ns()
    asyncio.run(s.handle_line(line))
    after = time.time_ns()
    (event,) = events(out)
    assert event["xid"] == 32
    assert before <= event["ts_ns"] <= after


def test_a_consequential_xid_carries_its_cause_in_the_node_event(tmp_path: Path) -> None:
    line = real_lines("ogkm_1150_kernel_prefix_xid.log")[0].decode()
    out = Collected()
    s = XidScraper(config(tmp_path, command=["true"]), out)
    asyncio.run(s.handle_line(line))
    (event,) = events(out)
    assert (event["xid"], event["caused_by"]) == (45, 149)
