"""The lines of a process's environment as it prints it into a log, one line at a time.

The shapes read: `env` / `printenv` / `set` (`NAME=value`), `export -p` and `declare -x`
(`declare -x NAME="value"`), a Python dict of `os.environ` or of some of its variables
printed on one line or pretty-printed over several (`{'RANK': '0', ...}`, `environ({...})`),
and torchrun's agent listing what it gives its workers (`Rendezvous complete for workers.
Result:` then `  master_addr=...` lines).

A line is read only when its whole text has one of those shapes, after the line's stamp and a
launcher's task label: `echo SLURM_JOB_NODELIST=...` in a script is no line of a dump. A dump
begins with an upper-case name (environment variables are named so; a trainer's `step=40,
skipped=2` is not one), and goes on with any name (`LMOD_arch=x86_64`, torchrun's lowercase
`master_addr=`). What a line's values mean is `envdump`'s business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# An exported bash function is listed as `BASH_FUNC_name%%=() {` (or `()=`): a name too.
_ASSIGN = re.compile(rf"(?:export |declare -x )?({_NAME}(?:%%|\(\))?)=(.*)")
_UPPER = re.compile(r"[A-Z_][A-Z0-9_]*")
_QUOTED = r"""(?:'[^'\\]*'|"[^"\\]*")"""
_PAIR = re.compile(rf"'({_NAME})': ({_QUOTED})")
_PAIRS = rf"'{_NAME}': {_QUOTED}(?:, '{_NAME}': {_QUOTED})*"
# A dict whose values are all strings, as Python prints `os.environ` (or a dict taken from
# it), whole or one pretty-printed line of it: `{'A': 'x',`, ` 'B': 'y',`, ` 'C': 'z'}`.
_DICT = re.compile(rf"(?P<open>(?:environ\()?\{{)?(?P<pairs>{_PAIRS})?(?P<close>\}}\)?)?,?")
TORCHRUN_RESULT = "Rendezvous complete for workers. Result:"

# Task labels that tell one process's lines from another's in a file several write to: srun
# -l (`3: `), then torchrun's (`[rank3]:`, `[default3]:`), mpirun --tag-output's
# (`[1,3]<stdout>:`) or a glog prefix's process id (torchrun's agent since PyTorch 2.4).
_SRUN = re.compile(r"(\d+): ")
_LABELS = (
    ("rank", re.compile(r"\[(?:rank|default)(\d+)\]: ?")),
    ("mpi", re.compile(r"\[(\d+,\d+)\]<std(?:out|err)>: ?")),
    ("pid", re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +(\d+) \S+:\d+\] ?")),
)


@dataclass(frozen=True, slots=True)
class EnvLine:
    """What one line of a dump holds: its variables, and whether it begins or ends a dump
    (a dict's braces, torchrun's header)."""

    pairs: tuple[tuple[str, str], ...]
    opens: bool = False
    closes: bool = False
    #: torchrun's header: the dump's lowercase `name=value` lines are its workers' variables.
    torchrun: bool = False


def may_be_env(body: str) -> bool:
    """A cheap test that `body` could be a line of a dump, before any regex runs."""
    return "=" in body or "': " in body or "{" in body or body.endswith("Result:")


def split_label(body: str) -> tuple[str, str]:
    """The writer a task label names (`""` without one) and the text after the labels.

    >>> split_label("3: [rank11]: RANK=11")
    ('3:rank11', 'RANK=11')
    """
    writer, body = "", body.lstrip()
    m = _SRUN.match(body)
    if m is not None:
        writer, body = m.group(1) + ":", body[m.end() :]
    for kind, label in _LABELS:
        m = label.match(body)
        if m is not None:
            return writer + kind + m.group(1), body[m.end() :]
    return writer, body


def env_line(text: str, *, continuing: bool = False) -> EnvLine | None:
    """The line of a dump `text` is, or None. `continuing`: a dump of the line's writer is
    open, so a name that is not upper-case goes on with it rather than being a trainer's.

    >>> env_line("declare -x MASTER_ADDR=\\"gpu-01\\"")
    EnvLine(pairs=(('MASTER_ADDR', 'gpu-01'),), opens=False, closes=False, torchrun=False)
    >>> env_line("{'RANK': '0', 'WORLD_SIZE': '4'}").pairs
    (('RANK', '0'), ('WORLD_SIZE', '4'))
    >>> env_line("step=40, skipped=2") is None, env_line("echo RANK=3") is None
    (True, True)
    """
    text = text.strip()
    if not text:
        return None
    if text.endswith(TORCHRUN_RESULT):
        return EnvLine((), opens=True, torchrun=True)
    if text[0] in "{'e":
        d = _DICT.fullmatch(text)
        if d is not None and (d["open"] or d["pairs"] or d["close"]):
            pairs = tuple((n, v[1:-1]) for n, v in _PAIR.findall(d["pairs"] or ""))
            return EnvLine(pairs, opens=bool(d["open"]), closes=bool(d["close"]))
    m = _ASSIGN.fullmatch(text)
    if m is None or not (continuing or _UPPER.fullmatch(m.group(1))):
        return None
    return EnvLine(((m.group(1), _unquoted(m.group(2).strip())),))


def _unquoted(value: str) -> str:
    """`set` and `declare -x` quote a value with spaces or specials: the value itself."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
