"""A collector is one folder: its package's spec alone makes its `railtrace collect` command,
its `collect.<name>` settings section and its metrics, and nothing outside the folder names it.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from railtrace.cli import app
from railtrace.collectors import registry
from railtrace.collectors.metrics import PREFIX
from railtrace.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
COLLECTORS = ROOT / "railtrace" / "collectors"
README = ROOT / "deploy" / "collectors" / "README.md"
#: The source folders installed as `railtrace.*` (setup.py maps them).
SOURCES = ("railtrace", "streams", "api", "topology")
#: Where a module may name UFM although it is not the UFM collector, and why: the gNMI
#: profiles say, as documentation, that InfiniBand port counters come from NVIDIA's UFM
#: Telemetry product rather than from gNMI (which is why Quantum has no gNMI profile).
UFM_NAMED_IN_DOCSTRING = {COLLECTORS / "gnmi" / "profiles.py"}


def _modules() -> list[Path]:
    return sorted(p for folder in SOURCES for p in (ROOT / folder).rglob("*.py"))


def _docstring_lines(tree: ast.Module) -> range:
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return range(first.lineno, (first.end_lineno or first.lineno) + 1)
    return range(0)


def test_no_module_outside_the_ufm_package_names_ufm() -> None:
    named = []
    for path in _modules():
        if path.is_relative_to(COLLECTORS / "ufm"):
            continue
        text = path.read_text()
        allowed = _docstring_lines(ast.parse(text)) if path in UFM_NAMED_IN_DOCSTRING else range(0)
        named += [
            f"{path.relative_to(ROOT)}:{n}"
            for n, line in enumerate(text.splitlines(), 1)
            if "ufm" in line.lower() and n not in allowed
        ]
    assert not named, f"UFM named outside railtrace/collectors/ufm/: {named}"


def _collector_packages() -> list[str]:
    return sorted(p.parent.name for p in COLLECTORS.glob(f"*/{registry.SPEC_MODULE}.py"))


def test_the_wiring_imports_no_collector_package() -> None:
    # The settings, the `collect` commands and the collector process reach every collector
    # through the registry only, so none of them changes when a collector is added.
    wiring = [ROOT / "railtrace" / "settings.py", ROOT / "railtrace" / "cli" / "roles.py"]
    wiring += sorted(COLLECTORS.glob("*.py"))
    packages = {f"railtrace.collectors.{name}" for name in _collector_packages()}
    found = []
    for path in wiring:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if any(n == p or n.startswith(p + ".") for p in packages)
            ]
    assert not found


def test_the_registry_holds_the_spec_of_every_collector_package_on_disk() -> None:
    on_disk = [
        s.name
        for name in _collector_packages()
        for s in __import__(
            f"railtrace.collectors.{name}.{registry.SPEC_MODULE}", fromlist=["SPECS"]
        ).SPECS
    ]
    assert sorted(s.name for s in registry.SPECS) == sorted(on_disk)
    ports = [int(s.metrics_listen.rpartition(":")[2]) for s in registry.SPECS]
    assert ports == sorted(ports) and len(set(ports)) == len(ports)


@pytest.mark.parametrize("spec", registry.SPECS, ids=lambda s: s.name)
def test_each_spec_makes_its_command_its_settings_and_its_documented_metrics(spec: Any) -> None:
    collect = get_command(app).commands["collect"]  # type: ignore[attr-defined]
    assert collect.commands[spec.name].help == spec.help
    settings = Settings()
    assert spec.section(settings.collect) == spec.default()
    assert getattr(settings.collect.metrics_listen, spec.name) == spec.metrics_listen
    readme = README.read_text()
    undocumented = [f for f in spec.families if f"`{PREFIX}{f}" not in readme]
    assert not undocumented, f"metrics missing from {README}: {undocumented}"


DEMO_SPEC = '''
"""A collector that counts its ticks: only here to show that a folder is all it takes."""

from pydantic import BaseModel, ConfigDict

from ..metrics import counter
from ..spec import CollectorSpec, Role


class DemoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    every_s: float = 1.0


def build(config, emit, metrics):
    async def work():
        pass

    return Role(work, lambda: [counter("demo_ticks", "Ticks.", metrics.role, 3)])


SPECS = (
    CollectorSpec(
        name="demo",
        help="Count ticks (`collect.demo`).",
        config=DemoConfig,
        default=DemoConfig,
        metrics_listen="127.0.0.1:9499",
        build=build,
        families=("demo_ticks",),
    ),
)
'''

DEMO_PROBE = """
import json, sys
import railtrace.collectors
railtrace.collectors.__path__.append(sys.argv[1])
from prometheus_client import generate_latest
from pydantic import ValidationError
from typer.main import get_command
from railtrace.cli import app
from railtrace.collectors import run
from railtrace.settings import Settings

out = {"help": get_command(app).commands["collect"].commands["demo"].help}
s = Settings(collect={"spool_dir": sys.argv[2]})
out["every_s"] = s.collect.demo.every_s
out["listen"] = s.collect.metrics_listen.demo
try:
    Settings(collect={"demo": {"evry_s": 2}})
    out["typo"] = "accepted"
except ValidationError as exc:
    out["typo"] = exc.errors()[0]["type"]
process = run.CollectorProcess(s, "demo")
try:
    out["metrics"] = generate_latest(process.metrics.registry).decode()
finally:
    process.close()
print(json.dumps(out))
"""


def test_a_collector_folder_alone_adds_its_command_settings_and_metrics(tmp_path: Path) -> None:
    # A package the source tree does not have, added to railtrace.collectors' search path in
    # a fresh interpreter: nothing else of railtrace is told about it.
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "__init__.py").write_text('"""The demo collector."""\n')
    (tmp_path / "demo" / "spec.py").write_text(textwrap.dedent(DEMO_SPEC))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAILTRACE_")}
    env["RAILTRACE_COLLECT__DEMO__EVERY_S"] = "2.5"
    done = subprocess.run(
        [sys.executable, "-c", DEMO_PROBE, str(tmp_path), str(tmp_path / "spool")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["help"] == "Count ticks (`collect.demo`)."
    assert out["every_s"] == 2.5  # from RAILTRACE_COLLECT__DEMO__EVERY_S
    assert out["listen"] == "127.0.0.1:9499"
    assert out["typo"] == "extra_forbidden"
    assert 'railtrace_collector_demo_ticks_total{role="demo"} 3.0' in out["metrics"]
    assert (tmp_path / "spool" / "demo").is_dir()
