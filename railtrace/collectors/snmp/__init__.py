"""The SNMP collector: GETBULK polls of IF-MIB/EtherLike-MIB/LLDP-MIB and a trap receiver.

Both build raw messages in the format `railtrace.streams.telemetry.snmp.decode_snmp` reads
(numeric OIDs: Debian ships no MIB files) and hand them to delivery through `emit`; neither
talks to Kafka. `messages` is pure, `walk`/`poller`/`traps` do the network I/O with pysnmp 7.
"""

from railtrace.collectors.snmp.config import SnmpCollectorConfig, SnmpTarget, TrapReceiverConfig
from railtrace.collectors.snmp.ifnames import IfNameCache
from railtrace.collectors.snmp.messages import LldpNeighbour
from railtrace.collectors.snmp.poller import SnmpPoller
from railtrace.collectors.snmp.traps import TrapReceiver

__all__ = [
    "IfNameCache",
    "LldpNeighbour",
    "SnmpCollectorConfig",
    "SnmpPoller",
    "SnmpTarget",
    "TrapReceiver",
    "TrapReceiverConfig",
]
