"""Shapes every route shares: times, a cable and its ends, errors and health."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from railtrace.topology.ends import Endpoint, LinkRef

_NS = 1_000_000_000

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


def model_from(model: type[M], record: object, **computed: Any) -> M:
    """`model` showing `record`: each field not `computed` is the record's attribute of the
    same name. The model's fields are the one list of what the API shows of a record, so a
    shown field is added to the model alone; a model field the record lacks and that is not
    computed fails at once (AttributeError) instead of showing a default."""
    copied = {name: getattr(record, name) for name in model.model_fields if name not in computed}
    return model(**copied, **computed)


def record_from(record: type[R], model: BaseModel, **computed: Any) -> R:
    """The inverse of `model_from`: the dataclass `record` with each field the model has and
    `computed` does not taken from the model; the record's other fields keep their defaults."""
    shown = type(model).model_fields
    copied = {
        f.name: getattr(model, f.name)
        for f in dataclasses.fields(record)  # type: ignore[arg-type]
        if f.name in shown and f.name not in computed
    }
    return record(**copied, **computed)


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
        return model_from(cls, e)

    def to_record(self) -> Endpoint:
        return record_from(Endpoint, self)


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
