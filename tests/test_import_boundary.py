"""The core (topology and streams) must stay pure: no broker, RPC, database or web imports,
and nothing from the adapters around it. Checked statically over every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE_DIRS = [ROOT / "topology", ROOT / "streams"]
FORBIDDEN = {
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
}
FORBIDDEN_OURS = (
    "railtrace.store",
    "railtrace.api",
    "railtrace.replay",
    "railtrace.cli",
    "railtrace.compose",
    "railtrace.simulate",
    "railtrace.render",
)
#: The faust-streaming adapter lives beside the core it drives; it alone may import faust/kafka.
ADAPTER_DIRS = ("streams/worker/",)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


CORE_FILES = sorted(
    p
    for d in CORE_DIRS
    for p in d.rglob("*.py")
    if not p.relative_to(ROOT).as_posix().startswith(ADAPTER_DIRS)
)


def test_there_is_a_core_to_check():
    assert len(CORE_FILES) > 10


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_core_module_imports_nothing_from_io_layers(path):
    bad = sorted(
        name
        for name in _imports(path)
        if name.split(".")[0] in FORBIDDEN or name.startswith(FORBIDDEN_OURS)
    )
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
