"""Which vendor path carries which railtrace Metric: the table, declared once, per platform.

Each platform's paths are written the way its documentation writes them, list keys included
(`interface[name]`), with the source in a comment; nothing here is guessed. The table is
compiled at import into a dict keyed by the key-less, prefix-less path (see `xpath.py`), so a
lookup is one dict probe whatever spelling the switch used.

Where a value's interface and qualifier come from is read off the declared path itself: the
first list key names the interface (`interface[name]`, `interface[interface-id]`,
`component[name]`), a second list key, if any, is the qualifier (`switch-priority[priority]`
-> "3", `queue[name]`, transceiver `channel[index]`). A declared qualifier prefix is put in
front of it (`fc:` + lane) or, with no second key, is the whole qualifier (`link`, `phy`):
it keeps apart two counters of one metric on one interface, whose values would otherwise be
mistaken by the rate stage for a counter reset.

Qualifier values railtrace emits: PFC priority ("0".."7"), "link" for 802.3 PAUSE (not per
priority), ECN queue name, transceiver channel index, "fc:<lane>"/"rs:<lane>" for per-lane FEC,
"bits" for FEC corrected bits, "phy" for PHY symbol errors, "" otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

from ..records import Metric
from .xpath import ParsedPath, parse_xpath

M = Metric

#: A declared path maps to its metric, or to (metric, qualifier prefix).
Spec: TypeAlias = Metric | tuple[Metric, str]

# OpenConfig, openconfig/public release/models at commit 94f589629e1e88d0a8dbd2b3024f829196801f2e:
# interfaces/openconfig-interfaces.yang (state, state/counters), interfaces/openconfig-if-ethernet
# .yang (ethernet/state/counters), qos/openconfig-qos-interfaces.yang (queue state),
# platform/openconfig-platform-transceiver.yang and openconfig-platform.yang (temperature).
# OpenConfig has no PFC model; 802.3 PAUSE frames are its only pause counters.
OPENCONFIG: Final[dict[str, Spec]] = {
    "/interfaces/interface[name]/state/oper-status": M.OPER_STATUS,
    "/interfaces/interface[name]/state/counters/in-octets": M.IN_OCTETS,
    "/interfaces/interface[name]/state/counters/out-octets": M.OUT_OCTETS,
    "/interfaces/interface[name]/state/counters/in-pkts": M.IN_PKTS,
    "/interfaces/interface[name]/state/counters/out-pkts": M.OUT_PKTS,
    "/interfaces/interface[name]/state/counters/in-errors": M.IN_ERRORS,
    "/interfaces/interface[name]/state/counters/out-errors": M.OUT_ERRORS,
    "/interfaces/interface[name]/state/counters/in-discards": M.IN_DISCARDS,
    "/interfaces/interface[name]/state/counters/out-discards": M.OUT_DISCARDS,
    "/interfaces/interface[name]/state/counters/in-fcs-errors": M.IN_FCS_ERRORS,
    "/interfaces/interface[name]/state/counters/carrier-transitions": M.CARRIER_TRANSITIONS,
    "/interfaces/interface[name]/ethernet/state/counters/in-symbol-error": M.SYMBOL_ERRORS,
    "/interfaces/interface[name]/ethernet/state/counters/fec-corrected-blocks": M.FEC_CORRECTED,
    "/interfaces/interface[name]/ethernet/state/counters/fec-uncorrectable-blocks": (
        M.FEC_UNCORRECTABLE
    ),
    "/interfaces/interface[name]/ethernet/state/counters/in-mac-pause-frames": (
        M.PFC_RX_PAUSE,
        "link",
    ),
    "/interfaces/interface[name]/ethernet/state/counters/out-mac-pause-frames": (
        M.PFC_TX_PAUSE,
        "link",
    ),
    "/qos/interfaces/interface[interface-id]/output/queues/queue[name]/state/ecn-marked-pkts": (
        M.ECN_MARKED
    ),
    "/interfaces/interface[name]/ethernet/state/negotiated-port-speed": M.PORT_SPEED_GBPS,
    "/components/component[name]/transceiver/state/input-power/instant": M.RX_POWER_DBM,
    "/components/component[name]/transceiver/physical-channels/channel[index]/state/input-power"
    "/instant": M.RX_POWER_DBM,
    "/components/component[name]/transceiver/state/fec-corrected-blocks": M.FEC_CORRECTED,
    "/components/component[name]/transceiver/state/fec-uncorrectable-blocks": M.FEC_UNCORRECTABLE,
    "/components/component[name]/state/temperature/instant": M.TEMPERATURE_C,
}

# NVIDIA Cumulus Linux (NVUE gNMI server), CumulusNetworks/docs:
# content/cumulus-linux-515/Monitoring-and-Troubleshooting/gNMI Streaming.md (commit 3b667b23)
# for the current names; the CL 5.15 "What's New" table "Updated gNMI PHY metric names" for the
# pre-5.15 PHY names (`ethernet/phy/state/...`, `lane[lane]`); content/cumulus-linux-512/.../
# gNMI Streaming.md for `ethernet/state/counters/carrier-transitions` and the 5.12 spelling of
# the PFC path (that table prints no keys; `[interface-id]`/`[priority]` are the 5.15 ones).
# The `phy//channels` double slash of the doc needs no entry: empty elements are dropped.
# Paths Cumulus shares with OpenConfig (interface counters, queue ECN, transceiver power,
# temperature) are the OPENCONFIG entries above.
CUMULUS: Final[dict[str, Spec]] = {
    "/interfaces/interface[name]/ethernet/state/counters/in-fcs-errors": M.IN_FCS_ERRORS,
    "/interfaces/interface[name]/ethernet/state/counters/carrier-transitions": (
        M.CARRIER_TRANSITIONS
    ),
    "/interfaces/interface[name]/state/counters/ecn-marked-pkts": M.ECN_MARKED,
    "/qos/interfaces/interface[interface-id]/switch-priority[priority]/state/counters"
    "/in-pause-pkts": M.PFC_RX_PAUSE,
    "/qos/interfaces/interface[interface-id]/switch-priority[priority]/state/counters"
    "/out-pause-pkts": M.PFC_TX_PAUSE,
    "/qos/interfaces/interface[interface-id]/state/switch-priority[priority]/counters"
    "/out-pause-pkts": M.PFC_TX_PAUSE,
    "/interfaces/interface[name]/phy/fec/state/rs-fec-uncorrectable-blocks": M.FEC_UNCORRECTABLE,
    "/interfaces/interface[name]/phy/fec/state/corrected-bits": (M.FEC_CORRECTED, "bits"),
    "/interfaces/interface[name]/phy/channels/channel[id]/fec/state/fc-fec-corrected-blocks": (
        M.FEC_CORRECTED,
        "fc:",
    ),
    "/interfaces/interface[name]/phy/channels/channel[id]/fec/state/fc-fec-uncorrected-blocks": (
        M.FEC_UNCORRECTABLE,
        "fc:",
    ),
    "/interfaces/interface[name]/phy/channels/channel[id]/fec/state/rs-fec-corrected-symbols": (
        M.FEC_CORRECTED,
        "rs:",
    ),
    "/interfaces/interface[name]/phy/state/symbol-errors": (M.SYMBOL_ERRORS, "phy"),
    # pre-5.15 names of the same PHY counters
    "/interfaces/interface[name]/ethernet/phy/state/rs-fec-uncorrectable-blocks": (
        M.FEC_UNCORRECTABLE
    ),
    "/interfaces/interface[name]/ethernet/phy/state/corrected-bits": (M.FEC_CORRECTED, "bits"),
    "/interfaces/interface[name]/ethernet/phy/state/lane[lane]/fc-fec-corrected-blocks": (
        M.FEC_CORRECTED,
        "fc:",
    ),
    "/interfaces/interface[name]/ethernet/phy/state/lane[lane]/fc-fec-uncorrected-blocks": (
        M.FEC_UNCORRECTABLE,
        "fc:",
    ),
    "/interfaces/interface[name]/ethernet/phy/state/lane[lane]/rs-fec-corrected-symbols": (
        M.FEC_CORRECTED,
        "rs:",
    ),
    "/interfaces/interface[name]/ethernet/phy/state/symbol-errors": (M.SYMBOL_ERRORS, "phy"),
}

# Arista EOS: GAP. No Arista document listing EOS gNMI paths for PFC/ECN/FEC was found, so no
# EOS-native path is declared; EOS is read through the OPENCONFIG entries above
# (`/interfaces/interface[name=Ethernet1/1]/state/counters/...`).

# SONiC COUNTERS_DB through sonic-gnmi's virtual paths (target COUNTERS_DB, path
# `COUNTERS/<port>[/<stat>]`, sonic-net/SONiC doc/system-telemetry/grpc_telemetry.md): the leaf
# is a SAI stat name (sonic-net/sonic-sairedis SAI saiport.h `sai_port_stat_t`) and the element
# before it is the SONiC port name, so these entries are keyed by leaf, not by path.
# ETHER_STATS_CRC_ALIGN_ERRORS is RFC 2819 etherStatsCRCAlignErrors, SAI's FCS error count.
# GAP: ECN marks and transceiver DOM were not confirmed from a source for SONiC.
SONIC_SAI: Final[dict[str, Spec]] = {
    "SAI_PORT_STAT_IF_IN_OCTETS": M.IN_OCTETS,
    "SAI_PORT_STAT_IF_OUT_OCTETS": M.OUT_OCTETS,
    "SAI_PORT_STAT_IF_IN_ERRORS": M.IN_ERRORS,
    "SAI_PORT_STAT_IF_OUT_ERRORS": M.OUT_ERRORS,
    "SAI_PORT_STAT_IF_IN_DISCARDS": M.IN_DISCARDS,
    "SAI_PORT_STAT_IF_OUT_DISCARDS": M.OUT_DISCARDS,
    "SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS": M.IN_FCS_ERRORS,
    "SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES": M.FEC_CORRECTED,
    "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES": M.FEC_UNCORRECTABLE,
    "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS": M.SYMBOL_ERRORS,
    **{f"SAI_PORT_STAT_PFC_{p}_RX_PKTS": (M.PFC_RX_PAUSE, str(p)) for p in range(8)},
    **{f"SAI_PORT_STAT_PFC_{p}_TX_PKTS": (M.PFC_TX_PAUSE, str(p)) for p in range(8)},
}


@dataclass(frozen=True, slots=True)
class Entry:
    """What one table row says about a leaf: its metric and where its names come from.

    `interface_tag` names the list key holding the interface (`interface_name`); "" means the
    element before the leaf (SONiC's `COUNTERS/<port>/<stat>`). `qualifier_tag` names the list
    key holding the qualifier, "" for none; `qualifier_prefix` is put in front of it.
    """

    metric: Metric
    interface_tag: str
    qualifier_tag: str
    qualifier_prefix: str


def _entry(declared: str, spec: Spec) -> tuple[str, Entry]:
    metric, prefix = spec if isinstance(spec, tuple) else (spec, "")
    parsed = parse_xpath(declared)
    keyed = [tag for tag, _ in parsed.tags]
    interface_tag = keyed[0] if keyed else ""
    qualifier_tag = keyed[1] if len(keyed) > 1 else ""
    return parsed.key, Entry(metric, interface_tag, qualifier_tag, prefix)


def _compile(*tables: dict[str, Spec]) -> dict[str, Entry]:
    """Merge the platforms' tables by key-less path, refusing two meanings for one path."""
    compiled: dict[str, Entry] = {}
    for table in tables:
        for declared, spec in table.items():
            key, entry = _entry(declared, spec)
            if compiled.setdefault(key, entry) != entry:
                raise ValueError(f"{declared} is declared twice with different meanings")
    return compiled


_BY_PATH: Final = _compile(OPENCONFIG, CUMULUS)
_BY_LEAF: Final = {leaf: _entry(leaf, spec)[1] for leaf, spec in SONIC_SAI.items()}


def lookup(parsed: ParsedPath) -> Entry | None:
    """The table row for a parsed path, or None when railtrace does not use that leaf."""
    entry = _BY_PATH.get(parsed.key)
    if entry is None and parsed.parent:
        entry = _BY_LEAF.get(parsed.leaf)
    return entry
