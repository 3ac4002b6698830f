"""railtrace: which link stalled job X, with evidence.

The installable namespace. The pure core lives in `railtrace.topology` (the rail fabric as a
graph) and `railtrace.streams` (parsing, telemetry math, attribution); adapters around it
(`railtrace.store`, `railtrace.api`, the collectors, the workers, the alerter) do the I/O;
`railtrace.compose` is the one composition root that wires them, and `railtrace.cli` the
command line that calls it.
"""

__version__ = "0.1.0"
