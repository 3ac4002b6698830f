"""The settings a user writes by following the README: its configuration example must load
as written, and say what it seems to say."""

from __future__ import annotations

import re
from pathlib import Path

from railtrace.settings import load_settings

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readmes_configuration_example_loads_as_written(tmp_path: Path) -> None:
    text = README.read_text()
    start = text.index("## Configuration")
    block = re.search(r"```toml\n(.*?)```", text[start:], re.S)
    assert block is not None, "the Configuration section has no toml example"
    config = tmp_path / "railtrace.toml"
    config.write_text(block.group(1))
    settings = load_settings(config)
    assert settings.site.timezone == "UTC"
    (dgx,) = settings.site.gpu_nics
    assert dgx.matches("dgx-a01") and not dgx.matches("hgx-a01")
    assert dgx.nics[1] == ("mlx5_3",) and len(dgx.nics) == 8
