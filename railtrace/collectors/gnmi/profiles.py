"""Which paths to subscribe to on each platform, as data.

A profile is one SubscriptionList: SAMPLE paths (counters and gauges, at the target's sample
interval) and ON_CHANGE paths (oper-status, LLDP neighbours). Paths are written without list
keys, which in gNMI means "every entry". They subscribe at the container that holds the leaves
railtrace decodes, so a target sends a few subtrees per sample rather than one update per leaf.

What the decoder (`railtrace.streams.telemetry.paths`) turns into metrics is a subset of what
these subscriptions bring: the rest is counted there as unknown paths. Each profile lists, in
`undecoded`, what it subscribes to that is not decoded yet, so that a reader knows it is
collected for the raw topic and for later decoding, not lost by accident.

Sources, per profile:

- openconfig: the OpenConfig models (github.com/openconfig/public, release/models:
  interfaces/openconfig-interfaces.yang, openconfig-if-ethernet.yang, qos/openconfig-qos-
  interfaces.yang, platform/openconfig-platform-transceiver.yang, lldp/openconfig-lldp.yang).
  OpenConfig has no PFC model: 802.3 PAUSE (`in/out-mac-pause-frames`) is its only pause count.
- cumulus: NVIDIA Cumulus Linux 5.15 "gNMI Streaming",
  https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-515/Monitoring-and-Troubleshooting/gNMI-Streaming/
  (NVUE's gNMI server, port 9339; Spectrum-1 has no gNMI streaming).
- sonic: sonic-gnmi virtual DB paths (target `COUNTERS_DB`, `COUNTERS/<port>`),
  https://github.com/sonic-net/SONiC/blob/master/doc/system-telemetry/grpc_telemetry.md and
  https://github.com/sonic-net/sonic-buildimage/issues/22201 (a SAMPLE subscription on
  `COUNTERS/Ethernet0`). Leaves are SAI stat names (`SAI_PORT_STAT_PFC_3_RX_PKTS`).
- arista_eos: EOS serves OpenConfig paths over gNMI (default port 6030), and EOS-native
  (Sysdb/Smash) paths only with origin `eos_native` when OCTA is enabled,
  https://aristanetworks.github.io/openmgmt/configuration/openconfig/ . No Arista document
  listing EOS paths for PFC/ECN/FEC was found, so this profile is the OpenConfig one.

NVIDIA Quantum InfiniBand (no profile): NVOS switches run a gNMI server (`nv set system
gnmi-server state enabled`, STREAM/ONCE/POLL), https://docs.nvidia.com/networking/display/
nvidianvosusermanualforinfinibandswitchesv25023000/gnmi+streaming , but its path list was not
found. IB port counters (SymbolErrorCounterExtended, PortRcvErrorsExtended, Effective_BER,
Symbol_BER, Raw_Errors_Lane_N) come from UFM Telemetry over HTTP/Prometheus, not gNMI,
https://docs.nvidia.com/networking/display/UFMSDNAppUMv4181/
High-Frequency+(Primary)+Telemetry+Fields ; an IB port is named by (node GUID, port
number), not an interface name. railtrace takes UFM Telemetry in with `railtrace collect ufm`
(`railtrace.collectors.ufm`), which names ports from a GUID mapping file and translates the
counters into this topic's format under OpenConfig paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True, slots=True)
class Profile:
    """One platform's subscription: paths, the origin and target they live under, the
    encodings to ask for (first one the target supports wins), the YANG models a target
    should report in Capabilities, and what is subscribed but not decoded.

    PROTO comes first by default: scalar TypedValues keep 64-bit counters exact and need no
    JSON parse per leaf; JSON_IETF and JSON subtrees are flattened by the decoder just as well.
    """

    name: str
    sample: tuple[str, ...]
    on_change: tuple[str, ...] = ()
    origin: str = ""
    target: str = ""
    encodings: tuple[str, ...] = ("PROTO", "JSON_IETF", "JSON")
    models: tuple[str, ...] = ()
    undecoded: tuple[str, ...] = field(default=())


_OC_SAMPLE = (
    # octets, pkts, errors, discards, in-fcs-errors, carrier-transitions
    "/interfaces/interface/state/counters",
    # in-symbol-error, FEC blocks, 802.3 PAUSE frames in/out
    "/interfaces/interface/ethernet/state/counters",
    # ECN marks per egress queue
    "/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts",
    # rx power (whole module and per lane), transceiver FEC
    "/components/component/transceiver/state",
    "/components/component/transceiver/physical-channels/channel/state/input-power",
    # module temperature
    "/components/component/state/temperature",
)
_OC_ON_CHANGE = (
    "/interfaces/interface/state/oper-status",
    "/lldp/interfaces/interface/neighbors/neighbor/state",
)
_OC_MODELS = ("openconfig-interfaces", "openconfig-if-ethernet", "openconfig-platform")
_OC_UNDECODED = (
    "LLDP neighbours (/lldp/.../neighbor/state/system-name, port-id): raw topic only",
    "transceiver output-power, bias current, temperature avg/min/max",
    "per-priority PFC: OpenConfig has no model for it; 802.3 PAUSE is decoded as qualifier 'link'",
)

OPENCONFIG: Final = Profile(
    name="openconfig",
    sample=_OC_SAMPLE,
    on_change=_OC_ON_CHANGE,
    models=_OC_MODELS,
    undecoded=_OC_UNDECODED,
)

ARISTA_EOS: Final = Profile(
    name="arista_eos",
    sample=_OC_SAMPLE,
    on_change=_OC_ON_CHANGE,
    models=_OC_MODELS,
    undecoded=(
        *_OC_UNDECODED,
        "EOS-native (origin eos_native) PFC/ECN/FEC paths: not subscribed, none documented",
    ),
)

CUMULUS: Final = Profile(
    name="cumulus",
    sample=(
        "/interfaces/interface/state/counters",
        # in-fcs-errors, in-crc-errors, in-symbol-error, in/out-mac-pause-frames
        "/interfaces/interface/ethernet/state/counters",
        # PFC pause per switch priority
        "/qos/interfaces/interface/switch-priority/state/counters",
        "/qos/interfaces/interface/output/queues/queue/state/ecn-marked-pkts",
        # FEC corrected bits / uncorrectable blocks, per-lane FEC, symbol errors, BER
        "/interfaces/interface/phy/fec/state",
        "/interfaces/interface/phy/channels/channel/fec/state",
        "/interfaces/interface/phy/state",
        "/interfaces/interface/phy/ber/state",
        "/components/component/transceiver/physical-channels/channel/state/input-power",
        "/components/component/state/temperature",
    ),
    on_change=_OC_ON_CHANGE,
    models=("openconfig-interfaces",),
    undecoded=(
        "in-crc-errors (Cumulus reports it beside in-fcs-errors; only the latter is decoded)",
        "BER: phy/ber/state/effective-ber, symbol-ber; phy/state/effective-errors",
        "tx-wait, in-link-down-drops, pause durations",
        "LLDP neighbours: raw topic only",
    ),
)

SONIC: Final = Profile(
    name="sonic",
    target="COUNTERS_DB",
    # sonic-gnmi answers DB paths with JSON documents.
    encodings=("JSON_IETF", "JSON"),
    # Every port's SAI counters, PFC per priority included; the decoder keys them by leaf.
    sample=("/COUNTERS/Ethernet*",),
    undecoded=(
        "oper-status: not in COUNTERS_DB; needs the OpenConfig (mgmt-framework) gNMI server, "
        "a second subscription this profile does not make",
        "ECN marks and transceiver DOM (STATE_DB TRANSCEIVER_DOM_SENSOR): no source confirmed",
        "LLDP neighbours: not subscribed",
    ),
)

PROFILES: Final[dict[str, Profile]] = {p.name: p for p in (OPENCONFIG, ARISTA_EOS, CUMULUS, SONIC)}
