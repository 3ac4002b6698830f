"""The telemetry stage's per-device fold, without Kafka: what it sends where, what it
dead-letters, and that a checkpoint taken mid-stream resumes to the same outputs.

The same stage runs against a real broker in test_streaming_e2e.py and
test_streaming_reliability.py; here its records are plain tuples shaped like aiokafka's."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, NamedTuple

import orjson
import pytest
from aiokafka import TopicPartition
from aiokafka.partitioner import murmur2

from railtrace.settings import Settings
from railtrace.streams import wire
from railtrace.streams.pipeline import Normalizer, Output
from railtrace.streams.records import LinkEventKind, Metric
from railtrace.streams.telemetry import DecodeStats, decode_message
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.fabric import PortLinks
from railtrace.topology.lldp import PlanIndex
from railtrace.worker import telemetry_stage
from railtrace.worker.device_states import BatchOutput, DeviceStates, decode_counts
from railtrace.worker.telemetry_stage import TelemetryStage

T0 = 1_780_000_000 * 10**9
PARTITIONS = 4


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


FABRIC = build_fabric(rail_optimized(64).plan)
LEAVES = ["leaf-su01-r0", "leaf-su01-r1"]


@pytest.fixture
def links() -> PortLinks:
    return PortLinks(FABRIC)


def _ports(links: PortLinks, device: str, count: int) -> list[str]:
    return sorted(e.interface for e in FABRIC.link_at if e.device == device)[:count]


def _counters(device: str, iface: str, second: int, errors: int = 0, oper: str = "up") -> bytes:
    return orjson.dumps(
        {
            "source": f"{device}:9339",
            "subscription-name": "port",
            "timestamp": T0 + second * 10**9,
            "prefix": f"interfaces/interface[name={iface}]",
            "updates": [
                {
                    "Path": "state",
                    "values": {
                        "state": {
                            "oper-status": oper.upper(),
                            "counters": {
                                "in-octets": str(second * 40_000_000_000),
                                "out-octets": str(second * 40_000_000_000),
                                "in-errors": str(errors),
                            },
                        }
                    },
                }
            ],
        }
    )


def _stream(links: PortLinks) -> list[Record]:
    """Two leaves, three ports each, 12 seconds; one port's errors burst at second 8 and
    another goes down at second 9."""
    leaves = LEAVES
    out: list[Record] = []
    offsets = dict.fromkeys(leaves, 0)
    for second in range(1, 13):
        for leaf in leaves:
            for n, iface in enumerate(_ports(links, leaf, 3)):
                errors = 10**6 * max(0, second - 7) if (leaf, n) == (leaves[0], 1) else 0
                oper = "down" if (leaf, n) == (leaves[1], 2) and second >= 9 else "up"
                value = _counters(leaf, iface, second, errors, oper)
                part = leaves.index(leaf)
                out.append(Record("raw.gnmi", part, offsets[leaf], leaf.encode(), value))
                offsets[leaf] += 1
    return out


def _fold(states: DeviceStates, records: list[Record]) -> BatchOutput:
    out = BatchOutput()
    for r in records:
        states.fold("gnmi", r, out)
    return out


def _flat(out: BatchOutput) -> tuple[list[Any], list[Any]]:
    samples = sorted(row[:7] for rows in out.samples.values() for row in rows)
    events = sorted((lid, e.ts_ns, e.kind) for lid, es in out.events.items() for e in es)
    return samples, events


def test_outputs_are_the_normalizers_own_routed_to_the_link_ids_partition(
    links: PortLinks,
) -> None:
    records = _stream(links)
    out = _fold(DeviceStates(links, PARTITIONS), records)
    # the same values through a plain Normalizer per device
    expected: list[Any] = []
    normalizers: dict[bytes, Normalizer] = {}
    for r in records:
        o = Output()
        n = normalizers.setdefault(r.key or b"", Normalizer())
        for v in decode_message(orjson.loads(r.value or b"")):
            n.on_telemetry(v, o)
        expected += [
            (s.ts_ns, links(s.device, s.interface), s.device, s.interface, s.metric, s.qualifier)
            for s in o.samples
        ]
    samples, events = _flat(out)
    assert [row[:6] for row in samples] == sorted(expected)
    assert out.values == 12 * 6 * 4  # oper-status and three counters per message
    for part, rows in out.samples.items():
        for _, lid, *_ in rows:
            assert lid and (murmur2(lid.encode()) & 0x7FFFFFFF) % PARTITIONS == part
    kinds = {kind for _, _, kind in events}
    assert {LinkEventKind.ERROR_BURST, LinkEventKind.DOWN} <= kinds
    down_link = links(LEAVES[1], _ports(links, LEAVES[1], 3)[2])
    assert (down_link, T0 + 9 * 10**9, LinkEventKind.DOWN) in events


def test_samples_encode_with_their_link_id_and_decode_back(links: PortLinks) -> None:
    out = _fold(DeviceStates(links, PARTITIONS), _stream(links))
    rows = [row for part in sorted(out.samples) for row in out.samples[part]]
    decoded = wire.decode_samples(wire.encode_samples(rows))
    assert [wire.sample_row(s, lid) for s, lid in decoded] == rows
    assert orjson.loads(wire.encode_samples(rows[:1]))[0][4] == rows[0][4].value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"{not json", "gnmi: unexpected"),
        (b"", "gnmi: empty message"),
        (b'"a string"', "gnmi: "),
    ],
)
def test_a_bad_message_is_dead_lettered_with_its_reason_and_the_next_one_still_folds(
    links: PortLinks, value: bytes, reason: str
) -> None:
    leaf = LEAVES[0]
    iface = _ports(links, leaf, 1)[0]
    records = [
        Record("raw.gnmi", 0, 0, leaf.encode(), _counters(leaf, iface, 1)),
        Record("raw.gnmi", 0, 1, leaf.encode(), value),
        Record("raw.gnmi", 0, 2, leaf.encode(), _counters(leaf, iface, 2)),
    ]
    out = _fold(DeviceStates(links, PARTITIONS), records)
    assert [(r.offset, why[: len(reason)].lower()) for r, why in out.dead] == [(1, reason.lower())]
    assert sum(len(rows) for rows in out.samples.values()) == 3  # second 2's three rates


def test_messages_stamped_in_milliseconds_fold_at_their_time_and_are_counted(
    links: PortLinks,
) -> None:
    """Some switch OSes stamp gNMI in ms; replay counted them, the live stage did not."""
    leaf = LEAVES[0]
    iface = _ports(links, leaf, 1)[0]
    records = []
    for second in (1, 2):
        message = orjson.loads(_counters(leaf, iface, second))
        message["timestamp"] //= 10**6
        records.append(Record("raw.gnmi", 0, second, leaf.encode(), orjson.dumps(message)))
    states = DeviceStates(links, PARTITIONS)
    out = _fold(states, records)
    stamps = {row[0] for rows in out.samples.values() for row in rows}
    assert stamps == {T0 + 2 * 10**9}
    assert decode_counts(states.decoded) == {
        "unknown_paths": 0,
        "unattributed": 0,
        "bad_values": 0,
        "pathless": 0,
        "stamped_in_ms": 2,
    }


def test_leaves_the_stage_cannot_use_are_counted_as_the_decoder_counts_them(
    links: PortLinks,
) -> None:
    """The stage folds a message without decoding it into values; what its leaves could not
    give (unknown paths, bad values) is counted all the same."""
    leaf = LEAVES[0]
    iface = _ports(links, leaf, 1)[0]
    message = orjson.loads(_counters(leaf, iface, 1))
    counters = message["updates"][0]["values"]["state"]["counters"]
    counters["in-errors"] = "many"  # a known counter whose value is no number
    counters["vendor-thing"] = "1"  # a leaf no path of railtrace names
    message["updates"].append({"Path": "/", "values": {"/": 5}})  # the prefix itself
    value = orjson.dumps(message)
    expected = DecodeStats()
    decode_message(orjson.loads(value), expected)
    states = DeviceStates(links, PARTITIONS)
    out = _fold(states, [Record("raw.gnmi", 0, 0, leaf.encode(), value)])
    assert out.values == 3  # oper-status, in- and out-octets
    assert decode_counts(states.decoded) == decode_counts(expected)
    assert expected.unknown_paths == 2 and expected.bad_values == 1


def test_a_keyless_gnmic_message_is_handed_back_keyed_by_its_switch(links: PortLinks) -> None:
    leaf = LEAVES[0]
    value = _counters(leaf, _ports(links, leaf, 1)[0], 1)
    out = _fold(DeviceStates(links, PARTITIONS), [Record("raw.gnmi", 0, 0, None, value)])
    assert out.rekey == [(leaf.encode(), value)]
    assert not out.samples and not out.dead


def test_a_checkpoint_taken_mid_stream_resumes_to_the_same_outputs(links: PortLinks) -> None:
    records = _stream(links)
    whole = _flat(_fold(DeviceStates(links, PARTITIONS), records))

    first = DeviceStates(links, PARTITIONS)
    cut = len(records) // 2
    before = _fold(first, records[:cut])
    saved = {key: (part, value) for key, part, value in first.checkpoint()}
    assert set(saved) == {b"gnmi:" + LEAVES[0].encode(), b"gnmi:" + LEAVES[1].encode()}
    assert not first.dirty

    second = DeviceStates(links, PARTITIONS)
    second.saved.update(saved)
    # a restart re-reads from an older commit: what the checkpoint holds is skipped
    after = _fold(second, records[cut - 6 :])
    samples = sorted(_flat(before)[0] + _flat(after)[0])
    events = sorted(_flat(before)[1] + _flat(after)[1])
    assert (samples, events) == whole


def test_redelivered_records_after_a_restore_produce_nothing(links: PortLinks) -> None:
    records = _stream(links)
    first = DeviceStates(links, PARTITIONS)
    _fold(first, records)
    second = DeviceStates(links, PARTITIONS)
    second.saved.update({k: (p, v) for k, p, v in first.checkpoint()})
    again = _fold(second, records)
    assert not again.samples and not again.events and again.values == 0


def test_giving_up_partitions_forgets_only_their_devices(links: PortLinks) -> None:
    states = DeviceStates(links, PARTITIONS)
    _fold(states, _stream(links))
    states.saved[b"gnmi:elsewhere"] = (0, b"{}")
    states.saved[b"gnmi:kept"] = (3, b"{}")
    states.drop_partitions([0])
    assert set(states.live) == {b"gnmi:" + LEAVES[1].encode()}
    assert set(states.saved) == {b"gnmi:kept"}


@pytest.mark.parametrize(
    "damaged",
    [b"{torn", orjson.dumps({"v": 99, "upto": 0, "state": {}}), orjson.dumps({"v": 1})],
    ids=["not-json", "unknown-version", "missing-state"],
)
def test_a_damaged_checkpoint_is_counted_and_its_device_starts_afresh(
    links: PortLinks, damaged: bytes
) -> None:
    states = DeviceStates(links, PARTITIONS)
    key = b"gnmi:" + LEAVES[0].encode()
    states.saved[key] = (0, damaged)
    iface = _ports(links, LEAVES[0], 1)[0]
    records = [
        Record("raw.gnmi", 0, n, LEAVES[0].encode(), _counters(LEAVES[0], iface, n + 1))
        for n in range(3)
    ]
    out = _fold(states, records)
    assert states.unreadable == 1
    assert states.live[key].upto == 3
    # a fresh baseline at the first message, then rates from the next two
    assert sum(len(rows) for rows in out.samples.values()) == 2 * 3


def test_metric_names_on_the_wire_are_the_enum_values() -> None:
    assert orjson.dumps([Metric.IN_OCTETS]) == b'["in_octets"]'


def test_two_collector_replicas_sending_the_same_notifications_double_nothing(
    links: PortLinks,
) -> None:
    """Two gNMI collectors subscribed to the same switches send the same notifications (the
    switch stamps them); the second copy of each must add no sample and no event."""
    records = _stream(links)
    once = _flat(_fold(DeviceStates(links, PARTITIONS), records))
    doubled, offsets = [], dict.fromkeys(LEAVES, 0)
    for r in records:
        for _ in range(2):
            leaf = (r.key or b"").decode()
            doubled.append(r._replace(offset=offsets[leaf]))
            offsets[leaf] += 1
    assert _flat(_fold(DeviceStates(links, PARTITIONS), doubled)) == once


class _Assigned:
    def __init__(self, tps: set[TopicPartition]) -> None:
        self.tps = tps

    def assignment(self) -> set[TopicPartition]:
        return self.tps


class _Sent:
    """A producer whose sends the broker acknowledged at once."""

    async def send(self, *_: Any, **__: Any) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def test_a_long_batch_hands_the_loop_back_so_heartbeats_keep_going(
    links: PortLinks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consumer's heartbeats share the stage's event loop: a batch folded in one go on a
    loaded machine outlasted the session timeout and the group dropped the stage. On a clock
    where every record takes 20 ms, a task beside the fold must run every few records."""
    clock = iter(itertools.count(step=0.02))
    monkeypatch.setattr(telemetry_stage.time, "monotonic", lambda: next(clock))
    settings = Settings(kafka={"topic_prefix": "t"})
    stage = TelemetryStage(settings, links, PlanIndex.of_fabric(FABRIC))
    records = [r._replace(topic="t.raw.gnmi.v1") for r in _stream(links)]
    by_tp: dict[TopicPartition, list[Any]] = {}
    for r in records:
        by_tp.setdefault(TopicPartition(r.topic, r.partition), []).append(r)
    stage.devices = DeviceStates(links, PARTITIONS)
    stage._consumer = _Assigned(set(by_tp))  # type: ignore[assignment]
    stage._producer = _Sent()  # type: ignore[assignment]

    async def both() -> int:
        turns = 0
        done = False

        async def beside() -> None:
            nonlocal turns
            while not done:
                turns += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(beside())
        await asyncio.sleep(0)
        started = turns
        await stage._process(by_tp)
        done = True
        await ticker
        return turns - started

    turns = asyncio.run(both())
    assert stage.counters["values"] > 0
    # 72 records at 20 ms each and the loop handed back every 50 ms: once every three or four
    # records (without it, twice in the whole batch).
    assert len(records) == 72 and turns >= 72 // 4, turns
