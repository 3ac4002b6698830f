"""GETBULK walks of several table columns at once, and pysnmp values made plain.

pysnmp's bulk_walk_cmd walks one column per request stream and, on a timeout, yields and
keeps going; a poll of ~20 columns wants them side by side in one GETBULK (one round trip per
`max_repetitions` rows) and wants a timeout to end the poll. Hence this small walker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyasn1.type import univ
from pysnmp.hlapi.v3arch.asyncio import ContextData, SnmpEngine, bulk_cmd
from pysnmp.proto import errind, rfc1902, rfc1905

from railtrace.collectors.snmp.messages import Scalar

#: A walk that needs more GETBULKs than this is an agent looping, not a big switch.
MAX_REQUESTS = 2000


class SnmpError(Exception):
    """A poll that failed: timeout, authentication, an error-status or a misbehaving agent."""


class SnmpTimeoutError(SnmpError):
    """No answer within the target's timeout and retries: an agent away, not one that refused."""


def plain(value: Any) -> Scalar:
    """A pysnmp value as JSON wants it: counters, gauges and enums as int, IpAddress dotted,
    OIDs dotted, printable strings as text and other octets as colon-separated hex (MACs).
    Trailing NULs are padding, not text: NX-OS sends lldpRemPortId "mgmt0" in 16 octets."""
    if isinstance(value, rfc1902.IpAddress):
        return ".".join(str(b) for b in value.asOctets())
    if isinstance(value, univ.Integer):
        return int(value)
    if isinstance(value, univ.ObjectIdentifier):
        return ".".join(str(p) for p in value)
    if isinstance(value, univ.OctetString):
        raw: bytes = value.asOctets()
        text: str | None
        try:
            text = (raw.rstrip(b"\0") or raw).decode("utf-8")  # all NULs: octets
        except UnicodeDecodeError:
            text = None
        if text is not None and (text.isprintable() or not raw):
            return text
        return ":".join(f"{b:02x}" for b in raw)
    return str(value.prettyPrint())


def _ends_column(value: Any) -> bool:
    return isinstance(
        value, rfc1905.EndOfMibView | rfc1905.NoSuchObject | rfc1905.NoSuchInstance | univ.Null
    )


async def walk_columns(
    engine: SnmpEngine,
    auth: Any,
    transport: Any,
    columns: Sequence[str],
    max_repetitions: int,
) -> dict[str, Scalar]:
    """Every instance of every column (numeric OID -> plain value); raises SnmpError."""
    cursor = {c: rfc1902.ObjectName(c) for c in columns}  # column -> last OID seen
    prefixes = dict(cursor)
    out: dict[str, Scalar] = {}
    for _ in range(MAX_REQUESTS):
        if not cursor:
            return out
        asked = list(cursor)
        indication, status, index, table = await bulk_cmd(
            engine,
            auth,
            transport,
            ContextData(),
            0,
            max_repetitions,
            *[(cursor[c], univ.Null("")) for c in asked],
            lookupMib=False,
        )
        if isinstance(indication, errind.RequestTimedOut):
            raise SnmpTimeoutError(str(indication))
        if indication:
            raise SnmpError(str(indication))
        if status:
            raise SnmpError(f"{status.prettyPrint()} at varbind {index}")
        if not table:
            raise SnmpError("empty GETBULK response")
        done: set[str] = set()
        for position, (name, value) in enumerate(table):
            column = asked[position % len(asked)]
            if column in done:
                continue
            if _ends_column(value) or not prefixes[column].isPrefixOf(name):
                done.add(column)
                continue
            if name <= cursor[column]:
                raise SnmpError(f"agent returned non-increasing OID {name} after {cursor[column]}")
            cursor[column] = name
            out[str(name)] = plain(value)
        for column in done:
            del cursor[column]
    raise SnmpError(f"walk did not end after {MAX_REQUESTS} GETBULK requests")
