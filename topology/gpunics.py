"""Which NIC each GPU of a host model sends through, from `nvidia-smi topo -m` as it prints.

NCCL gives each GPU the NIC closest to it on PCIe (and PXN keeps traffic on the rail of that
NIC), so a job holding four GPUs of a node talks on the rails of those four GPUs' NICs, not on
all eight. Without NCCL INFO lines that is all there is to know which rails a partial-node job
uses. The matrix says how close each NIC is: PIX (one PCIe bridge) is closest, then PXB, PHB,
NODE and SYS (across NUMA nodes). A GPU's NICs are those at its closest distance (ties kept:
some boards put two or three NICs on one switch); a GPU whose closest NIC is SYS is near none
of them and says nothing.

Matrices copied from tickets have lost whitespace (`NIC7NIC8`, `SYSSYS`), so cells are read as
tokens, not columns. Pure: text in, mapping out, with a reason for anything refused.

A site that cannot collect the matrix from every host model writes the same map into its
settings once per model (`GpuNicRule`, `site.gpu_nics`): the vendor's system guide gives it
(a DGX B200's compute NICs are mlx5_0,3,4,5,6,9,10,11 beside two storage NICs, which no sorted
list of names would find).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Closer first. NV# (NVLink) and X (self) relate GPUs to GPUs, never a NIC.
CLOSENESS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_COLUMN = re.compile(r"(GPU|NIC)(\d+)")
_CELL = re.compile(r"X|SYS|NODE|PHB|PXB|PIX|NV\d+")
_LEGEND = re.compile(r"^\s*NIC(\d+)\s*:\s*(\S+)\s*$")
_ROW = re.compile(r"^(GPU|NIC)(\d+)\b")


class TopoError(ValueError):
    """A matrix that cannot be read; the message says why."""


@dataclass(frozen=True, slots=True)
class GpuNics:
    """GPU index -> the NIC names closest to it (empty: near none, across NUMA)."""

    by_gpu: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def nics_of(self, gpus: tuple[int, ...]) -> frozenset[str] | None:
        """The NICs the GPUs `gpus` send through, or None when any of them is unknown or near
        no NIC (then every NIC of the host may carry the job's traffic)."""
        out: set[str] = set()
        for gpu in gpus:
            nics = self.by_gpu.get(gpu)
            if not nics:
                return None
            out.update(nics)
        return frozenset(out)


class GpuNicRule(BaseModel):
    """One host model's GPU-to-NIC map as the settings give it: the hosts it holds for, by a
    shell pattern over the names cables.csv gives them, and GPU i's NIC(s) at `nics[i]`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hosts: str = Field(min_length=1, max_length=256, description="e.g. `gb-n*` or `*`")
    nics: tuple[tuple[str, ...], ...] = Field(
        min_length=1,
        max_length=64,
        description="GPU 0's NIC first; a GPU with two NICs (2x400G planes on two PFs) lists "
        "both, a GPU near none (across NUMA only) an empty list",
    )

    @field_validator("nics", mode="before")
    @classmethod
    def _one_or_several(cls, value: object) -> object:
        """`"mlx5_0"` is GPU i's one NIC, as a list of names is several: the short form is the
        common one and a list of one-element lists would be noise in a config file."""
        if isinstance(value, list | tuple):
            return tuple((v,) if isinstance(v, str) else v for v in value)
        return value

    @field_validator("nics")
    @classmethod
    def _names(cls, value: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        for gpu, nics in enumerate(value):
            for name in nics:
                if not name or name != name.strip() or "," in name:
                    raise ValueError(f"GPU {gpu}: {name!r} is not a NIC name (e.g. mlx5_0)")
        return value

    def matches(self, host: str) -> bool:
        return fnmatch.fnmatchcase(host, self.hosts)

    def as_map(self) -> GpuNics:
        return GpuNics(dict(enumerate(self.nics)))


def rule_for(host: str, rules: Iterable[GpuNicRule]) -> GpuNicRule | None:
    """The first rule whose pattern takes `host`: specific models first, `*` last."""
    return next((r for r in rules if r.matches(host)), None)


def parse_topo_matrix(text: str) -> GpuNics:
    """The GPU-to-NIC map of one `nvidia-smi topo -m` output; raises TopoError."""
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if _header(ln)), None)
    if header_at is None:
        raise TopoError("no header row naming GPU0 ... and NIC0 ... columns")
    columns = _header(lines[header_at])
    names = _legend(lines)
    nic_columns = [(i, n) for i, (kind, n) in enumerate(columns) if kind == "NIC"]
    if not nic_columns:
        raise TopoError("the matrix has no NIC column")
    missing = [n for _, n in nic_columns if n not in names]
    if missing:
        raise TopoError(f"the NIC Legend does not name NIC{missing[0]}")
    by_gpu: dict[int, tuple[str, ...]] = {}
    for line in lines[header_at + 1 :]:
        row = _ROW.match(line)
        if row is None or row.group(1) != "GPU":
            continue
        gpu = int(row.group(2))
        cells = _CELL.findall(line[row.end() :])
        if len(cells) < len(columns):
            raise TopoError(f"row GPU{gpu} has {len(cells)} cells for {len(columns)} columns")
        ranked = [
            (CLOSENESS.index(cells[i]), names[n]) for i, n in nic_columns if cells[i] in CLOSENESS
        ]
        if len(ranked) != len(nic_columns):
            raise TopoError(f"row GPU{gpu} relates a NIC by NVLink or as itself")
        best = min(r for r, _ in ranked)
        by_gpu[gpu] = () if CLOSENESS[best] == "SYS" else tuple(n for r, n in ranked if r == best)
    if not by_gpu:
        raise TopoError("the matrix has no GPU row")
    return GpuNics(by_gpu)


def _header(line: str) -> list[tuple[str, int]]:
    """The (kind, index) of each column when `line` is the header row, else []."""
    if _ROW.match(line):
        return []  # a row starts with its label; the header starts with blanks
    columns = [(m.group(1), int(m.group(2))) for m in _COLUMN.finditer(line)]
    return columns if any(k == "GPU" for k, _ in columns) else []


def _legend(lines: list[str]) -> dict[int, str]:
    names: dict[int, str] = {}
    for line in lines:
        m = _LEGEND.match(line)
        if m is not None:
            names[int(m.group(1))] = m.group(2)
    return names
