"""The rail fabric as data: a networkx MultiGraph of devices and cables, and free functions over it.

Pure and I/O-free: callers hand in CSV text or parameters and get back a `Fabric`. A loaded
fabric is never mutated by the stream; a changed cabling plan means a new `Fabric`.
"""

from railtrace.topology.cabling import Cable, CablePlan, parse_cables_csv, parse_hosts_csv
from railtrace.topology.fabric import Fabric, build_fabric
from railtrace.topology.paths import PathFinder
from railtrace.topology.reference import ReferenceDesign, rail_optimized

__all__ = [
    "Cable",
    "CablePlan",
    "Fabric",
    "PathFinder",
    "ReferenceDesign",
    "build_fabric",
    "parse_cables_csv",
    "parse_hosts_csv",
    "rail_optimized",
]
