"""Names of graph attributes and roles, in one place so every module spells them the same way."""

from enum import StrEnum

#: Node attribute: the device's inferred role (a `Role`).
ROLE = "role"
#: Node attribute: the rail a host NIC or a leaf serves (int), absent for spines.
RAIL = "rail"
#: Node attribute: tier above the hosts (0 hosts, 1 leaves, 2 spines, 3 super-spines).
TIER = "tier"
#: Edge attributes on each MultiGraph edge (the edge key is the link id).
IF_OF = "if_of"  # dict device -> interface name at that end


class Role(StrEnum):
    HOST = "host"
    LEAF = "leaf"
    SPINE = "spine"
    SUPER_SPINE = "super-spine"
    SWITCH = "switch"  # a switch beyond the third tier, or one not reachable from any host
