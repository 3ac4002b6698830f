"""The pure log parser: raw stdout/stderr lines of a job's ranks in, canonical records out.

It reads NCCL (NCCL_DEBUG=INFO/WARN), PyTorch ProcessGroupNCCL, NCCL RAS reports and kernel
`NVRM: Xid` lines, whatever wrappers (log shippers, mpirun, torchrun, syslog) put around them,
and does no I/O: callers hand it lines and get JobFacts back, deterministically. Its state
is bounded and can be saved and resumed (`LogParser.snapshot` / `LogParser.restore`).
"""

from .parser import SNAPSHOT_VERSION, LogParser, parse_lines
from .parser_input import MAX_LINE_BYTES, bounded
from .parser_stats import ParseStats

__all__ = [
    "MAX_LINE_BYTES",
    "SNAPSHOT_VERSION",
    "LogParser",
    "ParseStats",
    "bounded",
    "parse_lines",
]
