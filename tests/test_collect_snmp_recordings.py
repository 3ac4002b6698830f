"""The SNMP poller against real switches' recordings (snmpsim-data), served by snmpsim.

Every expectation is read from the .snmprec file the simulator serves: interface names from
ifName, the IF-MIB/EtherLike counter and status columns the decoder maps, 64-bit octet counters
and oper-status per interface, and the lldpRemTable rows. RECORDINGS pins what each recording
holds, so a test cannot pass on an empty table. Setup: `sudo bash tests/snmpsim/setup.sh`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from snmp_support import neighbours_as_read
from snmpsim_support import RecordValue, Simulator, column, read_snmprec, running_snmpsim

from railtrace.collectors.emit import Collected
from railtrace.collectors.snmp import LldpNeighbour, SnmpPoller, SnmpTarget
from railtrace.streams.records import Metric
from railtrace.streams.telemetry.snmp import COLUMNS, decode_snmp

pytestmark = pytest.mark.timeout(300)

IF_NAME = "1.3.6.1.2.1.31.1.1.1.1"
IF_OPER_STATUS = "1.3.6.1.2.1.2.2.1.8"
IF_HC_IN_OCTETS = "1.3.6.1.2.1.31.1.1.1.6"
IF_HC_OUT_OCTETS = "1.3.6.1.2.1.31.1.1.1.10"
LLDP_REM_PORT_ID = "1.0.8802.1.1.2.1.4.1.1.7"
LLDP_REM_PORT_DESC = "1.0.8802.1.1.2.1.4.1.1.8"
LLDP_REM_SYS_NAME = "1.0.8802.1.1.2.1.4.1.1.9"
#: IF-MIB ifOperStatus, as railtrace names the states.
OPER_STATES = {
    1: "up",
    2: "down",
    3: "testing",
    4: "unknown",
    5: "dormant",
    6: "not_present",
    7: "lower_layer_down",
}


@dataclass(frozen=True)
class Holds:
    """What a recording holds: interfaces with ifName and 64-bit counters, lldpRemTable rows."""

    interfaces: int
    over_32_bits: int  # ifHCIn/OutOctets values a 32-bit counter could not hold
    lldp_rows: int


RECORDINGS = {
    "arista-dcs-7150s-52-cl": Holds(interfaces=59, over_32_bits=34, lldp_rows=2),
    "cisco-n5000": Holds(interfaces=61, over_32_bits=56, lldp_rows=9),
    "cisco-n5000-uk9": Holds(interfaces=61, over_32_bits=60, lldp_rows=11),
    "hpe-procurve-516733-b21": Holds(interfaces=42, over_32_bits=29, lldp_rows=5),
    "h3c-e528-1": Holds(interfaces=31, over_32_bits=0, lldp_rows=1),
    # No LLDP-MIB at all in this one (checked below): counters and status only.
    "h3c-comware-7-1-075": Holds(interfaces=91, over_32_bits=35, lldp_rows=0),
}
NAMES = list(RECORDINGS)


def text_of(raw: RecordValue) -> str:
    """An OCTET STRING as railtrace renders it: text when it is printable UTF-8 once the NUL
    padding some agents add (NX-OS pads LLDP port ids to 16 octets) is dropped, else
    colon-separated hex (MAC addresses, and octets that are all NULs)."""
    assert isinstance(raw, bytes)
    try:
        text = (raw.rstrip(b"\0") or raw).decode("utf-8")
    except UnicodeDecodeError:
        return ":".join(f"{b:02x}" for b in raw)
    return text if text.isprintable() else ":".join(f"{b:02x}" for b in raw)


@dataclass
class Polled:
    records: dict[str, RecordValue | None]
    poller: SnmpPoller
    target: SnmpTarget
    body: dict[str, Any]


def target_for(sim: Simulator, name: str, **overrides: object) -> SnmpTarget:
    host, port, community = sim.endpoint(name)
    fields: dict[str, object] = {
        "name": name,
        "host": host,
        "port": port,
        "community": community,
        "timeout_s": 5.0,
        "retries": 1,
        **overrides,
    }
    return SnmpTarget.model_validate(fields)


def poll(sim: Simulator, target: SnmpTarget) -> tuple[SnmpPoller, dict[str, Any]]:
    """One poll by the real poller; the decoded message body."""
    collected = Collected()
    poller = SnmpPoller([target], collected)

    async def once() -> None:
        try:
            await poller.poll_once(target)
        finally:
            poller.close()

    asyncio.run(once())
    stats = poller.stats[target.name]
    assert stats.failures == 0, f"{stats.last_error}; simulator log: {sim.log}"
    [message] = collected.on("snmp")
    body: dict[str, Any] = orjson.loads(message.value)
    return poller, body


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    with running_snmpsim(tmp_path_factory.mktemp("snmpsim"), tuple(RECORDINGS)) as running:
        yield running


@pytest.fixture(scope="module")
def polls(sim: Simulator) -> dict[str, Polled]:
    out = {}
    for name in RECORDINGS:
        target = target_for(sim, name)
        poller, body = poll(sim, target)
        out[name] = Polled(read_snmprec(sim.recording(name)), poller, target, body)
    return out


def ifnames_of(records: dict[str, RecordValue | None]) -> dict[str, str]:
    return {index: text_of(raw) for index, raw in column(records, IF_NAME).items()}


@pytest.mark.parametrize("name", NAMES)
def test_the_recording_holds_what_the_tests_rely_on(polls: dict[str, Polled], name: str) -> None:
    records, holds = polls[name].records, RECORDINGS[name]
    names = column(records, IF_NAME)
    in_octets, out_octets = column(records, IF_HC_IN_OCTETS), column(records, IF_HC_OUT_OCTETS)
    assert len(names) == holds.interfaces
    assert set(in_octets) == set(out_octets) == set(names)
    big = [v for v in [*in_octets.values(), *out_octets.values()] if int(v) >= 2**32]
    assert len(big) == holds.over_32_bits
    assert set(column(records, IF_OPER_STATUS)) == set(names)
    assert len(column(records, LLDP_REM_SYS_NAME)) == holds.lldp_rows
    assert len(column(records, LLDP_REM_PORT_ID)) == holds.lldp_rows


@pytest.mark.parametrize("name", NAMES)
def test_interfaces_are_named_by_the_recorded_ifname(polls: dict[str, Polled], name: str) -> None:
    polled = polls[name]
    expected = ifnames_of(polled.records)
    assert expected
    assert {i: polled.body["ifnames"].get(i) for i in expected} == expected
    cached = polled.poller.ifnames.ifnames(name)
    assert {i: cached.get(i) for i in expected} == expected


@pytest.mark.parametrize("name", NAMES)
def test_every_counter_and_status_instance_is_walked_with_its_recorded_value(
    polls: dict[str, Polled], name: str
) -> None:
    polled = polls[name]
    expected = {
        f"{oid}.{index}": value
        for oid in COLUMNS
        for index, value in column(polled.records, oid).items()
    }
    assert len(expected) >= 3 * RECORDINGS[name].interfaces
    assert polled.body["varbinds"] == expected


def _decoded(body: dict[str, Any], metric: Metric) -> list[tuple[str, object]]:
    return sorted(
        (v.interface, v.value)
        for v in decode_snmp(body)
        if v.metric is metric and v.device == body["device"]
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("metric", "oid"),
    [(Metric.IN_OCTETS, IF_HC_IN_OCTETS), (Metric.OUT_OCTETS, IF_HC_OUT_OCTETS)],
    ids=["ifHCInOctets", "ifHCOutOctets"],
)
def test_64_bit_octet_counters_decode_to_the_recorded_values_per_interface(
    polls: dict[str, Polled], name: str, metric: Metric, oid: str
) -> None:
    polled = polls[name]
    ifnames = ifnames_of(polled.records)
    expected = sorted((ifnames[i], int(v)) for i, v in column(polled.records, oid).items())
    assert len(expected) == RECORDINGS[name].interfaces
    assert any(v > 0 for _, v in expected)
    assert _decoded(polled.body, metric) == expected


@pytest.mark.parametrize("name", NAMES)
def test_oper_status_decodes_to_the_recorded_state_per_interface(
    polls: dict[str, Polled], name: str
) -> None:
    polled = polls[name]
    ifnames = ifnames_of(polled.records)
    expected = sorted(
        (ifnames[i], OPER_STATES[int(v)]) for i, v in column(polled.records, IF_OPER_STATUS).items()
    )
    assert len(expected) == RECORDINGS[name].interfaces
    assert {state for _, state in expected} >= {"up", "down"}
    assert _decoded(polled.body, Metric.OPER_STATUS) == expected


def expected_neighbours(records: dict[str, RecordValue | None]) -> list[LldpNeighbour]:
    """The lldpRemTable rows (index timeMark.localPortNum.remIndex). All these NOSes number LLDP
    local ports by ifIndex, so the local port is the ifName of lldpRemLocalPortNum."""
    ifnames = ifnames_of(records)
    sys_names = column(records, LLDP_REM_SYS_NAME)
    port_ids = column(records, LLDP_REM_PORT_ID)
    port_descs = column(records, LLDP_REM_PORT_DESC)
    out = []
    for index in sorted(port_ids, key=lambda i: tuple(int(p) for p in i.split("."))):
        _, local_port_num, _ = index.split(".")
        out.append(
            LldpNeighbour(
                local_port=ifnames[local_port_num],
                remote_device=text_of(sys_names[index]),
                remote_port=text_of(port_ids[index]),
                remote_port_desc=text_of(port_descs[index]),
            )
        )
    return out


@pytest.mark.parametrize("name", [n for n, holds in RECORDINGS.items() if holds.lldp_rows])
def test_lldp_neighbours_are_the_recorded_lldp_rem_table_rows(
    polls: dict[str, Polled], name: str
) -> None:
    polled = polls[name]
    expected = expected_neighbours(polled.records)
    assert len(expected) == RECORDINGS[name].lldp_rows
    # A neighbour is only heard on a link that is up: the local ports are right.
    status = _decoded(polled.body, Metric.OPER_STATUS)
    assert {n.local_port for n in expected} <= {i for i, s in status if s == "up"}
    assert sorted(neighbours_as_read(polled.body)) == sorted(expected)


def test_a_recording_without_lldp_mib_polls_with_no_neighbours(polls: dict[str, Polled]) -> None:
    polled = polls["h3c-comware-7-1-075"]
    assert not [oid for oid in polled.records if oid.startswith("1.0.8802.1.1.2.")]
    assert neighbours_as_read(polled.body) == []
    assert polled.body["varbinds"]


@pytest.mark.parametrize("max_repetitions", [1, 7, 200])
def test_the_walk_is_the_same_whatever_the_getbulk_size(
    sim: Simulator, polls: dict[str, Polled], max_repetitions: int
) -> None:
    # snmpsim answers at most 64 varbinds per response: 200 repetitions of ~17 columns come
    # back cut short, 1 repetition walks row by row.
    name = "cisco-n5000-uk9"
    target = target_for(sim, name, max_repetitions=max_repetitions)
    _, body = poll(sim, target)
    reference = polls[name].body
    assert body["varbinds"] == reference["varbinds"]
    assert body["ifnames"] == reference["ifnames"]
    assert body["lldp"] == reference["lldp"]
