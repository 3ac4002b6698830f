"""Where jobs run, from what the scheduler prints: Slurm's `scontrol show job -d`,
`squeue --json` and `sacct --json`, and Kubernetes' `kubectl get pods -o json` (or `-o yaml`,
the form pods are most often copied in).

Pure: callers hand in a file's bytes and get JobPlacement facts back, with a dead letter for
each record that could not be used (and the reason). The format is told from the content, so
a capture's `scheduler/` folder takes the files as the tools printed them, under any name.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, tzinfo
from typing import Any

import orjson

from . import kubernetes, slurm_json, slurm_text, yamldoc
from .chunks import Chunk, split
from .common import ENDED_UNSEEN, PlacementRead, RecordError, ended_unseen, uncabled
from .hostlist import HostlistError, expand

__all__ = [
    "ENDED_UNSEEN",
    "Chunk",
    "HostlistError",
    "PlacementRead",
    "RecordError",
    "ended_unseen",
    "expand",
    "read_placements",
    "split",
    "uncabled",
]


def read_placements(source: str, data: bytes, tz: tzinfo = UTC, first: int = 1) -> PlacementRead:
    """The placements in one scheduler output; `tz` is the zone scontrol's times were printed
    in (JSON outputs carry Unix times and need none); `first` is where `data` began in its
    file when it is one chunk of it (`chunks.split`), so origins name the file's own lines.
    Never raises: what cannot be read is a dead letter with the reason, and as much of the
    file as can be read is."""
    out = _read(source, data, tz)
    if first != 1:
        shift = first - 1
        out.placements = [
            replace(p, origin=replace(p.origin, line_no=p.origin.line_no + shift))
            for p in out.placements
        ]
        out.dead_letters = [
            replace(d, line_no=d.line_no + shift) if d.line_no else d for d in out.dead_letters
        ]
    return out


def _read(source: str, data: bytes, tz: tzinfo) -> PlacementRead:
    out = PlacementRead()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # One bad byte must not cost the file: read it with the bad bytes replaced (U+FFFD is
        # refused in a host name or job id, so no record is read wrong) and say so.
        out.refuse(source, 0, f"not UTF-8 from byte {exc.start}: the bad bytes were replaced")
        text = data.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff")  # a BOM an editor or a Windows share put first
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and not slurm_text.looks_like(text):
        # JSON, unless it is neither a job nor a pod list and the file holds several YAML
        # documents (the first in JSON's flow style): `chunks.split` sniffs alike.
        as_json = PlacementRead()
        doc = _json(source, text, as_json)
        if doc is not None and slurm_json.looks_like(doc):
            slurm_json.read(source, doc, as_json)
        elif doc is not None and kubernetes.looks_like(doc):
            kubernetes.read(source, doc, as_json)
        elif yamldoc.has_documents(text):
            return _joined(out, _yaml(source, text, stripped))
        elif doc is not None:
            as_json.refuse(source, 0, "JSON, but neither Slurm's `jobs` nor a Kubernetes pod list")
        return _joined(out, as_json)
    if slurm_text.looks_like(text):
        slurm_text.read(source, text, tz, out)
        return out
    if yamldoc.looks_like(stripped) or yamldoc.has_documents(text):
        return _joined(out, _yaml(source, text, stripped))
    if stripped:
        out.refuse(
            source,
            0,
            "not a scheduler output railtrace reads (scontrol show job, squeue/sacct --json, "
            "kubectl get pods -o json or -o yaml)",
            stripped[:200],
        )
    return out


def _joined(first: PlacementRead, then: PlacementRead) -> PlacementRead:
    first.placements += then.placements
    first.dead_letters += then.dead_letters
    first.waiting += then.waiting
    return first


def _yaml(source: str, text: str, stripped: str) -> PlacementRead:
    out = PlacementRead()
    try:
        docs = yamldoc.load(text)
    except yamldoc.YamlError as exc:
        out.refuse(source, 0, f"not readable YAML: {exc}", stripped[:200])
        return out
    if not any(isinstance(d, dict) and kubernetes.looks_like(d) for d in docs):
        out.refuse(source, 0, "YAML, but no Kubernetes pod or pod list")
    kubernetes.read(source, {"items": kubernetes.pods_in(docs)}, out)
    return out


def _json(source: str, text: str, out: PlacementRead) -> Any:
    """The JSON document of `text`, or None (a dead letter says why). orjson reads nearly
    every file; Python's own json module is the fallback for what orjson refuses and the
    tools can still print: a number beyond a double (`1e999`), nesting deeper than 1,024, or
    text after the document (a second output appended), which is reported and left out."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        first = str(exc)
    try:
        doc, end = json.JSONDecoder().raw_decode(text, len(text) - len(text.lstrip()))
    except (ValueError, RecursionError):
        out.refuse(source, 0, f"not JSON: {first}", text.lstrip()[:200])
        return None
    if text[end:].strip():
        out.refuse(source, 0, f"text after the JSON document (from character {end}), left out")
    return doc
