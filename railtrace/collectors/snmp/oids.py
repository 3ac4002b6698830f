"""The numeric OIDs the SNMP collector walks and reads (no MIB files needed at run time).

Sources: IF-MIB (RFC 2863), EtherLike-MIB (RFC 3635), LLDP-MIB (IEEE 802.1AB-2005),
SNMPv2-MIB (RFC 3418). The counter columns come from the decoder's own table, so the poller
can never walk a column the pipeline does not read, nor miss one it does.
"""

from __future__ import annotations

from railtrace.streams.telemetry.snmp import COLUMNS

IF_DESCR = "1.3.6.1.2.1.2.2.1.2"
IF_INDEX = "1.3.6.1.2.1.2.2.1.1"
IF_ADMIN_STATUS = "1.3.6.1.2.1.2.2.1.7"
IF_OPER_STATUS = "1.3.6.1.2.1.2.2.1.8"
IF_NAME = "1.3.6.1.2.1.31.1.1.1.1"

#: Counter and status columns, indexed by ifIndex, exactly those decode_snmp maps.
COUNTER_COLUMNS: tuple[str, ...] = tuple(COLUMNS)

# LLDP-MIB lldpRemTable, indexed by lldpRemTimeMark.lldpRemLocalPortNum.lldpRemIndex.
LLDP_REM_PORT_ID_SUBTYPE = "1.0.8802.1.1.2.1.4.1.1.6"
LLDP_REM_PORT_ID = "1.0.8802.1.1.2.1.4.1.1.7"
LLDP_REM_PORT_DESC = "1.0.8802.1.1.2.1.4.1.1.8"
LLDP_REM_SYS_NAME = "1.0.8802.1.1.2.1.4.1.1.9"
# LLDP-MIB lldpLocPortTable, indexed by lldpLocPortNum.
LLDP_LOC_PORT_ID_SUBTYPE = "1.0.8802.1.1.2.1.3.7.1.2"
LLDP_LOC_PORT_ID = "1.0.8802.1.1.2.1.3.7.1.3"
LLDP_LOC_PORT_DESC = "1.0.8802.1.1.2.1.3.7.1.4"

LLDP_COLUMNS: tuple[str, ...] = (
    LLDP_REM_PORT_ID_SUBTYPE,
    LLDP_REM_PORT_ID,
    LLDP_REM_PORT_DESC,
    LLDP_REM_SYS_NAME,
    LLDP_LOC_PORT_ID_SUBTYPE,
    LLDP_LOC_PORT_ID,
    LLDP_LOC_PORT_DESC,
)

#: Everything one poll walks: names first, then counters, then LLDP neighbours.
POLL_COLUMNS: tuple[str, ...] = (IF_NAME, IF_DESCR, *COUNTER_COLUMNS, *LLDP_COLUMNS)

# Notifications (SNMPv2-MIB snmpTrapOID.0, IF-MIB linkDown/linkUp, SNMP-COMMUNITY-MIB).
SNMP_TRAP_OID = "1.3.6.1.6.3.1.1.4.1.0"
SNMP_TRAP_ADDRESS = "1.3.6.1.6.3.18.1.3.0"
LINK_DOWN = "1.3.6.1.6.3.1.1.5.3"
LINK_UP = "1.3.6.1.6.3.1.1.5.4"
#: ifOperStatus values a linkDown/linkUp implies when the agent leaves the varbind out.
LINK_TRAP_STATUS = {LINK_DOWN: 2, LINK_UP: 1}
