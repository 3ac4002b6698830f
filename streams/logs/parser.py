"""One input file (or stream) of a job's ranks, fed line by line, turned into JobFacts.

The parser never raises on input: whatever arrives (binary junk, NUL bytes, invalid UTF-8,
megabyte lines), the good lines around it still yield their facts, and a line that clearly
meant something but could not be read becomes a DeadLetter that says why.

A parser can be put away and resumed (`snapshot` / `restore`), and told each line's position
in its source so that lines delivered twice after a crash are recognised and ignored: that is
what lets it run in a streaming worker whose state lives in a changelogged table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, tzinfo
from typing import Any

from ..records import JobFact, LogOrigin, NetError
from .common import NOWHERE, Malformed, Where
from .envdump import EnvRules
from .kernel import KernelRules
from .nccl import NcclLine, NcclRules, bare, match_prefix
from .netmsg import ANCHORS, fields_in
from .parser_input import MAX_LINE_BYTES, decode
from .parser_stats import ParseStats, dead_letter
from .progress import ProgressRules, latest_reports
from .pytorch import TorchRules
from .ras import RasRules
from .timestamps import Clock
from .torchwatch import WatchdogRules
from .undated import STRUCTURE

#: Layout of `LogParser.snapshot`; bumped whenever a field changes meaning, so a worker never
#: resumes from state it would misread.
SNAPSHOT_VERSION = 1
_PIECES = re.compile(r"\r\n?|\n")


class LogParser:
    """Stateful per input file: carries the last timestamp, the year, the current communicator
    per (host, pid, tid), the host of the last NCCL line (lent to PyTorch and kernel lines),
    and the env dumps not yet ended (`pause`).

    A line without a time of its own takes the time of the nearest earlier stamped line of the
    file, or, before the file's first stamp, the log shipper's stamp on its message (`shipped`);
    its events say so in `origin.dated_by`. Before both, its facts come out undated (time 0):
    `streams.logs.undated` dates what can be dated from the job's other files and makes the
    rest dead letters, so no fact is ever placed at the epoch.

    All of that state is bounded in size (see the MAX_* constants of the rule modules), so a
    parser can follow a job for weeks, and it can be saved with `snapshot` and resumed with
    `restore`, which continues exactly as the saved parser would have.
    """

    def __init__(
        self,
        job_id: str,
        source: str,
        year_hint: int | None = None,
        host_hint: str = "",
        local: tzinfo = UTC,
    ) -> None:
        """`host_hint`: the host the file belongs to as its name says (`sources.SourceHosts`),
        lent to its lines until an NCCL line names one; "" when unknown. `local`: the zone of
        stamps that carry none (the site's, from the settings; a snapshot does not keep it)."""
        self.job_id = job_id
        self.source = source
        self.stats = ParseStats()
        self._year_hint = year_hint
        self._position = 0
        self._clock = Clock(year_hint, local)
        #: The line of the last stamp seen (0: none yet), whose time untimed lines borrow.
        self._stamped_line = 0
        self._dated_label = (0, "")
        self._shipped_ns: int | None = None
        self._where = Where(host_hint, 0) if host_hint else NOWHERE
        self._nccl = NcclRules(job_id, source)
        self._torch = TorchRules(job_id, source)
        self._watch = WatchdogRules(job_id, source)
        self._kernel = KernelRules(job_id, source)
        self._ras = RasRules(job_id, source)
        self._progress = ProgressRules(job_id, source)
        self._env = EnvRules(job_id, source)

    def shipped(self, ts_ns: int | None) -> None:
        """The stamp a log shipper put on the lines fed next (when it read or sent them), or
        None when they came without one: what dates a line before the file's first stamp."""
        self._shipped_ns = ts_ns

    @property
    def position(self) -> int:
        """The 1-based position in the source of the last line consumed; 0 before the first."""
        return self._position

    def feed(self, line: str | bytes, line_no: int | None = None) -> list[JobFact]:
        """Facts of one input line (a trailing newline is ignored). Never raises on input.

        `line_no` is the line's 1-based position in its source, when the caller knows it. Under
        at-least-once delivery the lines after the last committed offset arrive again after a
        crash, while the restored state may already include them; so a line at or below
        `position` is ignored (no facts, no state change, counted in `stats.redelivered`).
        Positions may skip ahead (lines lost upstream) and become the line number of the
        facts' origins and dead letters. Without `line_no` the line is the one after
        `position`, which is how a whole file is read.
        """
        stats = self.stats
        if line_no is None:
            line_no = self._position + 1
        elif line_no <= self._position:
            stats.redelivered += 1
            return []
        self._position = line_no
        stats.lines += 1
        facts: list[JobFact] = []
        problem: Malformed | None = None
        try:
            text, cut = decode(line)
            if cut:
                unit = "bytes" if isinstance(line, bytes) else "characters"
                problem = Malformed(
                    "line-length",
                    f"line of {len(line)} {unit} cut to the first {MAX_LINE_BYTES} before parsing",
                )
            # Progress bars rewrite their line with CR, and a caller may hand over a chunk
            # with several lines: each piece is parsed as a line of its own.
            pieces = _PIECES.split(text) if "\r" in text or "\n" in text else (text,)
            for piece in pieces:
                try:
                    self._piece(piece, line_no, facts)
                except Malformed as exc:
                    problem = problem or exc
            if len(pieces) > 1:
                facts = latest_reports(facts)
        except Exception as exc:  # the contract is "never raises": report it instead
            problem = Malformed("internal", f"parser error {type(exc).__name__}: {exc}")
        stats.facts += len(facts)
        if problem is not None:
            stats.malformed += 1
            stats.dead_letters.append(dead_letter(problem, line, line_no, self.source, self.job_id))
        elif not facts:
            stats.skipped += 1
        return facts

    def pause(self) -> list[JobFact]:
        """Facts of what the input left open when it pauses: an env dump is read when its
        process's next line comes, and at a pause (the end of a file, the end of a message
        from a log shipper, which sends one when the file goes quiet) as it stands. Feeding
        may go on after it."""
        facts = self._env.pause()
        self.stats.facts += len(facts)
        return facts

    def snapshot(self) -> dict[str, Any]:
        """All state needed to resume, as plain JSON values (dict, list, str, int, bool, None).

        `LogParser.restore(snapshot)` gives a parser whose future output is identical to this
        one's, also after a JSON round trip. Dead letters are not included (they are reported
        as they happen; `stats.malformed` keeps their count). The size is bounded by the
        rule modules' caps: about 1.3 KB after one rank's ~500 NCCL INFO lines setting up five
        communicators, under 1 MB (Kafka's default record limit) with every table full.
        """
        stats = self.stats
        return {
            "v": SNAPSHOT_VERSION,
            "job_id": self.job_id,
            "source": self.source,
            "year_hint": self._year_hint,
            "position": self._position,
            "stats": {
                "lines": stats.lines,
                "facts": stats.facts,
                "skipped": stats.skipped,
                "malformed": stats.malformed,
                "redelivered": stats.redelivered,
            },
            "clock": self._clock.snapshot(),
            "stamped_line": self._stamped_line,
            "where": [self._where.host, self._where.pid],
            "nccl": self._nccl.snapshot(),
            "torch": self._torch.snapshot(),
            "watch": self._watch.snapshot(),
            "kernel": self._kernel.snapshot(),
            "ras": self._ras.snapshot(),
            "env": self._env.snapshot(),
        }

    @classmethod
    def restore(cls, snap: dict[str, Any], local: tzinfo = UTC) -> LogParser:
        """The parser saved by `snapshot`, ready to take the next line.

        Raises ValueError for a snapshot of another format version (never guess at state that
        may mean something else) and for one whose fields cannot be read.
        """
        version = snap.get("v") if isinstance(snap, dict) else None
        if type(version) is not int or version != SNAPSHOT_VERSION:
            raise ValueError(
                f"LogParser snapshot version {version!r} is not supported: this railtrace "
                f"reads version {SNAPSHOT_VERSION} only"
            )
        try:
            year_hint = snap["year_hint"]
            parser = cls(
                str(snap["job_id"]),
                str(snap["source"]),
                None if year_hint is None else int(year_hint),
                local=local,
            )
            parser._position = int(snap["position"])
            counts = snap["stats"]
            parser.stats = ParseStats(
                lines=int(counts["lines"]),
                facts=int(counts["facts"]),
                skipped=int(counts["skipped"]),
                malformed=int(counts["malformed"]),
                redelivered=int(counts["redelivered"]),
            )
            parser._clock.load(snap["clock"])
            # Parsers saved before the stamped line was kept: any stamp seen was earlier.
            parser._stamped_line = int(snap.get("stamped_line", 0))
            if not parser._stamped_line and parser._clock.last_ns:
                parser._stamped_line = -1
            host, pid = snap["where"]
            parser._where = Where(str(host), int(pid))
            parser._nccl.load(snap["nccl"])
            parser._torch.load(snap["torch"])
            parser._kernel.load(snap["kernel"])
            parser._ras.load(snap["ras"])
            if "watch" in snap:  # absent from parsers saved before watchdog states were read
                parser._watch.load(snap["watch"])
            if "env" in snap:  # absent from parsers saved before env dumps were read
                parser._env.load(snap["env"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ValueError(
                f"unreadable LogParser snapshot (v{SNAPSHOT_VERSION}): {type(exc).__name__}: {exc}"
            ) from exc
        return parser

    def _piece(self, text: str, line_no: int, out: list[JobFact]) -> None:
        """Add the facts of one line (or one piece of a chunk) to `out`; raises Malformed
        after adding what the line did give."""
        prefixed = match_prefix(text) if "NCCL " in text else None
        found, lead_end = self._clock.stamp(text, c10=prefixed is None)
        dated = ""
        if found is not None:
            ts_ns = found
            self._stamped_line = line_no
        elif self._stamped_line:
            ts_ns, dated = self._clock.last_ns, self._borrowed_label()
        elif self._shipped_ns is not None:
            ts_ns, dated = self._shipped_ns, "shipper"
        else:
            ts_ns = 0  # undated: see `streams.logs.undated`
        body = text[lead_end:]
        facts = self._rules(text, body, prefixed, lead_end, ts_ns, line_no)
        if dated and facts:
            # Events only: what says where the job runs is not judged by its time, and marking
            # every NCCL INFO line would cost a third of the parse. Not a fact that read a
            # time of its own from the line (a trainer's step line).
            facts = [
                _dated(f, dated)
                if f.origin.line_no == line_no and f.ts_ns == ts_ns and not isinstance(f, STRUCTURE)
                else f
                for f in facts
            ]
        # Every other rule first: a line one of them reads is no line of an env dump.
        if (
            facts
            or prefixed is not None
            or not self._env.read(body, ts_ns, line_no, self._where, out)
        ):
            self._env.interrupt(body, line_no, out)
            out.extend(facts)

    def _borrowed_label(self) -> str:
        """`line N` of the stamp an untimed line borrows, made once per stamped line."""
        at, label = self._dated_label
        if at != self._stamped_line:
            label = "an earlier line" if self._stamped_line < 0 else f"line {self._stamped_line}"
            self._dated_label = (self._stamped_line, label)
        return label

    def _rules(
        self,
        text: str,
        body: str,
        prefixed: NcclLine | None,
        lead_end: int,
        ts_ns: int,
        line_no: int,
    ) -> list[JobFact]:
        if prefixed is not None:
            if not prefixed.host and prefixed.level == "WARN":
                prefixed = self._lent(prefixed)
            elif prefixed.host != self._where.host or prefixed.pid != self._where.pid:
                self._where = Where(prefixed.host, prefixed.pid)
            return self._nccl.handle(prefixed, ts_ns, line_no)
        if "NVRM: " in text:
            if "NVRM: Xid" in text:
                return self._kernel.handle(text, lead_end, ts_ns, line_no, self._where)
            return self._kernel.handle_nvrm(text, lead_end, ts_ns, line_no, self._where)
        if "mlx5_core " in text:
            return self._kernel.handle_nic(text, lead_end, ts_ns, line_no, self._where)
        anchored = any(anchor in body for anchor in ANCHORS)
        # A transport failure pasted without NCCL's prefix is read as NCCL's, unless it is the
        # text PyTorch's `Last error:` announced (PyTorch's rules then own it, and may drop it
        # as a repeat).
        awaited = anchored and self._torch.snapshot()["awaiting_last_error"]
        facts = self._torch.handle(body, ts_ns, line_no, self._where)
        if facts:
            return [_with_fields(f) for f in facts]
        if anchored and not awaited:
            return self._nccl.handle(self._lent(bare(body)), ts_ns, line_no)
        facts = self._watch.handle(body, ts_ns, line_no, self._where)
        if facts:
            return facts
        progress = self._progress.handle(body, ts_ns, line_no, self._where, lead_end > 0)
        return progress or self._ras.handle(body, ts_ns, line_no)

    def _lent(self, line: NcclLine) -> NcclLine:
        """A WARN line whose prefix named no host, with the host (and pid, if it named none)
        of the file's last NCCL line or of the file's name. INFO lines get none: a rank or
        channel must not be placed on a guess (see NcclRules.handle)."""
        return replace(line, host=self._where.host, pid=line.pid or self._where.pid)


def _dated(fact: JobFact, dated_by: str) -> JobFact:
    """`fact` marked as dated by `dated_by` rather than by its own line."""
    o = fact.origin
    return replace(fact, origin=LogOrigin(o.source, o.line_no, dated_by))


def _with_fields(fact: JobFact) -> JobFact:
    """A NetError PyTorch's rules read from a rethrown message, with the completion status
    or async event the message quotes: a host-side status must not count against a link
    because PyTorch carried it rather than NCCL."""
    if not isinstance(fact, NetError) or fact.completion or fact.async_event:
        return fact
    found, event = fields_in(fact.detail)
    if found is None and event is None:
        return fact
    return replace(fact, completion=found, async_event=event)


def parse_lines(
    lines: Iterable[str | bytes], *, job_id: str, source: str, year_hint: int | None = None
) -> tuple[list[JobFact], ParseStats]:
    """Parse a whole file's lines with one LogParser (paused at the end); returns the facts
    in input order."""
    parser = LogParser(job_id, source, year_hint)
    facts: list[JobFact] = []
    for line in lines:
        facts.extend(parser.feed(line))
    facts.extend(parser.pause())
    return facts, parser.stats
