"""`railtrace collect logs`: NCCL / PyTorch log files of running jobs as raw-logs messages.

Each followed file becomes messages in the raw-logs format (`railtrace.streams.wire.LogBatch`:
consecutive complete lines, keyed by job id) that the workers' LogParsers read exactly as they
read `railtrace replay --kafka`. A batch goes out when it is full (`max_lines`), when no line
arrived for `idle_flush_ms`, at the latest `max_delay_ms` after its first line was read, and at
once when it holds a hang or error line (`alert_patterns`), which also marks it a state change.

Sources and line numbers. A path's first content is the source `logs/<job>/<node>:<path>`
(this host's name and the file's absolute path: every GPU node of a job may write a
`stdout.log` of its own, and two of one name under one source would lose one, since the parser
keeps one position per source), and `line_no` is the 1-based line number in the file as it lies
on disk (`sed -n '<line_no>p' file` shows the line). Every later content of the same path, after
a rotation (rename and a new file) or a truncation (copytruncate, `> file`), is a new
*generation* and a new source, `logs/<job>/<node>:<path>#<generation>` (1, 2, ...), whose lines
are again numbered from 1 as they lie in the new content. A new source is needed because the
parser drops any line whose (source, line_no) is not beyond what it already consumed (a
redelivery after a crash): restarting the numbering under the old source name would have the
pipeline drop the new content. The new source also starts a fresh parser, so an NCCL
communicator set up before the rotation is not known to the lines after it; hang lines
(watchdog timeouts, WARN lines) stand alone and are read all the same.

Unfinished lines are held until their newline arrives; when a content will not grow again
(rotated away and quiet for `rotate_grace_ms`, truncated, or deleted) its unfinished last line
is sent as a final line. Lines written by the job after the scraper's last read and before a
copytruncate are in the copy only and are not sent (logrotate's copytruncate races the writer
anyway); rotated files are looked for only in the directory of the path.

Offsets (`offsets.FileOffset`) are saved after every delivered batch; see `offsets`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from railtrace.collectors.emit import Emit, Outgoing
from railtrace.collectors.hosts import offsets
from railtrace.collectors.hosts.config import LogScraperConfig
from railtrace.collectors.hosts.jobpath import PathTemplate, slurm_job_id
from railtrace.collectors.hosts.offsets import FileOffset
from railtrace.collectors.hosts.tailer import Line, Tail, decode
from railtrace.streams.records import valid_job_id
from railtrace.streams.wire import LogBatch, encode_log_batch

log = logging.getLogger(__name__)

STREAM = "logs"
#: Bytes of a file's start searched for SLURM_JOB_ID.
SLURM_SCAN_BYTES = 64 * 1024


def source_name(job_id: str, node: str, path: str, generation: int) -> str:
    """The raw-logs `source` of one content of a path on `node`; see the module docstring.

    >>> source_name("4812", "gpu7", "/var/log/jobs/4812/rank0.log", 0)
    'logs/4812/gpu7:/var/log/jobs/4812/rank0.log'
    >>> source_name("4812", "gpu7", "/var/log/jobs/4812/rank0.log", 2)
    'logs/4812/gpu7:/var/log/jobs/4812/rank0.log#2'
    """
    name = f"logs/{job_id}/{node}:{os.path.abspath(path)}"
    return f"{name}#{generation}" if generation else name


@dataclass(slots=True)
class ScraperStats:
    """What the scraper did, so that losses and odd input are visible rather than silent."""

    files_adopted: int = 0
    batches: int = 0
    lines: int = 0
    alert_batches: int = 0
    rotations: int = 0
    truncations: int = 0
    partial_lines_flushed: int = 0
    lines_cut: int = 0
    files_without_job: int = 0
    files_lost: int = 0
    read_errors: int = 0
    emit_errors: int = 0


@dataclass(slots=True)
class _Follower:
    """One file content: its open file, what is delivered (`entry`) and what waits to be."""

    tail: Tail
    entry: FileOffset
    buffer: list[Line] = field(default_factory=list)
    first_read_at: float | None = None
    last_growth: float = 0.0
    alert: bool = False
    retiring_since: float | None = None

    @property
    def read_end(self) -> int:
        return self.buffer[-1].end if self.buffer else self.entry.offset


@dataclass(slots=True)
class _Path:
    """A followed path: its job, its current content and rotated-away ones still draining."""

    path: str
    job_id: str
    current: _Follower | None = None
    retiring: list[_Follower] = field(default_factory=list)
    next_generation: int = 1
    missing_since: float | None = None


class LogScraper:
    """Follows the configured files and emits their lines; `run` loops, `poll` is one round."""

    def __init__(
        self,
        config: LogScraperConfig,
        emit: Emit,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.stats = ScraperStats()
        self._emit = emit
        self._clock = clock
        self.node = config.node or socket.gethostname()
        self._templates = [PathTemplate(p) for p in config.paths]
        self._alert = re.compile("|".join(f"(?:{p})" for p in config.alert_patterns))
        self._paths: dict[str, _Path] = {}
        self._undecided: dict[str, float] = {}  # path -> when first seen without a job id
        self._ignored: dict[str, tuple[int, int]] = {}  # path -> identity that named no job
        self._next_rescan = 0.0
        self._restore()

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Poll until cancelled; files stay open between polls and are closed at the end."""
        log.info(
            "following log files",
            extra={"paths": self.config.paths, "state_file": str(self.config.state_file)},
        )
        try:
            while True:
                await self.poll()
                await asyncio.sleep(self.config.poll_interval_ms / 1000)
        finally:
            self.close()

    def close(self) -> None:
        for p in self._paths.values():
            for f in self._followers(p):
                f.tail.close()

    def open_files(self) -> int:
        """File contents followed now: current ones and rotated-away ones still draining."""
        return sum(len(p.retiring) + (p.current is not None) for p in self._paths.values())

    async def poll(self) -> None:
        """One round: find new files, notice rotations, read, and send what is due."""
        now = self._clock()
        if now >= self._next_rescan:
            self._rescan(now)
            self._next_rescan = now + self.config.rescan_interval_ms / 1000
        self._decide_undecided(now)
        for p in list(self._paths.values()):
            try:
                self._check_path(p, now)
            except OSError as exc:
                self.stats.read_errors += 1
                log.warning("cannot check log path", extra={"path": p.path, "error": str(exc)})
            for f in list(p.retiring):
                await self._service(p, f, now)
            if p.current is not None:
                await self._service(p, p.current, now)
            if p.current is None and not p.retiring and p.missing_since is not None:
                del self._paths[p.path]
                self._save()
                log.info("log file gone, forgotten", extra={"path": p.path})

    # -- finding files and their jobs --------------------------------------------------------

    def _rescan(self, now: float) -> None:
        for template in self._templates:
            try:
                found = template.expand()
            except OSError as exc:
                self.stats.read_errors += 1
                log.warning(
                    "cannot expand path template",
                    extra={"template": template.template, "error": str(exc)},
                )
                continue
            for path in found:
                if path in self._paths or path in self._undecided:
                    continue
                if not _is_file(path):
                    continue
                ignored = self._ignored.get(path)
                if ignored is not None and ignored == _identity(path):
                    continue
                job = template.job_id(path)
                if job is None:
                    self._undecided[path] = now
                elif valid_job_id(job):
                    self._adopt(path, job)
                else:
                    self._ignore(path, "its job id is not one (letters, digits and ._:@+-)")

    def _decide_undecided(self, now: float) -> None:
        for path, since in list(self._undecided.items()):
            try:
                with open(path, "rb") as fh:
                    head = fh.read(SLURM_SCAN_BYTES)
            except OSError:
                del self._undecided[path]  # gone: found again by a later rescan if it returns
                continue
            complete = [decode(x) for x in head.split(b"\n")[:-1]][: self.config.slurm_scan_lines]
            job = slurm_job_id(complete)
            if job is not None:
                del self._undecided[path]
                self._adopt(path, job)
                continue
            settled = (
                len(complete) >= self.config.slurm_scan_lines
                or len(head) >= SLURM_SCAN_BYTES
                or now - since >= self.config.job_id_wait_ms / 1000
            )
            if not settled:
                continue
            del self._undecided[path]
            if self.config.fallback_job_id is not None:
                self._adopt(path, self.config.fallback_job_id)
            else:
                self._ignore(
                    path, "no {job_id} in its template, no SLURM_JOB_ID in its first lines"
                )

    def _ignore(self, path: str, why: str) -> None:
        """Skip a file that names no job railtrace can serve, until it is replaced."""
        self.stats.files_without_job += 1
        ident = _identity(path)
        if ident is not None:
            self._ignored[path] = ident
        log.warning("log file names no job: skipped", extra={"path": path, "why": why})

    def _adopt(self, path: str, job_id: str) -> None:
        tail = Tail.open(path, 0, self.config.max_line_bytes)
        if tail is None:
            return
        p = _Path(path, job_id)
        p.current = self._new_follower(tail, p, 0)
        self._paths[path] = p
        self.stats.files_adopted += 1
        log.info("following log file", extra={"path": path, "job_id": job_id})

    def _new_follower(self, tail: Tail, p: _Path, generation: int) -> _Follower:
        entry = FileOffset(
            path=p.path,
            dev=tail.dev,
            ino=tail.ino,
            offset=tail.pos,
            line_no=0,
            generation=generation,
            job_id=p.job_id,
            year=datetime.now(UTC).year,
            head=tail.head,
        )
        p.next_generation = max(p.next_generation, generation + 1)
        return _Follower(tail, entry, last_growth=self._clock())

    # -- rotation and disappearance ----------------------------------------------------------

    def _check_path(self, p: _Path, now: float) -> None:
        ident = _identity(p.path)
        cur = p.current
        if ident is None:
            if p.missing_since is None:
                p.missing_since = now
            if cur is not None and now - p.missing_since >= self.config.forget_after_s:
                self._retire(p, now)
            return
        p.missing_since = None
        if cur is not None and cur.tail.identity == ident:
            return
        tail = Tail.open(p.path, 0, self.config.max_line_bytes)
        if tail is None:
            return
        if cur is not None:
            self.stats.rotations += 1
            log.info(
                "log file rotated: reading the old file to its end, the new one from its start",
                extra={"path": p.path, "generation": p.next_generation},
            )
            self._retire(p, now)
        p.current = self._new_follower(tail, p, p.next_generation)
        self._save()

    def _retire(self, p: _Path, now: float) -> None:
        cur = p.current
        if cur is None:
            return
        cur.retiring_since = now
        cur.entry.current = False
        p.retiring.append(cur)
        p.current = None

    # -- reading and sending -----------------------------------------------------------------

    async def _service(self, p: _Path, f: _Follower, now: float) -> None:
        cfg = self.config
        try:
            if f.tail.replaced(f.read_end):
                await self._truncated(p, f)
                return  # the new content is read in the next poll
            lines = f.tail.read(cfg.read_chunk_bytes)
        except OSError as exc:
            self.stats.read_errors += 1
            log.warning("cannot read log file", extra={"path": p.path, "error": str(exc)})
            return
        if lines:
            if not f.buffer:
                f.first_read_at = now
            f.buffer.extend(lines)
            f.last_growth = now
            if not f.alert and any(self._alert.search(x.text) for x in lines):
                f.alert = True
        while len(f.buffer) >= cfg.max_lines:
            if not await self._send(f, cfg.max_lines):
                return
        quiet = now - f.last_growth
        waited = 0.0 if f.first_read_at is None else now - f.first_read_at
        due = f.alert or quiet >= cfg.idle_flush_ms / 1000 or waited >= cfg.max_delay_ms / 1000
        if f.buffer and due and not await self._send(f, len(f.buffer)):
            return
        if f.retiring_since is not None and quiet >= cfg.rotate_grace_ms / 1000:
            await self._finish(p, f)

    async def _truncated(self, p: _Path, f: _Follower) -> None:
        """Close the cut content (what was read of it, and its unfinished line) and go on with
        the same open file as a new generation from byte 0. If sending fails, nothing changes
        and the next poll, which finds the file still cut, tries again."""
        if not await self._close_content(f):
            return
        self.stats.truncations += 1
        log.info(
            "log file truncated: reading it again from its start as a new source",
            extra={"path": p.path, "generation": p.next_generation, "offset": f.entry.offset},
        )
        if f.retiring_since is not None:
            await self._finish(p, f)
            return
        f.tail.pos = 0
        f.tail.head = b""
        f.tail.refresh_head()
        p.current = self._new_follower(f.tail, p, p.next_generation)
        self._save()

    async def _close_content(self, f: _Follower) -> bool:
        """Send everything read of a content that will not grow, its unfinished line too."""
        if f.buffer and not await self._send(f, len(f.buffer)):
            return False
        partial = f.tail.take_partial()
        if partial is not None:
            f.buffer.append(partial)
            if not await self._send(f, 1):
                return False
            self.stats.partial_lines_flushed += 1
        return True

    async def _finish(self, p: _Path, f: _Follower) -> bool:
        """A rotated-away or vanished content: send what is left, close it, forget it."""
        if not await self._close_content(f):
            return False
        f.tail.close()
        if f in p.retiring:
            p.retiring.remove(f)
        self._save()
        return True

    async def _send(self, f: _Follower, n: int) -> bool:
        """Emit the first `n` buffered lines as one batch; record them delivered only after
        emit returned. False (lines kept for the next poll) if emit failed."""
        lines = f.buffer[:n]
        e = f.entry
        texts = tuple(x.text for x in lines)
        alert = any(self._alert.search(t) for t in texts) if f.alert else False
        # The shipper's stamp, for lines with no time of their own before the file's first
        # stamped one: the batch leaves within `max_delay_ms` of its first line being read.
        sent_ns = time.time_ns()
        batch = LogBatch(
            e.job_id,
            source_name(e.job_id, self.node, e.path, e.generation),
            e.line_no + 1,
            texts,
            e.year,
            sent_ns,
        )
        try:
            await self._emit(
                Outgoing(
                    stream=STREAM,
                    key=e.job_id.encode(),
                    value=encode_log_batch(batch),
                    state_change=alert,
                    ts_ns=sent_ns,
                )
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.stats.emit_errors += 1
            log.warning(
                "could not hand log lines to delivery; retrying",
                extra={"source": batch.source, "line_no": batch.first_line_no, "error": str(exc)},
            )
            return False
        # No await between emit returning and the state write: a cancellation cannot land
        # between them, so the state always says exactly what was delivered.
        del f.buffer[:n]
        e.offset = lines[-1].end
        e.line_no += n
        self.stats.batches += 1
        self.stats.lines += n
        self.stats.lines_cut += sum(x.cut for x in lines)
        if alert:
            self.stats.alert_batches += 1
        if not f.buffer:
            f.first_read_at = None
            f.alert = False
        else:
            f.alert = any(self._alert.search(x.text) for x in f.buffer)
        self._save()
        return True

    # -- state -------------------------------------------------------------------------------

    @staticmethod
    def _followers(p: _Path) -> list[_Follower]:
        return [*p.retiring, *([p.current] if p.current is not None else [])]

    def _save(self) -> None:
        entries = [f.entry for p in self._paths.values() for f in self._followers(p)]
        offsets.save(self.config.state_file, entries)

    def _restore(self) -> None:
        """Take up the files of the state file where their delivery stood."""
        for e in offsets.load(self.config.state_file):
            p = self._paths.get(e.path)
            if p is None:
                p = self._paths[e.path] = _Path(e.path, e.job_id)
            p.next_generation = max(p.next_generation, e.generation + 1)
            f = self._resume(e)
            if f is None:
                continue
            if e.current and f.tail.path == e.path and p.current is None:
                p.current = f
            else:
                f.retiring_since = self._clock()
                f.entry.current = False
                p.retiring.append(f)
        # A path whose content is gone or was cut gets its new content as the next generation
        # in the first poll (`_check_path`); a path that is gone altogether is then forgotten.

    def _resume(self, e: FileOffset) -> _Follower | None:
        """The file of entry `e` opened at its offset: at its path, else renamed beside it.
        None (counted as lost) when that content is gone or was cut while we were away."""
        candidates = [e.path]
        folder = os.path.dirname(e.path) or "."
        with contextlib.suppress(OSError):
            candidates += sorted(
                d.path for d in os.scandir(folder) if d.path != e.path and d.is_file()
            )
        for path in candidates:
            if _identity(path) != (e.dev, e.ino):
                continue
            tail = Tail.open(path, e.offset, self.config.max_line_bytes)
            if tail is None:
                continue
            now_head = tail.head
            tail.head = e.head
            if tail.identity != (e.dev, e.ino) or tail.replaced(e.offset):
                tail.close()
                break
            tail.head = now_head
            return _Follower(tail, e, last_growth=self._clock())
        self.stats.files_lost += 1
        log.warning(
            "log file content of the state file is gone or was cut; its undelivered rest is lost",
            extra={"path": e.path, "generation": e.generation, "offset": e.offset},
        )
        return None


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _is_file(path: str) -> bool:
    return _identity(path) is not None


async def run(config: LogScraperConfig, emit: Emit) -> None:
    """Follow the configured log files and emit their lines until cancelled."""
    await LogScraper(config, emit).run()
