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

Offsets (`offsets.FileOffset`) are saved after every delivered batch; see `offsets`. Which files
are followed, and for which job, is `logfinder`'s to decide; what is kept per file, `logfollow`'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime

from railtrace.collectors.emit import Emit, Outgoing
from railtrace.collectors.hosts import offsets
from railtrace.collectors.hosts.config import LogScraperConfig
from railtrace.collectors.hosts.logfinder import LogFinder
from railtrace.collectors.hosts.logfollow import (
    FollowedPath,
    Follower,
    ScraperStats,
    identity,
    resume,
)
from railtrace.collectors.hosts.offsets import FileOffset
from railtrace.collectors.hosts.tailer import Tail
from railtrace.streams.wire import LogBatch, encode_log_batch

log = logging.getLogger(__name__)

STREAM = "logs"


def source_name(job_id: str, node: str, path: str, generation: int) -> str:
    """The raw-logs `source` of one content of a path on `node`; see the module docstring.

    >>> source_name("4812", "gpu7", "/var/log/jobs/4812/rank0.log", 0)
    'logs/4812/gpu7:/var/log/jobs/4812/rank0.log'
    >>> source_name("4812", "gpu7", "/var/log/jobs/4812/rank0.log", 2)
    'logs/4812/gpu7:/var/log/jobs/4812/rank0.log#2'
    """
    name = f"logs/{job_id}/{node}:{os.path.abspath(path)}"
    return f"{name}#{generation}" if generation else name


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
        self._alert = re.compile("|".join(f"(?:{p})" for p in config.alert_patterns))
        self._paths: dict[str, FollowedPath] = {}
        self._finder = LogFinder(config, self.stats, self._paths.__contains__, self._adopt)
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
            for f in p.followers():
                f.tail.close()

    def open_files(self) -> int:
        """File contents followed now: current ones and rotated-away ones still draining."""
        return sum(len(p.retiring) + (p.current is not None) for p in self._paths.values())

    async def poll(self) -> None:
        """One round: find new files, notice rotations, read, and send what is due."""
        now = self._clock()
        self._finder.poll(now)
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

    # -- following files ---------------------------------------------------------------------

    def _adopt(self, path: str, job_id: str) -> None:
        tail = Tail.open(path, 0, self.config.max_line_bytes)
        if tail is None:
            return
        p = FollowedPath(path, job_id)
        p.current = self._new_follower(tail, p, 0)
        self._paths[path] = p
        self.stats.files_adopted += 1
        log.info("following log file", extra={"path": path, "job_id": job_id})

    def _new_follower(self, tail: Tail, p: FollowedPath, generation: int) -> Follower:
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
        return Follower(tail, entry, last_growth=self._clock())

    # -- rotation and disappearance ----------------------------------------------------------

    def _check_path(self, p: FollowedPath, now: float) -> None:
        ident = identity(p.path)
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

    def _retire(self, p: FollowedPath, now: float) -> None:
        cur = p.current
        if cur is None:
            return
        cur.retiring_since = now
        cur.entry.current = False
        p.retiring.append(cur)
        p.current = None

    # -- reading and sending -----------------------------------------------------------------

    async def _service(self, p: FollowedPath, f: Follower, now: float) -> None:
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

    async def _truncated(self, p: FollowedPath, f: Follower) -> None:
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

    async def _close_content(self, f: Follower) -> bool:
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

    async def _finish(self, p: FollowedPath, f: Follower) -> bool:
        """A rotated-away or vanished content: send what is left, close it, forget it."""
        if not await self._close_content(f):
            return False
        f.tail.close()
        if f in p.retiring:
            p.retiring.remove(f)
        self._save()
        return True

    async def _send(self, f: Follower, n: int) -> bool:
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

    def _save(self) -> None:
        entries = [f.entry for p in self._paths.values() for f in p.followers()]
        offsets.save(self.config.state_file, entries)

    def _restore(self) -> None:
        """Take up the files of the state file where their delivery stood."""
        for e in offsets.load(self.config.state_file):
            p = self._paths.get(e.path)
            if p is None:
                p = self._paths[e.path] = FollowedPath(e.path, e.job_id)
            p.next_generation = max(p.next_generation, e.generation + 1)
            f = resume(e, self.config.max_line_bytes, self._clock())
            if f is None:
                self.stats.files_lost += 1
                continue
            if e.current and f.tail.path == e.path and p.current is None:
                p.current = f
            else:
                f.retiring_since = self._clock()
                f.entry.current = False
                p.retiring.append(f)
        # A path whose content is gone or was cut gets its new content as the next generation
        # in the first poll (`_check_path`); a path that is gone altogether is then forgotten.


async def run(config: LogScraperConfig, emit: Emit) -> None:
    """Follow the configured log files and emit their lines until cancelled."""
    await LogScraper(config, emit).run()
