"""railtrace: which link stalled job X, with evidence.

The installable namespace. The pure core lives in `railtrace.topology` (the rail fabric as a
graph) and `railtrace.streams` (parsing, telemetry math, attribution); adapters around it
(`railtrace.store`, `railtrace.api`, `railtrace.capture`) do the I/O; `railtrace.cli` is the
one composition root that wires them.
"""

__version__ = "0.1.0"
