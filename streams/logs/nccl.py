"""NCCL's own lines: `host:pid:tid [cudaDev] [file:line [(func)]] NCCL INFO|WARN message`.

NCCL names neither the communicator nor the job on most lines, so this module keeps the little
state needed to put the facts back together: which communicator each thread last started,
and which shared `commId` hash belongs to each communicator pointer of each process.

`Trees [c] d0/d1/d2->r->up` and `Ring cc : p -> r -> n` lines are not turned into edges: they
name no transport and no NIC, and every tree or ring connection NCCL sets up is also printed
as a `Channel ... via ...` line, which yields the same hop with its NIC.

The state is bounded (MAX_COMMUNICATORS entries per table, the least recently written
forgotten first), so a file that outlives thousands of communicators or process restarts keeps
a fixed size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..records import (
    ChannelEdge,
    InitComplete,
    JobFact,
    LogOrigin,
    NetDevice,
    NetDevices,
    NetError,
    RankInfo,
    RasReport,
)
from .common import Malformed, peer_address, remember
from .netmsg import read

# The host is matched leniently (any run of name characters) because wrappers glue text in
# front of it (`[1,0]<stdout>:host:...`, `worker-0: host:...`) and users redact it (`...-48`,
# `***`, `<hostname>`); a host right after another `:` is a pid or tid of a prefix that could
# not be read, unless the colon ends an mpirun tag (`<stdout>:`). Some captures drop
# `:pid:tid`; those lines are kept with pid 0. The `file:line` token is any one word: pastes
# turn it into a markdown link (`transport/[net_ib.cc:101](http://net_ib.cc:101/)`).
_PREFIX = re.compile(
    r"(?:(?<![\w.\-:*])|(?<=>:))(<[\w.\-]+>|[\w.\-]*\*[\w.*\-]*|[\w.\-]+)"
    r"(?::(\d+):(\d+))? \[(-?\d+)\] (?:\S+ (?:\([^)]*\) )?)?NCCL (INFO|WARN) ?"
)
# A line whose prefix was cut off or pasted without it: `[3] NCCL WARN ...`, `NCCL WARN ...`.
_BARE = re.compile(r"(?:(?<=\s)|^)(?:\[(-?\d+)\] )?(?:\S+ )?NCCL (INFO|WARN) ?")
_REDACTED = re.compile(r"<[^>]*>|.*\*.*")
# `[text](http://text/)`: what a paste into a markdown editor makes of `net_ib.cc:101` or an
# address, undone so the message reads as NCCL printed it.
_LINK = re.compile(r"\[([^\]\s]+)\]\((?:https?://)?\1/?\)")
_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) n[Rr]anks (\d+)(.*)$")
_CUDA_DEV = re.compile(r"\bcudaDev (-?\d+)")
_BUS_ID = re.compile(r"\bbusId (?:0x)?([0-9a-fA-F]+)")
_COMM_ID = re.compile(r"\bcommId (0x[0-9a-fA-F]+)")
_PHASE = re.compile(r"-\s*(\w+) (START|COMPLETE)\s*$")
_CHANNEL = re.compile(
    r"^Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fA-F]+\] -> (\d+)\[[0-9a-fA-F]+\]"
    r"(?: \[(send|receive)\])? via (.+?)\s*$"
)
_NET_VIA = re.compile(r"^NET/.+?/(\d+)(?:\(\d+\))?(?:/|\(|$)")
_USING = re.compile(r"^NET/IB\s*:\s*Using\b")
_VDEV = re.compile(r"\[(\d+)\]=\{([^}]*)\}")
_DEV = re.compile(r"\[(\d+)\]\s?([^\s:\[\]{},=]+):(\d+)[:\d]*/([A-Za-z]+)")
_RAS_DEAD = re.compile(r"^RAS declaring peer (\S+) as DEAD")

#: Stands in for the communicator pointer of channel lines seen before any init line of their
#: process; their comm_id then reads "host:pid:unknown".
UNKNOWN_COMM = "unknown"
#: Entries kept in each communicator table of one file: thread -> communicator, process ->
#: communicator, communicator -> commId, and the (process, communicator, rank) already reported.
#: A table only needs the communicators whose init lines are still being printed, about one per
#: process initializing at that moment, so 2048 covers even a file interleaving a 2048-GPU job;
#: what is dropped first is the oldest init (finished communicators, processes of old restarts).
#: Past the cap, a late channel line of a forgotten communicator gets the comm_id
#: "host:pid:pointer" instead of its commId, and a repeated init line repeats its RankInfo.
#: The cap also keeps a worst-case snapshot under Kafka's default 1 MB message size.
MAX_COMMUNICATORS = 2048


@dataclass(frozen=True, slots=True)
class NcclLine:
    """The parsed prefix of an NCCL log line and the message that follows it.

    `host` is "" when the prefix was missing or redacted (the parser lends the file's host);
    `cuda_dev` is the `[N]` of the prefix, None when the line had none.
    """

    host: str
    pid: int
    tid: int
    level: str
    msg: str
    cuda_dev: int | None = None


def match_prefix(line: str) -> NcclLine | None:
    """The NCCL prefix of `line`, wherever wrappers put it, or None for non-NCCL lines.

    >>> match_prefix("gpu3:2211:2290 [1] net.cc:9 NCCL WARN x")
    NcclLine(host='gpu3', pid=2211, tid=2290, level='WARN', msg='x', cuda_dev=1)
    >>> match_prefix("***:2211:2290 [1] NCCL INFO y").host, match_prefix("NCCL WARN z").msg
    ('', 'z')
    """
    m = _PREFIX.search(line)
    if m is not None:
        host, pid, tid, dev, level = m.groups()
        if _REDACTED.fullmatch(host):
            host = ""
        msg = _message(line, m.end())
        return NcclLine(host, int(pid or 0), int(tid or 0), level, msg, int(dev))
    m = _BARE.search(line)
    if m is None:
        return None
    dev, level = m.groups()
    return NcclLine("", 0, 0, level, _message(line, m.end()), None if dev is None else int(dev))


def bare(msg: str) -> NcclLine:
    """A transport failure message that came without any NCCL prefix (pasted on its own)."""
    return NcclLine("", 0, 0, "WARN", _message(msg, 0))


def _message(line: str, start: int) -> str:
    msg = line[start:].rstrip()
    return _LINK.sub(r"\1", msg) if "](" in msg else msg


class NcclRules:
    """Turns NCCL INFO/WARN lines of one file into facts, remembering communicators per thread."""

    def __init__(self, job_id: str, source: str) -> None:
        self._job_id = job_id
        self._source = source
        self._thread_comm: dict[tuple[str, int, int], str] = {}
        self._process_comm: dict[tuple[str, int], str] = {}
        self._comm_ids: dict[tuple[str, int, str], str] = {}
        self._ranks_seen: dict[tuple[str, int, str, int], None] = {}

    def snapshot(self) -> dict[str, Any]:
        """The tables as JSON lists of rows, oldest first, so eviction order survives a restore."""
        return {
            "thread_comm": [[h, pid, tid, ptr] for (h, pid, tid), ptr in self._thread_comm.items()],
            "process_comm": [[h, pid, ptr] for (h, pid), ptr in self._process_comm.items()],
            "comm_ids": [[h, pid, ptr, cid] for (h, pid, ptr), cid in self._comm_ids.items()],
            "ranks_seen": [[h, pid, cid, rank] for h, pid, cid, rank in self._ranks_seen],
        }

    def load(self, snap: dict[str, Any]) -> None:
        """Take over the tables written by `snapshot` (into a fresh instance)."""
        cap = MAX_COMMUNICATORS
        for host, pid, tid, ptr in snap["thread_comm"]:
            remember(self._thread_comm, (str(host), int(pid), int(tid)), str(ptr), cap)
        for host, pid, ptr in snap["process_comm"]:
            remember(self._process_comm, (str(host), int(pid)), str(ptr), cap)
        for host, pid, ptr, cid in snap["comm_ids"]:
            remember(self._comm_ids, (str(host), int(pid), str(ptr)), str(cid), cap)
        for host, pid, cid, rank in snap["ranks_seen"]:
            remember(self._ranks_seen, (str(host), int(pid), str(cid), int(rank)), None, cap)

    def handle(self, p: NcclLine, ts_ns: int, line_no: int) -> list[JobFact]:
        """Facts from one NCCL line; Malformed when a rule's anchor is there but not its fields."""
        msg = p.msg
        if p.level == "WARN":
            found = read(msg)
            if found is None:
                return []
            return [
                NetError(
                    ts_ns,
                    self._job_id,
                    p.host,
                    p.pid,
                    found.kind,
                    found.peer,
                    msg,
                    LogOrigin(self._source, line_no),
                    p.cuda_dev,
                    found.completion,
                    found.async_event,
                )
            ]
        if not p.host and (
            (msg.startswith("Channel ") and " -> " in msg)
            or ("comm 0x" in msg and " rank " in msg)
            or _USING.match(msg)
        ):
            # Lending the file's host to a rank or channel would place it on whatever process
            # printed last, and corrupt that process's communicators.
            raise Malformed("nccl-prefix", "NCCL INFO line without a readable host:pid:tid prefix")
        if msg.startswith("Channel "):
            return self._channel(p, ts_ns, line_no) if " -> " in msg else []
        if "comm 0x" in msg and " rank " in msg:
            return self._comm(p, ts_ns, line_no)
        if msg.startswith("NET/IB") and _USING.match(msg):
            return [self._devices(p, ts_ns, line_no)]
        if msg.startswith("RAS declaring peer"):
            return self._ras_dead(p, ts_ns, line_no)
        return []

    def _comm_id(self, host: str, pid: int, ptr: str) -> str:
        return self._comm_ids.get((host, pid, ptr)) or f"{host}:{pid}:{ptr}"

    def _comm(self, p: NcclLine, ts_ns: int, line_no: int) -> list[JobFact]:
        m = _COMM.search(p.msg)
        if m is None:
            raise Malformed(
                "nccl-comm", "communicator line without readable 'comm 0x.. rank R nranks N'"
            )
        ptr, rank_s, nranks_s, tail = m.groups()
        ptr = ptr.lower()
        phase = _PHASE.search(tail)
        if phase is not None and phase.group(1) != "Init":
            return []  # "- Destroy COMPLETE" / "- Abort COMPLETE": the communicator is going away
        hash_m = _COMM_ID.search(tail)
        if hash_m is not None:
            remember(
                self._comm_ids, (p.host, p.pid, ptr), hash_m.group(1).lower(), MAX_COMMUNICATORS
            )
        if phase is None or phase.group(2) == "START":
            remember(self._thread_comm, (p.host, p.pid, p.tid), ptr, MAX_COMMUNICATORS)
            remember(self._process_comm, (p.host, p.pid), ptr, MAX_COMMUNICATORS)
        comm_id = self._comm_id(p.host, p.pid, ptr)
        rank, nranks = int(rank_s), int(nranks_s)
        origin = LogOrigin(self._source, line_no)
        facts: list[JobFact] = []
        key = (p.host, p.pid, comm_id, rank)
        if key not in self._ranks_seen:
            remember(self._ranks_seen, key, None, MAX_COMMUNICATORS)
            dev = _CUDA_DEV.search(tail)
            bus = _BUS_ID.search(tail)
            facts.append(
                RankInfo(
                    ts_ns,
                    self._job_id,
                    p.host,
                    p.pid,
                    comm_id,
                    rank,
                    nranks,
                    int(dev.group(1)) if dev else None,
                    bus.group(1).lower() if bus else None,
                    origin,
                )
            )
        if phase is not None and phase.group(2) == "COMPLETE":
            facts.append(
                InitComplete(ts_ns, self._job_id, p.host, p.pid, comm_id, rank, nranks, origin)
            )
        return facts

    def _channel(self, p: NcclLine, ts_ns: int, line_no: int) -> list[JobFact]:
        m = _CHANNEL.match(p.msg)
        if m is None:
            raise Malformed(
                "nccl-channel",
                "channel line not of the form 'Channel NN/N : A[x] -> B[y] [[send|receive]] via T'",
            )
        channel, src, dst, direction, via = m.groups()
        net_dev: int | None = None
        if via.startswith("NET/"):
            dev = _NET_VIA.match(via)
            if dev is None:
                raise Malformed(
                    "nccl-channel", f"network channel without a device index in 'via {via}'"
                )
            net_dev = int(dev.group(1))
        # A capture that starts after init still shows which NIC carries which hop, so the edge
        # is kept under a per-process "unknown" communicator rather than dropped.
        ptr = self._thread_comm.get((p.host, p.pid, p.tid)) or self._process_comm.get(
            (p.host, p.pid), UNKNOWN_COMM
        )
        return [
            ChannelEdge(
                ts_ns,
                self._job_id,
                p.host,
                p.pid,
                self._comm_id(p.host, p.pid, ptr),
                int(channel),
                int(src),
                int(dst),
                direction or "",
                via,
                net_dev,
                LogOrigin(self._source, line_no),
            )
        ]

    def _devices(self, p: NcclLine, ts_ns: int, line_no: int) -> NetDevices:
        listing = p.msg.split(";", 1)[0]
        devices: list[NetDevice] = []
        groups = _VDEV.findall(listing)
        if groups:
            # Merged NICs (`[1]={[2] mlx5_0:1/RoCE, [3] mlx5_1:1/RoCE}`): channels name the
            # virtual index, so every member NIC is listed under it.
            for vindex, members in groups:
                for _, name, port, link in _DEV.findall(members):
                    devices.append(NetDevice(int(vindex), name, int(port), link))
        else:
            for index, name, port, link in _DEV.findall(listing):
                devices.append(NetDevice(int(index), name, int(port), link))
        if not devices:
            raise Malformed(
                "nccl-net-devices", "'NET/IB : Using' line without any '[i]name:port/LINK' entry"
            )
        return NetDevices(
            ts_ns, self._job_id, p.host, p.pid, tuple(devices), LogOrigin(self._source, line_no)
        )

    def _ras_dead(self, p: NcclLine, ts_ns: int, line_no: int) -> list[JobFact]:
        m = _RAS_DEAD.match(p.msg)
        if m is None:
            return []
        origin = LogOrigin(self._source, line_no)
        return [RasReport(ts_ns, self._job_id, peer_address(m.group(1)), p.msg, origin)]
