"""`railtrace collect xid`: NVIDIA Xid errors in a host's kernel log as node events, each with
the quarantine decision it leads to (value format: `nodeevents`).

Kernel lines come from a command's stdout (`journalctl -k -f -o short-iso`, or
`dmesg -w --time-format iso`), run again after it exits, or from a followed file. They are read
by the project's own log parser (`railtrace.streams.logs.LogParser`, whose kernel rules know the
`NVRM: Xid (PCI:...): <code>, ...` variants and the syslog / journal / dmesg prefixes), so the
collector and the pipeline cannot disagree about what an Xid line says.

Both journalctl and dmesg print old lines again when restarted; the fingerprints of the Xid
lines already handled are remembered (bounded) and kept in the state file with the quarantine
state, so a repeat is neither sent nor counted twice. Lines that cannot be read are counted and
logged, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shlex
import socket
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from railtrace.collectors.emit import Emit, Outgoing
from railtrace.collectors.hosts import nodeevents, requests
from railtrace.collectors.hosts.atomicfile import write_atomic
from railtrace.collectors.hosts.config import XidScraperConfig
from railtrace.collectors.hosts.quarantine import Decision, QuarantinePolicy, XidObservation
from railtrace.collectors.hosts.tailer import Tail
from railtrace.streams.logs import LogParser
from railtrace.streams.records import XidEvent

log = logging.getLogger(__name__)

STATE_VERSION = 1
#: Longest kernel line read from a command; a longer one is skipped and counted.
MAX_LINE = 1 << 20
EMIT_RETRY_S = 1.0
REQUESTS_EVERY_S = 1.0


@dataclass(slots=True)
class XidStats:
    lines: int = 0
    xids: int = 0
    repeats: int = 0
    malformed: int = 0
    events: int = 0
    quarantines: int = 0
    releases: int = 0
    source_restarts: int = 0
    emit_errors: int = 0


class XidScraper:
    """Kernel lines in, node events out; `run` reads the configured source until cancelled."""

    def __init__(self, config: XidScraperConfig, emit: Emit) -> None:
        self.config = config
        self.node = config.node or socket.gethostname()
        self.stats = XidStats()
        self.source = str(config.file) if config.file is not None else shlex.join(config.command)
        self._emit = emit
        self._parser = LogParser("kernel", self.source)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self.policy = QuarantinePolicy(config.policy)
        self._load()

    # -- sources -----------------------------------------------------------------------------

    async def run(self) -> None:
        log.info("reading kernel log for Xids", extra={"source": self.source, "node": self.node})
        lines = (
            file_lines(self.config.file, self.config.poll_interval_ms / 1000)
            if self.config.file is not None
            else self._command_forever()
        )
        watcher = asyncio.create_task(self._watch_requests())
        try:
            async for line in lines:
                await self.handle_line(line)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch_requests(self) -> None:
        """Apply operator requests (see `requests`) as they arrive."""
        directory = self.config.requests_dir
        if directory is None:
            return
        while True:
            for path, request in requests.pending(directory):
                await self.apply(request)
                path.unlink(missing_ok=True)
            await asyncio.sleep(REQUESTS_EVERY_S)

    async def apply(self, request: requests.Request) -> Decision | None:
        """Carry out an operator's release or clear; None when the node was not quarantined
        (or, for clear, is held for suspected silent data corruption)."""
        if request.action == "release":
            by = f"{request.by} ({request.reason})" if request.reason else request.by
            decision = await self.release(request.node, by)
        else:
            decision = await self.clear(request.node, request.reason or f"cleared by {request.by}")
        if decision is None:
            log.warning(
                "operator request changed nothing",
                extra={
                    "node": request.node,
                    "action": request.action,
                    "quarantined": self.policy.is_quarantined(request.node),
                    "sdc": self.policy.is_sdc_suspect(request.node),
                },
            )
        return decision

    async def _command_forever(self) -> AsyncIterator[str]:
        while True:
            async for line in command_lines(self.config.command):
                yield line
            self.stats.source_restarts += 1
            log.warning(
                "kernel log command exited; running it again",
                extra={"command": self.source, "delay_s": self.config.restart_delay_s},
            )
            await asyncio.sleep(self.config.restart_delay_s)

    # -- lines -------------------------------------------------------------------------------

    async def handle_line(self, line: str) -> None:
        """Parse one kernel line; emit a node event for each new Xid on it."""
        self.stats.lines += 1
        text = line.rstrip("\r\n")
        # A line with no time of its own (plain `dmesg`) before any stamped one is dated when
        # it was read: the collector is its shipper.
        self._parser.shipped(time.time_ns())
        facts = self._parser.feed(text)
        bad = self._parser.stats.dead_letters
        if bad:
            self.stats.malformed += len(bad)
            for d in bad:
                log.warning(
                    "unreadable kernel line", extra={"reason": d.reason, "raw": d.raw[:200]}
                )
            bad.clear()
        for fact in facts:
            if isinstance(fact, XidEvent):
                await self._xid(fact, text)

    async def _xid(self, x: XidEvent, line: str) -> None:
        self.stats.xids += 1
        node = x.host if self.config.node_from_line and x.host else self.node
        ts_ns = x.ts_ns
        mark = hashlib.sha1(f"{node}\0{line}".encode(), usedforsecurity=False).hexdigest()[:20]
        if mark in self._seen:
            self.stats.repeats += 1
            return
        obs = XidObservation(node, ts_ns, x.xid, x.pci, x.detail, x.caused_by)
        decision = self.policy.observe(obs)
        value = nodeevents.xid_event(
            obs, line, self.source, self.policy.is_quarantined(node), decision
        )
        self._remember(mark)
        if decision is not None:
            self.stats.quarantines += 1
            log.warning(
                "node quarantined",
                extra={"node": node, "reason": decision.reason, "sdc": decision.sdc},
            )
        await self._send(node, value, ts_ns)

    # -- operator actions --------------------------------------------------------------------

    async def release(self, node: str, by: str = "operator") -> Decision | None:
        """Lift any quarantine of `node` (suspected silent data corruption included)."""
        return await self._lifted(self.policy.release(node, time.time_ns(), by))

    async def clear(self, node: str, reason: str = "node reported healthy") -> Decision | None:
        """Lift a quarantine of `node` unless it is for suspected silent data corruption."""
        return await self._lifted(self.policy.clear(node, time.time_ns(), reason))

    async def _lifted(self, decision: Decision | None) -> Decision | None:
        if decision is not None:
            self.stats.releases += 1
            log.info("node released", extra={"node": decision.node, "reason": decision.reason})
            await self._send(decision.node, nodeevents.release_event(decision), decision.ts_ns)
        return decision

    # -- delivery and state ------------------------------------------------------------------

    async def _send(self, node: str, value: bytes, ts_ns: int) -> None:
        """Emit (retrying: a quarantine must not be lost), then save the state."""
        message = Outgoing(nodeevents.STREAM, node.encode(), value, True, ts_ns)
        while True:
            try:
                await self._emit(message)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.stats.emit_errors += 1
                log.warning(
                    "could not hand node event to delivery; retrying",
                    extra={"node": node, "error": str(exc)},
                )
                await asyncio.sleep(EMIT_RETRY_S)
        self.stats.events += 1
        self._save()

    def _remember(self, mark: str) -> None:
        self._seen[mark] = None
        while len(self._seen) > self.config.remember_lines:
            self._seen.popitem(last=False)

    def _save(self) -> None:
        if self.config.state_file is None:
            return
        doc = {"v": STATE_VERSION, "policy": self.policy.snapshot(), "seen": list(self._seen)}
        write_atomic(self.config.state_file, orjson.dumps(doc))

    def _load(self) -> None:
        path = self.config.state_file
        if path is None or not path.exists():
            return
        try:
            doc = orjson.loads(path.read_bytes())
            if not isinstance(doc, dict) or doc.get("v") != STATE_VERSION:
                raise ValueError("not a version-1 Xid collector state")
            self.policy = QuarantinePolicy.restore(self.config.policy, doc["policy"])
            for mark in doc["seen"][-self.config.remember_lines :]:
                self._seen[str(mark)] = None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Refusing to start would leave the node's Xids unwatched; starting afresh forgets
            # quarantines, which is said loudly. The bad file is kept for the operator.
            bad = path.with_name(path.name + ".bad")
            log.error(
                "Xid collector state unreadable, set aside; quarantines start afresh",
                extra={"state_file": str(path), "moved_to": str(bad), "error": str(exc)},
            )
            with contextlib.suppress(OSError):
                path.replace(bad)


async def command_lines(command: list[str]) -> AsyncIterator[str]:
    """The stdout lines of `command` until it exits; it is terminated if the reader stops."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        stdin=asyncio.subprocess.DEVNULL,
        limit=MAX_LINE,
    )
    assert proc.stdout is not None
    try:
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:  # longer than MAX_LINE: asyncio dropped it
                log.warning("kernel line too long, skipped", extra={"limit": MAX_LINE})
                continue
            if not raw:
                break
            yield raw.decode("utf-8", errors="replace")
        rc = await proc.wait()
        log.info("kernel log command exited", extra={"command": command, "returncode": rc})
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            with contextlib.suppress(asyncio.CancelledError, ProcessLookupError):
                await asyncio.wait_for(proc.wait(), 5)


async def file_lines(path: Path, poll_s: float) -> AsyncIterator[str]:
    """The lines of a kernel log file from its start, then as they are appended; a rotated or
    truncated file is read again from its start (repeats are recognised by the caller)."""
    tail: Tail | None = None
    try:
        while True:
            if tail is None:
                tail = Tail.open(str(path), 0, MAX_LINE)
                if tail is None:
                    await asyncio.sleep(poll_s)
                    continue
            if tail.replaced(0):
                tail.close()
                tail = None
                continue
            lines = tail.read(1 << 20)
            for line in lines:
                yield line.text
            if lines:
                continue
            try:
                st = os.stat(path)
                moved = (st.st_dev, st.st_ino) != tail.identity
            except OSError:
                moved = False  # renamed away and not yet recreated: keep reading the old one
            if moved:
                partial = tail.take_partial()
                if partial is not None:
                    yield partial.text
                tail.close()
                tail = None
                continue
            await asyncio.sleep(poll_s)
    finally:
        if tail is not None:
            tail.close()


async def run(config: XidScraperConfig, emit: Emit) -> None:
    """Read the configured kernel log for Xids and emit node events until cancelled."""
    await XidScraper(config, emit).run()
