"""A simulator of incidents on a rail-optimized GPU fabric, writing real-format captures.

Used by `railtrace simulate`/`demo`, the end-to-end tests and the accuracy benchmark. It owns
its own randomness (one seed names one incident) and writes files; it is not part of the core.
"""

from railtrace.simulate.scenario import Fault
from railtrace.simulate.writer import write_capture

__all__ = ["Fault", "write_capture"]
