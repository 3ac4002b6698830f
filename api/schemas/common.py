"""Shapes every route shares: times, a cable and its ends, errors and health."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from railtrace.topology.ends import Endpoint, LinkRef

_NS = 1_000_000_000


def iso_utc(ts_ns: int) -> str:
    """`2026-05-05T06:16:47.123456Z`: microseconds, or all nine digits when the nanoseconds
    are not zero, so no precision the input had is dropped."""
    seconds, ns = divmod(ts_ns, _NS)
    whole = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{ns:09d}"
    return f"{whole}.{fraction[:6] if fraction.endswith('000') else fraction}Z"


def iso_or_none(ts_ns: int | None) -> str | None:
    return None if ts_ns is None else iso_utc(ts_ns)


class EndpointOut(BaseModel):
    device: str
    interface: str

    @classmethod
    def from_record(cls, e: Endpoint) -> EndpointOut:
        return cls(device=e.device, interface=e.interface)

    def to_record(self) -> Endpoint:
        return Endpoint(device=self.device, interface=self.interface)


class LinkOut(BaseModel):
    id: str = Field(description="The cable's stable id in the cabling plan.")
    a: EndpointOut
    b: EndpointOut

    @classmethod
    def from_record(cls, link: LinkRef | None) -> LinkOut | None:
        if link is None:
            return None
        return cls(
            id=link.link_id, a=EndpointOut.from_record(link.a), b=EndpointOut.from_record(link.b)
        )

    def to_record(self) -> LinkRef:
        return LinkRef(link_id=self.id, a=self.a.to_record(), b=self.b.to_record())


class ErrorOut(BaseModel):
    """Every error but a validation error: what went wrong and, where it helps, what to do."""

    detail: str


class ValidationProblemOut(BaseModel):
    """One refused part of a request: where (`["query", "since"]`), what and why."""

    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(BaseModel):
    """A 422: every part of the request that was refused."""

    detail: list[ValidationProblemOut]


class HealthOut(BaseModel):
    status: Literal["ok", "ready"]
