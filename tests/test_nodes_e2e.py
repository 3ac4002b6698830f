"""A GPU falls off the bus, from the kernel log to the API: `railtrace collect xid` follows a
kernel log file and produces node events to a real broker; the sink stores them and serves the
node's quarantine at /v1/nodes, while a garbled node event is dead-lettered beside them."""

from __future__ import annotations

import subprocess
import time
import urllib.error
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kafka_support import BOOTSTRAP, Stack, require_broker, stack

from railtrace.store.chdb_store import ChdbStore

# An hour ago: the broker refuses record times more than an hour ahead of its clock.
_AT = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
KERNEL_LOG = [
    f"{_AT}:00+0000 gpu7 kernel: mlx5_core 0000:0c:00.0: mlx5e: Link up",
    f"{_AT}:01+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, "
    "name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)",
    f"{_AT}:12+0000 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.",
]


def _topology(tmp: Path) -> Path:
    topo = tmp / "topology"
    topo.mkdir()
    (topo / "cables.csv").write_text(
        "side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name\n"
        "gpu7,dcim.interface,mlx5_0,leaf1,dcim.interface,swp1\n"
    )
    return topo


def _xid_settings(tmp: Path, s: Stack, kern_log: Path) -> Path:
    return s.collector_settings(
        f"""[collect.xid]
file = "{kern_log}"
state_file = "{tmp / "xid-state.json"}"
requests_dir = "{tmp / "xid-requests"}"
poll_interval_ms = 50
"""
    )


def _node(s: Stack, name: str, quarantined: bool = True, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            body = s.get(f"/v1/nodes/{name}")
            if body["state"]["quarantined"] == quarantined:
                return body
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
        except TimeoutError:  # the sink busy writing: ask again until the deadline
            continue
        time.sleep(0.5)
    raise AssertionError(f"{name} never showed quarantined={quarantined}\n{s.logs()}")


def test_an_xid_79_quarantines_its_node_until_released_and_garbage_is_dead_lettered(
    tmp_path: Path,
) -> None:
    require_broker()
    kern_log = tmp_path / "kern.log"
    kern_log.write_text("\n".join(KERNEL_LOG) + "\n")
    with stack(tmp_path, _topology(tmp_path)) as s:
        topic = f"{s.env['RAILTRACE_KAFKA__TOPIC_PREFIX']}.raw.node-events.v1"
        done = subprocess.run(  # noqa: PLW1510 - return codes are asserted
            ["kcat", "-b", BOOTSTRAP, "-P", "-t", topic, "-k", "gpu7"],
            input=b'{"v": 1, "kind": "xid", "node": 7}',
            capture_output=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        s.start("--config", str(_xid_settings(tmp_path, s, kern_log)), "collect", "xid", name="xid")
        body = _node(s, "gpu7")
        assert body["state"]["xids"] == 2
        assert body["state"]["reason"].startswith("Xid 79")
        assert [(e["xid"], e["action"]) for e in body["events"]] == [
            (79, "quarantine"),
            (13, None),
        ]
        assert body["events"][0]["line"] == KERNEL_LOG[2]
        listed = s.get("/v1/nodes?quarantined=true")["nodes"]
        assert [n["node"] for n in listed] == ["gpu7"]

        # The GPU is reseated; the operator puts the node back through the collector.
        config = str(_xid_settings(tmp_path, s, kern_log))
        asked = s.run(
            "--config", config, "release-node", "gpu7", "--by", "alice", "--reason", "reseated"
        )
        assert asked.returncode == 0, asked.stderr
        back = _node(s, "gpu7", quarantined=False)
        assert back["state"]["reason"] == "released by alice (reseated)"
        assert [e["kind"] for e in back["events"]] == ["release", "xid", "xid"]
    with ChdbStore(s.data) as store:
        reasons = store.select(f"SELECT reason FROM {store.database}.dead_letters")
        assert [r.startswith("node event:") for r in reasons.column("reason").to_pylist()] == [True]
