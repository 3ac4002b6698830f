"""The collectors there are: every `railtrace/collectors/<package>/spec.py`'s `SPECS`.

Discovered from the folders on disk, so a collector is added by adding its folder: the
`collect` settings section (`collect_settings_fields`), the `railtrace collect` commands and
the collector process all read `SPECS`. They come in the order of their default metrics
ports, which must differ (one port per role, so the collectors of a host can share a settings
file); the order is the one the commands are listed in.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any

from pydantic import Field

import railtrace.collectors
from railtrace.collectors.spec import CollectorSpec

#: The module of a collector package that holds its specs, and the name it exports them by.
SPEC_MODULE = "spec"
SPECS_NAME = "SPECS"


def discover() -> tuple[CollectorSpec[Any], ...]:
    """Every spec of the subpackages of `railtrace.collectors` that have a spec module."""
    package = railtrace.collectors
    found: list[CollectorSpec[Any]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module_name = f"{package.__name__}.{info.name}.{SPEC_MODULE}"
        if not info.ispkg or importlib.util.find_spec(module_name) is None:
            continue
        specs = getattr(importlib.import_module(module_name), SPECS_NAME)
        found.extend(specs)
    found.sort(key=lambda spec: _port(spec.metrics_listen))
    _check_unique([s.name for s in found], "collector name")
    _check_unique([s.metrics_listen for s in found], "default metrics_listen")
    return tuple(found)


def _port(listen: str) -> int:
    return int(listen.rpartition(":")[2])


def _check_unique(values: list[str], what: str) -> None:
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise RuntimeError(f"two collectors share a {what}: {', '.join(twice)}")


SPECS = discover()


def spec(name: str) -> CollectorSpec[Any]:
    """The collector named `name`; a ValueError naming the known ones otherwise."""
    for s in SPECS:
        if s.name == name:
            return s
    known = ", ".join(s.name for s in SPECS)
    raise ValueError(f"unknown collector role {name!r}; one of {known}")


def collect_settings_fields() -> dict[str, Any]:
    """The `collect` settings fields the collectors bring, as pydantic's `create_model` takes
    them: a section per collector, empty by default."""
    return {s.name: (s.config, Field(default_factory=s.default)) for s in SPECS}


def metrics_listen_fields() -> dict[str, Any]:
    """The `collect.metrics_listen` fields: one "host:port" per collector."""
    return {s.name: (str, s.metrics_listen) for s in SPECS}
