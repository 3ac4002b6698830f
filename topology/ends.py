"""The fabric's own names for its parts: a cable's end, a cable, and how a port's cabling stands
against the plan. The topology owns them; the records of the streams refer to them, so that
the fabric never depends on the stream that runs over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """One end of a link: a device and one of its interfaces, named as in `cables.csv`."""

    device: str
    interface: str


@dataclass(frozen=True, slots=True)
class LinkRef:
    """A cable of the plan, by its stable id and both ends."""

    link_id: str
    a: Endpoint
    b: Endpoint


class CablingKind(StrEnum):
    """How a port's cabling, as its LLDP neighbour shows it, stands against `cables.csv`."""

    MISWIRED = "miswired"  # a planned cable, but LLDP names another far end
    UNEXPECTED = "unexpected"  # a neighbour on a port the plan leaves empty
    MISSING = "missing"  # a planned cable, no neighbour seen
    RESOLVED = "resolved"  # a difference reported earlier is gone: cabled as planned again
