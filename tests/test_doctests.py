"""The examples in the core's docstrings are part of its documentation; keep them true."""

import doctest
import importlib

import pytest

MODULES = [
    "railtrace.topology.cabling",
    "railtrace.topology.fabric",
    "railtrace.topology.lldp",
    "railtrace.topology.paths",
    "railtrace.topology.reference",
    "railtrace.topology.view",
    "railtrace.streams.attribution.scoring",
    "railtrace.streams.logs.envlines",
    "railtrace.streams.logs.envplace",
    "railtrace.streams.scheduler.common",
    "railtrace.streams.telemetry.lldp",
    "railtrace.streams.telemetry.stamps",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
