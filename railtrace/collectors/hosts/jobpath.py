"""Which job a log file belongs to: from where it lies, or from what it says first.

Template syntax (one template per configured path):

- shell-style glob characters work as in `glob.glob`: `*` and `?` match within one path
  component, `[...]` a character set, and `**` any number of directories;
- `{job_id}` (at most once) matches one non-empty path component part, without `/`, and is
  what becomes the job id: `/var/log/jobs/{job_id}/*.log`, `/scratch/slurm-{job_id}.out`;
- `{{` and `}}` are literal braces; any other `{...}` is an error, so a typo such as `{jobid}`
  is caught at start-up instead of matching nothing.

Without `{job_id}` a template is a plain glob and the job id must come from the file: the
first `SLURM_JOB_ID=<n>` in its first lines (Slurm prolog scripts and `env` dumps print it).
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

PLACEHOLDER = "{job_id}"
_SLURM = re.compile(r"\bSLURM_JOB_ID=(\d+)\b")


def _glob_regex(part: str) -> str:
    """The regex of a glob fragment, with the semantics `glob.glob` gives it on paths."""
    out: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        if part.startswith("**", i):
            out.append(".*")
            i += 2
            if part.startswith("/", i):  # `**/` also matches no directory at all
                out[-1] = "(?:.*/)?"
                i += 1
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = part.find("]", i + 2)  # a `]` right after `[` (or `[!`) is a member
            if end < 0:
                out.append(re.escape(c))
            else:
                body = part[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class PathTemplate:
    """A configured path: the glob that finds files and the regex that reads their job id."""

    template: str
    pattern: str = field(init=False)
    _regex: re.Pattern[str] = field(init=False, repr=False)
    has_job_id: bool = field(init=False)

    def __post_init__(self) -> None:
        t = self.template
        if not t:
            raise ValueError("an empty path template")
        pieces = t.replace("{{", "\0").replace("}}", "\1").split(PLACEHOLDER)
        if len(pieces) > 2:
            raise ValueError(f"{t!r}: {PLACEHOLDER} may appear only once")
        for piece in pieces:
            if "{" in piece or "}" in piece:
                raise ValueError(
                    f"{t!r}: the only placeholder is {PLACEHOLDER} (write {{{{ and }}}} for "
                    "literal braces)"
                )

        def unescape(piece: str) -> str:
            return piece.replace("\0", "{").replace("\1", "}")

        glob_parts = [unescape(p) for p in pieces]
        regex_parts = [_glob_regex(unescape(p)) for p in pieces]
        object.__setattr__(self, "has_job_id", len(pieces) == 2)
        object.__setattr__(self, "pattern", "*".join(glob_parts))
        object.__setattr__(
            self, "_regex", re.compile("(?P<job_id>[^/]+)".join(regex_parts) + r"\Z")
        )

    def job_id(self, path: str) -> str | None:
        """The job id the path names, or None (no placeholder, or the path does not fit)."""
        if not self.has_job_id:
            return None
        m = self._regex.match(path)
        return m.group("job_id") if m else None

    def matches(self, path: str) -> bool:
        return self._regex.match(path) is not None

    def expand(self) -> list[str]:
        """The files the template names now (regular files only are kept by the caller)."""
        found = glob.glob(self.pattern, recursive="**" in self.pattern)
        return sorted(p for p in found if self.matches(p))


def slurm_job_id(lines: Iterable[str]) -> str | None:
    """The first `SLURM_JOB_ID=<n>` among `lines`.

    >>> slurm_job_id(["+ srun train.py", "SLURM_JOB_ID=48213", "SLURM_JOB_ID=1"])
    '48213'
    >>> slurm_job_id(["MY_SLURM_JOB_ID=7"]) is None
    True
    """
    for line in lines:
        if "SLURM_JOB_ID=" in line:
            m = _SLURM.search(line)
            if m is not None:
                return m.group(1)
    return None
