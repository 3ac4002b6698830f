"""An API model that shows a record copies the fields it declares from the record by name, so
the model's field list is the one place that says what the API shows of it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from railtrace.api.schemas import EvidenceOut, SeriesOut
from railtrace.api.schemas.common import model_from, record_from
from railtrace.store import SampleSeries
from railtrace.streams.records import Evidence


@dataclass(frozen=True)
class _Reading:
    ts_ns: int
    device: str
    note: str = "kept"


class _ReadingOut(BaseModel):
    device: str
    at: str


def test_a_model_copies_its_fields_from_the_record_and_takes_the_rest_computed() -> None:
    shown = model_from(_ReadingOut, _Reading(5, "leaf01"), at="five")
    assert shown.model_dump() == {"device": "leaf01", "at": "five"}


def test_a_model_field_neither_on_the_record_nor_computed_fails_instead_of_defaulting() -> None:
    with pytest.raises(AttributeError, match="at"):
        model_from(_ReadingOut, _Reading(5, "leaf01"))


def test_a_record_read_back_takes_the_shown_fields_and_keeps_its_defaults_for_the_rest() -> None:
    shown = _ReadingOut(device="leaf01", at="five")
    assert record_from(_Reading, shown, ts_ns=5) == _Reading(5, "leaf01")


def test_evidence_survives_the_api_document_and_back() -> None:
    evidence = Evidence(1_777_961_807_123_456_789, "gnmi", "down", "l1", "oper-status down")
    shown = EvidenceOut.from_record(evidence)
    assert shown.ts == "2026-05-05T06:16:47.123456789Z"
    assert EvidenceOut.model_validate_json(shown.model_dump_json()).to_record() == evidence


def test_a_series_is_shown_field_for_field() -> None:
    series = SampleSeries("leaf01", "swp1", "in_errors", "", [1, 2], [0.5, 1.0], [1.0, 2.0])
    assert SeriesOut.from_record(series).model_dump() == {
        "device": "leaf01",
        "interface": "swp1",
        "metric": "in_errors",
        "qualifier": "",
        "ts_ns": [1, 2],
        "mean": [0.5, 1.0],
        "peak": [1.0, 2.0],
    }
