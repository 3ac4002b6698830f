"""The path -> (Metric, qualifier) table, for every vendor family and every spelling of a path."""

from __future__ import annotations

import pytest

from railtrace.streams.records import Metric
from railtrace.streams.telemetry import paths
from railtrace.streams.telemetry.gnmic import decode_message
from railtrace.streams.telemetry.xpath import parse_xpath

T = 1_700_000_000_000_000_000
M = Metric


def decode_path(path: str, value: object = "1") -> tuple[str, Metric, str] | None:
    """(interface, metric, qualifier) of a json-format update at `path`, or None if unused."""
    message = {
        "source": "sw1:9339",
        "timestamp": T,
        "updates": [{"Path": path, "values": {"leaf": value}}],
    }
    got = decode_message(message)
    return (got[0].interface, got[0].metric, got[0].qualifier) if got else None


IF = "/interfaces/interface[name=e1]"
SWP = "/interfaces/interface[name=swp1]"
QOS = "/qos/interfaces/interface[interface-id=swp1]"
XCVR = "/components/component[name=e1]/transceiver"
SONIC = "COUNTERS/Ethernet0/SAI_PORT_STAT_"

CASES = [
    # OpenConfig (also Arista EOS, whose interface names hold a slash)
    ("/interfaces/interface[name=Ethernet1/1]/state/counters/in-octets", M.IN_OCTETS, ""),
    (f"{IF}/state/counters/out-octets", M.OUT_OCTETS, ""),
    (f"{IF}/state/counters/in-pkts", M.IN_PKTS, ""),
    (f"{IF}/state/counters/out-pkts", M.OUT_PKTS, ""),
    (f"{IF}/state/counters/in-errors", M.IN_ERRORS, ""),
    (f"{IF}/state/counters/out-errors", M.OUT_ERRORS, ""),
    (f"{IF}/state/counters/in-discards", M.IN_DISCARDS, ""),
    (f"{IF}/state/counters/out-discards", M.OUT_DISCARDS, ""),
    (f"{IF}/state/counters/in-fcs-errors", M.IN_FCS_ERRORS, ""),
    (f"{IF}/state/counters/carrier-transitions", M.CARRIER_TRANSITIONS, ""),
    (f"{IF}/state/oper-status", M.OPER_STATUS, ""),
    (f"{IF}/ethernet/state/counters/in-symbol-error", M.SYMBOL_ERRORS, ""),
    (f"{IF}/ethernet/state/counters/fec-corrected-blocks", M.FEC_CORRECTED, ""),
    (f"{IF}/ethernet/state/counters/fec-uncorrectable-blocks", M.FEC_UNCORRECTABLE, ""),
    (f"{IF}/ethernet/state/counters/in-mac-pause-frames", M.PFC_RX_PAUSE, "link"),
    (f"{IF}/ethernet/state/counters/out-mac-pause-frames", M.PFC_TX_PAUSE, "link"),
    (
        "/qos/interfaces/interface[interface-id=e1]/output/queues/queue[name=3]/state"
        "/ecn-marked-pkts",
        M.ECN_MARKED,
        "3",
    ),
    (f"{XCVR}/physical-channels/channel[index=2]/state/input-power/instant", M.RX_POWER_DBM, "2"),
    (f"{XCVR}/state/input-power/instant", M.RX_POWER_DBM, ""),
    (f"{XCVR}/state/fec-uncorrectable-blocks", M.FEC_UNCORRECTABLE, ""),
    (f"{XCVR}/state/fec-corrected-blocks", M.FEC_CORRECTED, ""),
    ("/components/component[name=e1]/state/temperature/instant", M.TEMPERATURE_C, ""),
    # NVIDIA Cumulus Linux 5.15, then the pre-5.15 PHY names and the 5.12 PFC spelling
    (f"{QOS}/switch-priority[priority=3]/state/counters/in-pause-pkts", M.PFC_RX_PAUSE, "3"),
    (f"{QOS}/switch-priority[priority=3]/state/counters/out-pause-pkts", M.PFC_TX_PAUSE, "3"),
    (f"{QOS}/state/switch-priority[priority=4]/counters/out-pause-pkts", M.PFC_TX_PAUSE, "4"),
    (f"{SWP}/ethernet/state/counters/in-fcs-errors", M.IN_FCS_ERRORS, ""),
    (f"{SWP}/ethernet/state/counters/carrier-transitions", M.CARRIER_TRANSITIONS, ""),
    (f"{SWP}/state/counters/ecn-marked-pkts", M.ECN_MARKED, ""),
    (f"{SWP}/phy/fec/state/rs-fec-uncorrectable-blocks", M.FEC_UNCORRECTABLE, ""),
    (f"{SWP}/phy/fec/state/corrected-bits", M.FEC_CORRECTED, "bits"),
    (
        f"{SWP}/phy/channels/channel[id=1]/fec/state/fc-fec-corrected-blocks",
        M.FEC_CORRECTED,
        "fc:1",
    ),
    (
        f"{SWP}/phy/channels/channel[id=1]/fec/state/fc-fec-uncorrected-blocks",
        M.FEC_UNCORRECTABLE,
        "fc:1",
    ),
    (
        f"{SWP}/phy/channels/channel[id=1]/fec/state/rs-fec-corrected-symbols",
        M.FEC_CORRECTED,
        "rs:1",
    ),
    (f"{SWP}/phy/state/symbol-errors", M.SYMBOL_ERRORS, "phy"),
    (f"{SWP}/ethernet/phy/state/rs-fec-uncorrectable-blocks", M.FEC_UNCORRECTABLE, ""),
    (f"{SWP}/ethernet/phy/state/corrected-bits", M.FEC_CORRECTED, "bits"),
    (f"{SWP}/ethernet/phy/state/lane[lane=0]/fc-fec-corrected-blocks", M.FEC_CORRECTED, "fc:0"),
    (
        f"{SWP}/ethernet/phy/state/lane[lane=0]/fc-fec-uncorrected-blocks",
        M.FEC_UNCORRECTABLE,
        "fc:0",
    ),
    (f"{SWP}/ethernet/phy/state/lane[lane=0]/rs-fec-corrected-symbols", M.FEC_CORRECTED, "rs:0"),
    (f"{SWP}/ethernet/phy/state/symbol-errors", M.SYMBOL_ERRORS, "phy"),
    # SONiC COUNTERS_DB virtual paths: the port is the element before the SAI stat
    (f"{SONIC}IF_IN_OCTETS", M.IN_OCTETS, ""),
    (f"{SONIC}IF_OUT_OCTETS", M.OUT_OCTETS, ""),
    (f"{SONIC}IF_IN_ERRORS", M.IN_ERRORS, ""),
    (f"{SONIC}IF_OUT_ERRORS", M.OUT_ERRORS, ""),
    (f"{SONIC}IF_IN_DISCARDS", M.IN_DISCARDS, ""),
    (f"{SONIC}IF_OUT_DISCARDS", M.OUT_DISCARDS, ""),
    (f"{SONIC}ETHER_STATS_CRC_ALIGN_ERRORS", M.IN_FCS_ERRORS, ""),
    (f"{SONIC}IF_IN_FEC_CORRECTABLE_FRAMES", M.FEC_CORRECTED, ""),
    (f"{SONIC}IF_IN_FEC_NOT_CORRECTABLE_FRAMES", M.FEC_UNCORRECTABLE, ""),
    (f"{SONIC}IF_IN_FEC_SYMBOL_ERRORS", M.SYMBOL_ERRORS, ""),
    (f"{SONIC}PFC_3_RX_PKTS", M.PFC_RX_PAUSE, "3"),
    (f"{SONIC}PFC_7_TX_PKTS", M.PFC_TX_PAUSE, "7"),
]


