"""The layering, written as contracts and checked statically over every module's imports,
absolute and relative alike.

The pure core (topology, then streams) imports no broker, RPC, database or web library and
nothing of the adapters around it; each part of railtrace imports only the parts its row of
`MAY_IMPORT` names; only the CLI imports the composition root, and nothing imports the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Import package -> folder, as setup.py maps them.
ROOTS = {
    "railtrace.topology": "topology",
    "railtrace.streams": "streams",
    "railtrace.api": "api",
    "railtrace.proto": "proto",
    "railtrace": "railtrace",
}
#: Libraries the core never imports: they do I/O, or belong to one adapter.
IO_LIBRARIES = {
    "faust",
    "aiokafka",
    "kafka",
    "confluent_kafka",
    "grpc",
    "grpcio",
    "clickhouse_connect",
    "chdb",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "requests",
    "aiohttp",
}
CORE = ("topology", "streams")

#: Each part of railtrace and the other parts it may import (its own always). A part is the
#: first name under `railtrace.`.
MAY_IMPORT: dict[str, set[str]] = {
    # the core: the fabric, then what runs over it
    "topology": set(),
    "streams": {"topology"},
    # shared by every process
    "settings": {"streams", "topology", "collectors"},
    "private": set(),
    "logconfig": set(),
    "gctuning": set(),
    "proto": set(),
    "probes": set(),
    # adapters
    "store": {"streams", "topology", "settings", "private"},
    "kafka": {"settings"},
    "worker": {"streams", "topology", "settings", "kafka", "probes"},
    "sink": {"streams", "topology", "settings", "store", "kafka", "collectors", "probes"},
    "collectors": {"streams", "topology", "settings", "private", "proto", "kafka", "probes"},
    "alerts": {"streams", "topology", "settings", "collectors", "kafka", "probes"},
    "api": {"streams", "topology", "store", "private", "railtrace"},
    # tools: replay a capture, simulate one, draw a world, print tables
    "replay": {"streams", "topology", "settings", "store", "private", "collectors", "kafka"},
    "simulate": {"streams", "topology", "world"},
    "world": set(),
    "render": {"streams", "api", "replay"},
    # the composition root and the command line over it
    "compose": {
        "streams",
        "topology",
        "settings",
        "store",
        "kafka",
        "worker",
        "sink",
        "alerts",
        "api",
        "replay",
        "simulate",
        "render",
        "gctuning",
        "probes",
    },
    "cli": {
        "compose",
        "settings",
        "streams",
        "store",
        "api",
        "collectors",
        "simulate",
        "render",
        "logconfig",
        "private",
        "railtrace",
    },
    # the package itself: its version
    "railtrace": set(),
}


def _module(path: Path) -> tuple[str, bool]:
    """The module's import name, and whether it is a package's __init__."""
    rel = path.relative_to(ROOT)
    package = next(p for p, folder in ROOTS.items() if rel.parts[0] == folder)
    parts = [package, *rel.parts[1:]]
    parts[-1] = parts[-1].removesuffix(".py")
    init = parts[-1] == "__init__"
    return ".".join(parts[:-1] if init else parts), init


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, relative imports resolved to absolute names."""
    return _imports_of(path.read_text(), *_module(path))


def _imports_of(source: str, name: str, init: bool) -> set[str]:
    package = name if init else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # `from railtrace import kafka` imports the part `kafka`, not the package's root
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


def _part(module: str) -> str | None:
    """The part of railtrace `module` belongs to; None for other libraries."""
    parts = module.split(".")
    if parts[0] != "railtrace":
        return None
    # anything else under `railtrace.` is the package's own (`__version__`)
    return parts[1] if len(parts) > 1 and parts[1] in MAY_IMPORT else "railtrace"


SOURCES = sorted(
    p
    for folder in ROOTS.values()
    for p in (ROOT / folder).rglob("*.py")
    if "gen" not in p.relative_to(ROOT).parts
)


def test_there_is_a_core_to_check() -> None:
    core = [p for p in SOURCES if _part(_module(p)[0]) in CORE]
    assert len(core) > 50


def test_every_part_of_railtrace_has_a_contract() -> None:
    named = {[*_module(p)[0].split("."), "railtrace"][1] for p in SOURCES}
    assert named - set(MAY_IMPORT) == set()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_each_module_imports_only_what_its_part_may(path: Path) -> None:
    own = _part(_module(path)[0])
    assert own is not None
    bad = sorted(
        name
        for name in _imports(path)
        if (part := _part(name)) is not None and part != own and part not in MAY_IMPORT[own]
    )
    assert not bad, f"{path.relative_to(ROOT)} ({own}) imports {bad}"


@pytest.mark.parametrize(
    "path",
    [p for p in SOURCES if _part(_module(p)[0]) in CORE],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_the_core_imports_no_io_library(path: Path) -> None:
    bad = sorted(n for n in _imports(path) if n.split(".")[0] in IO_LIBRARIES)
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_only_the_cli_imports_the_composition_root_and_nothing_imports_the_cli() -> None:
    importers = {
        part
        for part, allowed in MAY_IMPORT.items()
        for wanted in ("compose", "cli")
        if wanted in allowed
    }
    assert importers == {"cli"}
    assert "cli" not in MAY_IMPORT["cli"]


def test_a_relative_import_is_resolved_so_the_contract_holds_for_it_too() -> None:
    """A core module reaching the store through `from ...store` is seen as importing
    `railtrace.store`, which no core row allows."""
    source = "from ...store import Store\nfrom .. import records\nfrom . import scoring\n"
    found = _imports_of(source, "railtrace.streams.attribution.probe", False)
    assert found == {
        "railtrace.store.Store",
        "railtrace.streams.records",
        "railtrace.streams.attribution.scoring",
    }
    assert "store" not in MAY_IMPORT["streams"]
