"""Which transport failure a message reports, which peer it names, and what else it says.

The same texts arrive two ways: as NCCL WARN lines, and echoed by PyTorch after `Last error:`
when NCCL_DEBUG was not set. Both go through `read` (PyTorch's rules through `classify`, the
parser adds `fields_in` to what they give), so a peer and a status are read the same way
whichever path carried them.

Completion errors have had five shapes (NCCL's `net_ib`):

- 2.3-2.9: `Got completion with error 12, opcode 0, len 0, vendor err 129` (no peer);
- 2.10-2.17: `Got completion from peer ADDR<port> with error 12, opcode 0, len 0, vendor err 129`;
- 2.18-2.19: the same `... (Send)` and, on RoCE, ` localGid G remoteGid G`;
- 2.20-2.27: `with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid G remoteGidsG`,
  from 2.22 ending in `hca mlx5_3`;
- 2.28+: `with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) ... vendor_err=129 ...`.

Async events: `Got async event : port error` up to 2.19, then prefixed by the `hca:port`
(`mlx5_0:1 Got async event : ...`), from 2.23 `async fatal event[ on QP (0x..)...]: ...` and
`Got async error event: ...`, from 2.28 `Got non-fatal async event: port error(10)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..records import AsyncEvent, Completion
from . import ibverbs
from .common import Malformed, peer_address

IB_COMPLETION = "ib-completion"
IB_ASYNC_EVENT = "ib-async-event"
IB_RETRY_EXCEEDED = "ib-retry-exceeded"
IB_VERBS = "ib-verbs"
OFI_COMPLETION = "ofi-completion"
SOCKET = "socket"
REMOTE_ERROR = "remote-error"
SYSTEM_ERROR = "system-error"

# The plugin name varies (IB, IBP, IB/GIN); the peer may be a host name or IPv6 with a zone.
_COMPLETION = re.compile(r"Got completion from peer (\S+?)(?:<\d+>)? with (?:status=|error )")
_STATUS = re.compile(r"(?:\bstatus=|\bwith error )(?:([A-Z][A-Z_]*)\()?(\d+)")
_OPCODE = re.compile(r"\bopcode[= ](?:[A-Z][A-Z_]*\()?(\d+)")
_LENGTH = re.compile(r"\blen[= ](\d+)")
_VENDOR = re.compile(r"\bvendor[ _]err[= ](\d+)(?: \((\w+)\))?")
_REQ_TYPE = re.compile(r"\breq_type=(\w+)")
_LOCAL_GID = re.compile(r"\blocalGid (\S+)")
# NCCL 2.18 printed " remoteGid G", later versions " remoteGids" glued to the GID.
_REMOTE_GID = re.compile(r"\bremoteGids?\s*(\S+)")
_HCA = re.compile(r"\bhca (\S+)")
_ASYNC_EVENT = re.compile(
    r"NET/IB\s*:\s*(?:(\S+?):(\d+) )?"
    r"(?:Got (?:non-fatal )?async (?:error )?event|async fatal event)(.*)$"
)
_EVENT_CODE = re.compile(r"\(\d+\)$")
_SOCKET_PEER = re.compile(
    r"Connection closed by remote peer (\S+?<\d+>)"
    r"|Call to (?:recv from|send to) (\S+?<\d+>) failed"
    r"|[Cc]onnect to (\S+?<\d+>) (?:failed|returned)"
    r"|NET/Socket : peer (\S+?<\d+>)"
)
_SOCKET_ANCHORS = ("Connection closed by remote peer", "Call to recv from", "Call to send to")
_RETRY = re.compile(
    r"transport retry counter exceeded|Transport retry count exceeded", re.IGNORECASE
)
_IBV_CALL = re.compile(r"Call to ibv_\w+ failed")
_OFI = re.compile(r"NET/OFI .*completed with error")
_REMOTE = ("remote process exited or there was a network error", "ncclRemoteError")
_SYSTEM = ("ncclSystemError", "unhandled system error")
#: Texts that mark a message as an IB transport failure even without any NCCL prefix.
ANCHORS = ("Got completion ", "async event", "async fatal event", "async error event")


@dataclass(frozen=True, slots=True)
class Failure:
    """What a transport failure message says: its kind, the peer it names, and for IB
    completion errors and async events their fields."""

    kind: str
    peer: str | None = None
    completion: Completion | None = None
    async_event: AsyncEvent | None = None


def read(msg: str) -> Failure | None:
    """The transport failure `msg` reports, None for anything else.

    Raises Malformed when the message is clearly a completion or socket failure but the peer
    (or, for a completion without one, the status) cannot be read, because such a line is
    exactly the evidence that must not vanish silently.
    """
    if "Got completion " in msg:
        if "Got completion from peer" in msg:
            m = _COMPLETION.search(msg)
            if m is None:
                raise Malformed(
                    "net-error", "IB completion error without a readable 'peer ADDR with status'"
                )
            return Failure(IB_COMPLETION, peer_address(m.group(1)), completion(msg))
        if "Got completion with error" in msg:
            found = completion(msg)
            if found is None:
                raise Malformed(
                    "net-error", "IB completion error without a readable 'with error N'"
                )
            return Failure(IB_COMPLETION, None, found)
    if "async" in msg:
        event = async_event(msg)
        if event is not None:
            return Failure(IB_ASYNC_EVENT, None, async_event=event)
    if "NET/Socket : socket progress error" in msg:
        return Failure(SOCKET)
    s = _SOCKET_PEER.search(msg)
    if s is not None:
        token = next(g for g in s.groups() if g is not None)
        return Failure(SOCKET, peer_address(token))
    if any(anchor in msg for anchor in _SOCKET_ANCHORS):
        raise Malformed("net-error", "socket failure without a readable 'ADDR<port>' peer")
    if "retry count" in msg.lower() and _RETRY.search(msg):
        return Failure(IB_RETRY_EXCEEDED)
    if "Call to ibv_" in msg and _IBV_CALL.search(msg):
        return Failure(IB_VERBS)
    if "NET/OFI" in msg and _OFI.search(msg):
        return Failure(OFI_COMPLETION)
    return None


def classify(msg: str) -> tuple[str, str | None] | None:
    """`(kind, peer)` of a transport failure message (see `read`), None for anything else."""
    found = read(msg)
    return None if found is None else (found.kind, found.peer)


def completion(msg: str) -> Completion | None:
    """The fields of a completion error message, None when it shows no status.

    >>> c = completion("Got completion from peer 10.0.0.5<37262> with "
    ...     "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  "
    ...     "localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.5 hca mlx5_3")
    >>> c.status, c.status_name, str(c.side), c.opcode, c.vendor_err, c.remote_gids, c.hca
    (12, 'IBV_WC_RETRY_EXC_ERR', 'fabric', 0, 129, ('::ffff:10.0.0.5',), 'mlx5_3')
    """
    s = _STATUS.search(msg)
    if s is None:
        return None
    code = int(s.group(2))
    name, side = ibverbs.status(code)
    vendor, opcode, length = _VENDOR.search(msg), _OPCODE.search(msg), _LENGTH.search(msg)
    req = _REQ_TYPE.search(msg)
    local, remote, hca = _LOCAL_GID.search(msg), _REMOTE_GID.search(msg), _HCA.search(msg)
    return Completion(
        status=code,
        status_name=name or s.group(1) or "",
        side=side,
        vendor_err=int(vendor.group(1)) if vendor else None,
        opcode=int(opcode.group(1)) if opcode else None,
        length=int(length.group(1)) if length else None,
        direction=(vendor.group(2) if vendor and vendor.group(2) else "")
        or (req.group(1) if req else ""),
        local_gid=local.group(1) if local else "",
        remote_gids=(remote.group(1),) if remote else (),
        hca=hca.group(1) if hca else "",
    )


def async_event(msg: str) -> AsyncEvent | None:
    """The event of an `NET/IB : ... async event` message, None for any other message.

    >>> async_event("NET/IB : mlx5_0:1 Got non-fatal async event: port error(10)")
    AsyncEvent(event='port error', side=<ErrorSide.FABRIC: 'fabric'>, hca='mlx5_0', port=1)
    """
    m = _ASYNC_EVENT.search(msg)
    if m is None:
        return None
    hca, port, rest = m.groups()
    event = rest.rsplit(":", 1)[-1].strip() if ":" in rest else ""
    event = _EVENT_CODE.sub("", event).strip()
    return AsyncEvent(event, ibverbs.event_side(event), hca or "", int(port) if port else None)


def fields_in(text: str) -> tuple[Completion | None, AsyncEvent | None]:
    """The completion or async event a longer text (a PyTorch rethrow) quotes, if any; never
    raises, since the text was already read for its kind."""
    if "Got completion " in text:
        return completion(text[text.find("Got completion ") :]), None
    if "async" in text:
        return None, async_event(text)
    return None, None


def classify_exception(text: str) -> str | None:
    """The NetError kind of a PyTorch/NCCL error-code message, or None.

    These lines (`ncclRemoteError: ...`, `... remote process exited or there was a network
    error ...`) say a peer failed without naming it; the `Last error:` that follows may.
    """
    if any(marker in text for marker in _REMOTE):
        return REMOTE_ERROR
    if any(marker in text for marker in _SYSTEM):
        return SYSTEM_ERROR
    return None
