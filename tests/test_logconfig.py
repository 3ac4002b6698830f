"""The processes' log lines: a crash logged with its exception carries its traceback in the
key=value form too, or a worker's "Crashed" line says nothing of where."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import orjson
import pytest

from railtrace.logconfig import configure


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    """configure() sets the process's loggers: put them back for the tests after this one."""
    names = ("railtrace", "faust", "mode", "aiokafka")
    saved = [(lg, lg.handlers[:], lg.level, lg.propagate) for lg in map(logging.getLogger, names)]
    yield
    for lg, handlers, level, propagate in saved:
        lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate


@pytest.mark.parametrize("json", [False, True])
def test_an_exception_logged_keeps_its_traceback(
    json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    configure("INFO", json=json)
    try:
        {}["missing"]
    except KeyError:
        logging.getLogger("faust.agents.actor").exception("Crashed", extra={"agent": "parse"})
    err = capsys.readouterr().err
    text = orjson.loads(err)["exc"] if json else err
    assert "Traceback (most recent call last)" in text and "KeyError: 'missing'" in text
    assert "test_logconfig.py" in text