@pytest.mark.parametrize(("path", "metric", "qualifier"), CASES)
def test_vendor_paths_map_to_metric_interface_and_qualifier(
    path: str, metric: Metric, qualifier: str
) -> None:
    interface = parse_xpath(path).tags[0][1] if "[" in path else "Ethernet0"
    assert decode_path(path) == (interface, metric, qualifier)


@pytest.mark.parametrize(
    "path",
    [
        "interfaces/interface[name=e1]/state/counters/in-octets",
        "openconfig:/interfaces/interface[name=e1]/state/counters/in-octets",
        "/openconfig-interfaces:interfaces/openconfig-interfaces:interface[name=e1]/state/counters"
        "/in-octets",
        "/interfaces/interface[name='e1']/state/counters/in-octets",
        '/interfaces/interface[name="e1"]/state//counters/in-octets',
    ],
)
def test_matching_ignores_origin_module_prefixes_quotes_and_empty_elements(path: str) -> None:
    assert decode_path(path) == ("e1", M.IN_OCTETS, "")


@pytest.mark.parametrize(
    "path",
    [
        "/interfaces/interface[name=e1]/state/counters/in-multicast-pkts",
        "/interfaces/interface[name=e1]/ethernet/state/counters/in-crc-errors",
        "/qos/interfaces/interface[interface-id=e1]/output/queues/queue[name=3]/state/transmit-octets",
        "COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS",
        "SAI_PORT_STAT_IF_IN_OCTETS",
        "/system/state/hostname",
    ],
)
def test_paths_railtrace_does_not_use_are_unknown(path: str) -> None:
    assert decode_path(path) is None


def test_every_declared_path_resolves_to_its_declared_metric() -> None:
    declared = {**paths.OPENCONFIG, **paths.CUMULUS}
    for path, spec in declared.items():
        metric = spec[0] if isinstance(spec, tuple) else spec
        got = decode_path(path.replace("]", "=k]"))
        assert got is not None and got[:2] == ("k", metric), path
    for leaf, spec in paths.SONIC_SAI.items():
        metric, qualifier = spec if isinstance(spec, tuple) else (spec, "")
        assert decode_path(f"COUNTERS/Ethernet8/{leaf}") == ("Ethernet8", metric, qualifier), leaf


def test_a_path_declared_twice_with_two_meanings_is_refused() -> None:
    clash = {"/interfaces/interface[name]/state/counters/in-octets": M.OUT_OCTETS}
    with pytest.raises(ValueError, match="declared twice"):
        paths._compile(paths.OPENCONFIG, clash)


def test_key_values_with_slashes_and_brackets_are_kept_whole() -> None:
    parsed = parse_xpath("/a[x=1/2]/b[p=3][q=4]/c")
    assert parsed.key == "a/b/c"
    assert parsed.tags == (("a_x", "1/2"), ("b_p", "3"), ("b_q", "4"))
    assert (parsed.parent, parsed.leaf) == ("b", "c")
