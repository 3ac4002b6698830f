"""Randomized-world incidents: one graded in a worker, and the results file that lets a run of
a thousand stop and go on later.

A results file holds one JSON line per graded incident, stamped with the version of the code
that graded it (the commit, and a digest of any uncommitted change). A run given the file skips
the incidents it already holds and appends each new one as it finishes, so a killed run loses
only the incidents in flight. Incidents graded by another version are never mixed into one
table with new ones: a run that would add to them is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.grading.runs import replayed
from benchmarks.grading.score import JobScore
from railtrace.world.capture import write_world

#: `--nodes random`: each world draws its own size.
RANDOM = "random"

WorldTask = tuple[int, int, int]  # nodes (0: drawn), seed, watchdog


@dataclass(frozen=True, slots=True)
class WorldIncident:
    size: str  # the --nodes entry it ran under ("64", "random")
    nodes: int
    seed: int
    watchdog: int
    fault: str
    sample_s: int
    buckets: dict[str, str]
    scores: list[JobScore]
    seconds: float

    @property
    def task(self) -> WorldTask:
        return (0 if self.size == RANDOM else int(self.size), self.seed, self.watchdog)

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> WorldIncident:
        scores = [
            JobScore(**(s | {"evidence": tuple(s.get("evidence") or ())})) for s in d["scores"]
        ]
        return cls(**(d | {"scores": scores}))


def run_world(task: WorldTask) -> WorldIncident:
    nodes, seed, watchdog = task
    started = time.perf_counter()
    truth, scores = replayed(
        lambda work: write_world(work, seed, nodes or None, watchdog_s=watchdog)
    )
    dims = truth["dimensions"]
    return WorldIncident(
        str(nodes) if nodes else RANDOM,
        dims["nodes"],
        seed,
        watchdog,
        dims["fault"],
        dims["sample_s"],
        truth["buckets"],
        scores,
        time.perf_counter() - started,
    )


def code_version(root: Path) -> str:
    """The commit of `root`'s checkout, with `+` and a digest of what differs from it
    (tracked changes and untracked files) when the tree is not clean."""

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(root), *args], check=True, capture_output=True
        ).stdout

    head = git("rev-parse", "--short=12", "HEAD").decode().strip()
    digest = hashlib.sha256(git("diff", "HEAD", "--binary"))
    for name in sorted(git("ls-files", "--others", "--exclude-standard", "-z").split(b"\0")):
        if name and (root / name.decode()).is_file():
            digest.update(name + b"\0" + (root / name.decode()).read_bytes())
    changed = git("status", "--porcelain").strip()
    return f"{head}+{digest.hexdigest()[:10]}" if changed else head


@dataclass(slots=True)
class Results:
    """What a results file holds: incidents by task and by the version that graded them."""

    path: Path
    incidents: dict[WorldTask, WorldIncident] = dataclasses.field(default_factory=dict)
    versions: dict[WorldTask, str] = dataclasses.field(default_factory=dict)
    unreadable: int = 0  # lines cut short by a killed run, or not ours

    @classmethod
    def load(cls, path: Path) -> Results:
        out = cls(path)
        if not path.exists():
            return out
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
                incident = WorldIncident.from_json(record["incident"])
                version = str(record["version"])
            except (orjson.JSONDecodeError, KeyError, TypeError):
                out.unreadable += 1
                continue
            out.incidents[incident.task] = incident
            out.versions[incident.task] = version
        return out

    def of(self, tasks: Iterable[WorldTask]) -> list[WorldIncident]:
        return [self.incidents[t] for t in tasks if t in self.incidents]

    def version_set(self, tasks: Iterable[WorldTask]) -> set[str]:
        return {self.versions[t] for t in tasks if t in self.versions}

    def append(self, incident: WorldIncident, version: str) -> None:
        """One line per incident, flushed at once: a kill loses at most the line in flight,
        which the next load counts as unreadable and grades again."""
        line = orjson.dumps({"version": version, "incident": incident.as_json()}) + b"\n"
        with self.path.open("ab") as f:
            f.write(line)
        self.incidents[incident.task] = incident
        self.versions[incident.task] = version
