"""Settings files for `railtrace collect gnmi` run as a process, the way a site writes them.

The broker address is a closed port on purpose: these tests watch what the collector reads,
and its records stay in the spool under `tmp`.
"""

from __future__ import annotations

from pathlib import Path

from kafka_support import free_port


def gnmi_collector_config(tmp: Path, targets: str, metrics_listen: str = "127.0.0.1:0") -> Path:
    """A settings file for one collector whose `[[collect.gnmi]]` tables are `targets`."""
    config = tmp / "railtrace.toml"
    config.write_text(
        f"""
[kafka]
bootstrap_servers = "127.0.0.1:{free_port()}"

[collect]
spool_dir = "{tmp / "spool"}"

[collect.metrics_listen]
gnmi = "{metrics_listen}"
{targets}"""
    )
    return config
