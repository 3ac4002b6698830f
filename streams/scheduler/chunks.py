"""A scheduler output cut into one piece per job record (a job of scontrol or squeue, a pod),
each of which reads alone to what it gave in the whole output.

Why: a raw scheduler message is keyed by its job, so that it reaches the worker that owns the
job's logs; an output listing a hundred jobs must therefore travel as a hundred messages.
Each piece carries where it began in its output (`first`: the 1-based line of a text record,
the 1-based position of a JSON or YAML item), so that what it reads is dated to the same place
as when the whole file is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import orjson

from . import kubernetes, slurm_json, slurm_text, yamldoc


@dataclass(frozen=True, slots=True)
class Chunk:
    first: int
    data: bytes


def split(data: bytes) -> list[Chunk]:
    """The job records of `data`, one chunk each; an output that cannot be cut (not UTF-8,
    not JSON or YAML that parses, of no format railtrace reads) is one chunk, whole, for the
    reader to refuse with its reason."""
    whole = [Chunk(1, data)]
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return whole
    stripped = text.lstrip()
    if slurm_text.looks_like(text):
        return [
            Chunk(line_no, ("\n".join(lines) + "\n").encode())
            for line_no, lines in slurm_text.records(text)
        ]
    if stripped.startswith(("{", "[")):
        # As the reader sniffs: JSON, unless it is neither a job nor a pod list and the
        # file holds several YAML documents (the first in JSON's flow style).
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and slurm_json.looks_like(doc):
            return _items(doc["jobs"], "jobs") or whole
        if isinstance(doc, dict) and kubernetes.looks_like(doc):
            return whole if doc.get("kind") == "Pod" else _items(doc["items"], "items") or whole
        if not yamldoc.has_documents(text):
            return whole
    if yamldoc.looks_like(stripped) or yamldoc.has_documents(text):
        try:
            docs = yamldoc.load(text)
        except yamldoc.YamlError:
            return whole
        pods = kubernetes.pods_in(docs)
        return (_items(pods, "items") if pods else None) or whole
    return whole


def _items(items: list[object], key: str) -> list[Chunk] | None:
    """One chunk per item, or None when an item cannot be written back: orjson stops at 254
    levels of nesting, Python's json at its recursion limit (no scheduler prints either)."""
    out = []
    for i, item in enumerate(items, 1):
        try:
            data = orjson.dumps({key: [item]})
        except TypeError:  # orjson.JSONEncodeError: too deep, or an integer past 64 bits
            try:
                data = json.dumps({key: [item]}, ensure_ascii=False).encode()
            except (RecursionError, ValueError, TypeError):
                return None
        out.append(Chunk(i, data))
    return out
