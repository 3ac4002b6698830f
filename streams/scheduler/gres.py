"""Slurm's GPU GRES strings: which GPU indexes of a node a job holds.

`scontrol show job -d` prints `GRES=gpu:8(IDX:0-7)` (or `gpu:b300:4(IDX:0-3)`, several
comma-separated GRES, older versions `GRES_IDX=gpu(IDX:0,2)`); squeue's JSON carries the same
text in `gres_detail`, one per node. Only the `gpu` GRES is read: NICs are not GRES on most
clusters, and where they are their index is not a GPU's.
"""

from __future__ import annotations

import re

_GPU = re.compile(r"(?:^|,)gpu(?::[^:(,]+)?(?::\d+)?\(IDX:([^)]*)\)")
_INDEX = re.compile(r"(\d{1,4})(?:-(\d{1,4}))?\Z")
#: More GPUs than any node holds: a range beyond it is damage, not a node.
MAX_GPUS_PER_NODE = 64


def gpu_indexes(gres: str) -> tuple[int, ...] | None:
    """The GPU indexes `gres` names, () when it names no GPU, None when the IDX list is
    unreadable (the caller says so rather than guessing).

    >>> gpu_indexes("gpu:b300:4(IDX:0-2,5)"), gpu_indexes("gpu:8(S:0-1)(IDX:0-7)")[-1]
    ((0, 1, 2, 5), 7)
    >>> gpu_indexes("(null)"), gpu_indexes("gpu:8(IDX:7-0)")
    ((), None)
    """
    m = _GPU.search(re.sub(r"\(S:[^)]*\)", "", gres))  # the socket affinity is not an index
    if m is None:
        return ()
    if m.group(1) in ("", "N/A"):
        return ()
    out: list[int] = []
    for piece in m.group(1).split(","):
        r = _INDEX.match(piece)
        if r is None:
            return None
        lo = int(r.group(1))
        hi = lo if r.group(2) is None else int(r.group(2))
        if hi < lo or hi >= MAX_GPUS_PER_NODE:
            return None
        out.extend(range(lo, hi + 1))
    return tuple(out)
