"""Properties of the attribution core on the records of randomized worlds: what a verdict says
cannot hang on what the devices are called, on the order records arrive in within a clock's
slack, or on another healthy job running beside.

The records are a world capture's job facts and the link events railtrace's own telemetry stage
made of its switch files; each property feeds them, changed, to a fresh Correlator and compares
the verdicts with those of the records as they were.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from railtrace.replay import DiscardSink, open_capture, replay
from railtrace.streams.attribution import Correlator
from railtrace.streams.records import JobFact, JobState, LinkEvent, Verdict
from railtrace.topology import build_fabric
from railtrace.topology.cabling import Cable, CablePlan
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.world.capture import write_world

NS = 1_000_000_000
#: How far apart two records may be and still come in either order (a log shipper's or a
#: switch clock's lag).
SLACK_NS = 2 * NS

#: Worlds whose verdicts the properties are checked on: a host cable down, frame errors that
#: slow a job, a PFC storm, a GPU off the bus, an uplink down under spraying.
WORLDS = {
    "host-down": {"fault": "link-down", "place": "host", "seed": 21},
    "errors": {"fault": "errors", "place": "host", "error_ratio": 3e-5, "seed": 22},
    "pfc-storm": {"fault": "pfc-storm", "seed": 23},
    "gpu-xid": {"fault": "gpu-xid", "seed": 24},
    "spray-uplink": {"fault": "link-down", "place": "uplink", "routing": "spray", "seed": 25},
}


class _Recording(DiscardSink):
    """Keeps the link events and job facts a replay made, in the order it made them."""

    def __init__(self) -> None:
        self.events: list[LinkEvent] = []
        self.facts: list[JobFact] = []

    def write_link_events(self, rows: Any) -> None:
        self.events.extend(e for e, _ in rows)

    def write_job_facts(self, rows: Any) -> None:
        self.facts.extend(rows)


@dataclasses.dataclass
class World:
    fabric: Fabric
    plan: CablePlan
    records: list[LinkEvent | JobFact]
    replayed: list[Verdict]


@pytest.fixture(scope="module", params=sorted(WORLDS))
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> World:
    fixed = dict(WORLDS[request.param])
    seed = fixed.pop("seed")
    out: Path = tmp_path_factory.mktemp(request.param)
    truth = write_world(out, seed, 8, sample_s=10, nccl_debug="INFO", trainer="megatron", **fixed)
    capture = open_capture(out)
    sink = _Recording()
    report = replay(capture, sink, local=ZoneInfo(truth["site_zone"]))
    records: list[LinkEvent | JobFact] = [*sink.events, *sink.facts]
    records.sort(key=lambda r: r.ts_ns)
    return World(capture.fabric, capture.plan, records, report.verdicts)


def _judge(fabric: Fabric, records: Iterable[LinkEvent | JobFact]) -> dict[str, Verdict]:
    corr = Correlator(fabric)
    for record in records:
        corr.observe(record)
    return {v.job_id: v for v in corr.verdicts()}


def _summary(v: Verdict, fabric: Fabric, names: dict[str, str] | None = None) -> tuple[Any, ...]:
    """What a verdict says, with device names mapped back through `names` (renamed -> old)."""
    back = names or {}

    def ends(link_id: str) -> frozenset[tuple[str, str]]:
        ref = fabric.links[link_id]
        return frozenset((back.get(e.device, e.device), e.interface) for e in (ref.a, ref.b))

    link = ends(v.cause_link.link_id) if v.cause_link is not None else None
    tied = frozenset(ends(t) if t in fabric.links else back.get(t, t) for t in v.tied)
    node = back.get(v.cause_node, v.cause_node) if v.cause_node else None
    return (v.state, v.cause_kind, link, node, round(v.confidence, 9), tied, v.decided_at_ns)


def test_the_records_alone_give_the_replays_verdicts(world: World) -> None:
    """The baseline the properties compare with is the product's own answer."""
    got = _judge(world.fabric, world.records)
    want = {v.job_id: v for v in world.replayed}
    assert set(got) == set(want)
    for job_id, v in got.items():
        assert _summary(v, world.fabric) == _summary(want[job_id], world.fabric), job_id
    assert any(v.state in (JobState.STALLED, JobState.SLOW) for v in got.values())


def _rename(obj: Any, names: dict[str, str]) -> Any:
    """Every string that is a device's name, replaced, however deep in a record it is."""
    if isinstance(obj, str):
        return names.get(obj, obj)
    if isinstance(obj, tuple):
        return tuple(_rename(x, names) for x in obj)
    if isinstance(obj, list):
        return [_rename(x, names) for x in obj]
    if isinstance(obj, frozenset):
        return frozenset(_rename(x, names) for x in obj)
    if isinstance(obj, dict):
        return {_rename(k, names): _rename(v, names) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {
            f.name: _rename(getattr(obj, f.name), names) for f in dataclasses.fields(obj) if f.init
        }
        return dataclasses.replace(obj, **changes)
    return obj


def test_renaming_every_device_changes_no_verdict(world: World) -> None:
    """New names in another order (sorting by name must not pick a culprit): hosts and
    switches alike, in the plan, the addresses and every record."""
    devices = sorted({e.device for c in world.plan.cables for e in (c.a, c.b)})
    shuffled = devices[:]
    random.Random(5).shuffle(shuffled)
    names = {
        old: f"d{i:04d}-{old[::-1]}" for i, old in zip(range(len(devices)), shuffled, strict=True)
    }
    back = {new: old for old, new in names.items()}
    plan = CablePlan([Cable(_rename(c.a, names), _rename(c.b, names)) for c in world.plan.cables])
    addresses = {
        ip: Endpoint(names.get(ep.device, ep.device), ep.interface)
        for ip, ep in world.fabric.address_of.items()
    }
    renamed_fabric = build_fabric(plan, addresses)
    got = _judge(renamed_fabric, _rename(world.records, names))
    want = _judge(world.fabric, world.records)
    assert set(got) == set(want)
    for job_id, v in want.items():
        assert _summary(got[job_id], renamed_fabric, back) == _summary(v, world.fabric), job_id


@pytest.mark.parametrize("seed", range(3))
def test_records_reordered_within_the_clock_slack_change_no_verdict(
    world: World, seed: int
) -> None:
    """A streaming worker reads partitions in any interleaving, and shippers and switch clocks
    lag by seconds: records within SLACK_NS of each other may come in either order."""
    rng = random.Random(seed)
    jittered = sorted(world.records, key=lambda r: r.ts_ns + rng.randrange(SLACK_NS))
    got = _judge(world.fabric, jittered)
    want = _judge(world.fabric, world.records)
    for job_id, v in want.items():
        assert _summary(got[job_id], world.fabric) == _summary(v, world.fabric), job_id


def test_an_unrelated_healthy_job_beside_changes_no_other_verdict(world: World) -> None:
    """Every healthy job of the world, left out in turn: the others' verdicts stay the same."""
    everyone = _judge(world.fabric, world.records)
    healthy = [j for j, v in everyone.items() if v.state not in (JobState.STALLED, JobState.SLOW)]
    assert healthy, "the world has no healthy job to leave out"
    for gone in healthy:
        rest = [r for r in world.records if getattr(r, "job_id", None) != gone]
        without = _judge(world.fabric, rest)
        assert gone not in without
        for job_id, v in without.items():
            assert _summary(v, world.fabric) == _summary(everyone[job_id], world.fabric), (
                gone,
                job_id,
            )
