"""What ibverbs' completion statuses and async events say about where a failure lies.

A completion error names the queue pair's verdict on a work request; only some of those point
at the wire between two NICs. The rest are the host's own doing (memory registration, ACS
breaking GPUDirect, a request the other end's software refused) and must not be held against
a link: a cable swap will not fix them. Names are the `ibv_wc_status` enum names NCCL's
`ibvWcStatusStr` prints; events are the strings of `ibv_event_type_str` (rdma-core), which
NCCL's async thread prints as they are.

Fabric-side statuses:

- 12 `IBV_WC_RETRY_EXC_ERR`: the requester retried until `NCCL_IB_RETRY_CNT` ran out without
  an ACK: the peer is unreachable (link down, routing, loss); NCCL's own hint for it is the
  network timeout.
- 13 `IBV_WC_RNR_RETRY_EXC_ERR`: the responder kept answering "receiver not ready" past the
  RNR retry count: the far end stopped draining, which a fabric fault ahead of it also causes.
- 20 `IBV_WC_RESP_TIMEOUT_ERR`: no response arrived in time, as 12 but reported by devices that
  time out responses themselves.

5 `IBV_WC_WR_FLUSH_ERR` is a consequence: once a queue pair is in error every outstanding
request is flushed with it, so it says only that something failed before it on that queue
pair, on whichever side. Every other documented status is host-side: local length,
protection, access or QP-operation errors; the remote end refusing a request (9, 10) or
failing it (11), an aborted operation, a fatal device error.
"""

from __future__ import annotations

from ..records import ErrorSide

F, H, C = ErrorSide.FABRIC, ErrorSide.HOST, ErrorSide.CONSEQUENCE

#: ibv_wc_status -> (enum name, side).
WC_STATUS: dict[int, tuple[str, ErrorSide]] = {
    1: ("IBV_WC_LOC_LEN_ERR", H),
    2: ("IBV_WC_LOC_QP_OP_ERR", H),
    3: ("IBV_WC_LOC_EEC_OP_ERR", H),
    4: ("IBV_WC_LOC_PROT_ERR", H),
    5: ("IBV_WC_WR_FLUSH_ERR", C),
    6: ("IBV_WC_MW_BIND_ERR", H),
    7: ("IBV_WC_BAD_RESP_ERR", H),
    8: ("IBV_WC_LOC_ACCESS_ERR", H),
    9: ("IBV_WC_REM_INV_REQ_ERR", H),
    10: ("IBV_WC_REM_ACCESS_ERR", H),
    11: ("IBV_WC_REM_OP_ERR", H),
    12: ("IBV_WC_RETRY_EXC_ERR", F),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", F),
    14: ("IBV_WC_LOC_RDD_VIOL_ERR", H),
    15: ("IBV_WC_REM_INV_RD_REQ_ERR", H),
    16: ("IBV_WC_REM_ABORT_ERR", H),
    17: ("IBV_WC_INV_EECN_ERR", H),
    18: ("IBV_WC_INV_EEC_STATE_ERR", H),
    19: ("IBV_WC_FATAL_ERR", H),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", F),
    21: ("IBV_WC_GENERAL_ERR", ErrorSide.UNKNOWN),  # "other error": says nothing of where
}

#: ibv_event_type_str text -> side. Port and subnet-manager events are the fabric changing
#: under the NIC (a port going down or coming back is a flap); queue, CQ and device errors are
#: the host's.
ASYNC_EVENTS: dict[str, ErrorSide] = {
    "port error": F,
    "port active": F,
    "path migrated": F,
    "path migration request error": F,
    "LID change": F,
    "P_Key change": F,
    "SM change": F,
    "client reregistration": F,
    "CQ error": H,
    "local work queue catastrophic error": H,
    "invalid request local work queue error": H,
    "local access violation work queue error": H,
    "local catastrophic error": H,
    "SRQ catastrophic error": H,
    "SRQ limit reached": H,
    "last WQE reached": H,
    "GID table change": H,
    "WQ fatal": H,
}


def status(code: int) -> tuple[str, ErrorSide]:
    """The enum name and side of a completion status; an undocumented one is UNKNOWN.

    >>> [str(status(n)[1]) for n in (12, 13, 5, 4, 9, 10, 99)]
    ['fabric', 'fabric', 'consequence', 'host', 'host', 'host', 'unknown']
    >>> status(12)[0], status(99)[0]
    ('IBV_WC_RETRY_EXC_ERR', '')
    """
    return WC_STATUS.get(code, ("", ErrorSide.UNKNOWN))


def event_side(event: str) -> ErrorSide:
    """The side of an async event by its ibverbs text; UNKNOWN for any other text."""
    return ASYNC_EVENTS.get(event, ErrorSide.UNKNOWN)
