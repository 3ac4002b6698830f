"""Which transport failure a message reports, and which peer it names.

The same texts arrive two ways: as NCCL WARN lines, and echoed by PyTorch after `Last error:`
when NCCL_DEBUG was not set. Both go through `classify`, so a peer is read the same way
whichever path carried it.
"""

from __future__ import annotations

import re

from .common import Malformed, peer_address

IB_COMPLETION = "ib-completion"
IB_ASYNC_EVENT = "ib-async-event"
IB_RETRY_EXCEEDED = "ib-retry-exceeded"
IB_VERBS = "ib-verbs"
OFI_COMPLETION = "ofi-completion"
SOCKET = "socket"
REMOTE_ERROR = "remote-error"
SYSTEM_ERROR = "system-error"

# NCCL <= 2.22 "with error 12, opcode 0, ...", 2.19+ "with status=12 opcode=0 ...", current
# "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=...". The plugin name varies (IB, IBP, IB/GIN).
_COMPLETION = re.compile(r"Got completion from peer (\S+?)(?:<\d+>)? with (?:status=|error )")
_ASYNC_EVENT = re.compile(
    r"NET/IB\s*:\s*(?:\S+:\d+ )?(?:Got (?:non-fatal )?async event|async fatal)"
)
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


def classify(msg: str) -> tuple[str, str | None] | None:
    """Return `(kind, peer)` for a transport failure message, None for anything else.

    Raises Malformed when the message is clearly a completion or socket failure but the peer
    cannot be read, because such a line is exactly the evidence that must not vanish silently.
    """
    if "Got completion from peer" in msg:
        m = _COMPLETION.search(msg)
        if m is None:
            raise Malformed(
                "net-error", "IB completion error without a readable 'peer ADDR with status'"
            )
        return IB_COMPLETION, peer_address(m.group(1))
    if "async" in msg and _ASYNC_EVENT.search(msg):
        return IB_ASYNC_EVENT, None
    if "NET/Socket : socket progress error" in msg:
        return SOCKET, None
    s = _SOCKET_PEER.search(msg)
    if s is not None:
        token = next(g for g in s.groups() if g is not None)
        return SOCKET, peer_address(token)
    if any(anchor in msg for anchor in _SOCKET_ANCHORS):
        raise Malformed("net-error", "socket failure without a readable 'ADDR<port>' peer")
    if "retry count" in msg.lower() and _RETRY.search(msg):
        return IB_RETRY_EXCEEDED, None
    if "Call to ibv_" in msg and _IBV_CALL.search(msg):
        return IB_VERBS, None
    if "NET/OFI" in msg and _OFI.search(msg):
        return OFI_COMPLETION, None
    return None


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
