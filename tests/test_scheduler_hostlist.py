"""Hostlist expansion: pinned cases, and Slurm's own `scontrol show hostnames` as the reference
on generated expressions (ours must give its hosts, or refuse where it refuses)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import gates
import pytest

from railtrace.streams.scheduler.hostlist import MAX_HOSTS, HostlistError, expand


@pytest.mark.parametrize(
    ("expression", "hosts"),
    [
        ("gb-n[001-004,007]", ["gb-n001", "gb-n002", "gb-n003", "gb-n004", "gb-n007"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("n[9-011]", ["n9", "n10", "n11"]),  # the low end sets the width
        ("r[1-2]-n[8-9]", ["r1-n8", "r1-n9", "r2-n8", "r2-n9"]),
        ("n[3,1-2]", ["n3", "n1", "n2"]),  # order as written
        ("n[1-3],n2", ["n1", "n2", "n3", "n2"]),  # duplicates kept, as Slurm keeps them
        (",a,,b,", ["a", "b"]),
        ("a b", ["a", "b"]),
        ("dgx-b300-017", ["dgx-b300-017"]),
        ("n[1-2]-ib", ["n1-ib", "n2-ib"]),  # a shared suffix, as Slurm 23.11+ prints it
        # What scontrol 22.05 prints for three groups: the middle one varies slowest.
        (
            "row[0,1]_rack[2-3]_blade[4,5]",
            [
                "row0_rack2_blade4",
                "row0_rack2_blade5",
                "row1_rack2_blade4",
                "row1_rack2_blade5",
                "row0_rack3_blade4",
                "row0_rack3_blade5",
                "row1_rack3_blade4",
                "row1_rack3_blade5",
            ],
        ),
    ],
)
def test_expressions_expand_as_slurm_prints_them(expression: str, hosts: list[str]) -> None:
    assert expand(expression) == hosts


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("n[3-1]", "backwards"),
        ("n[a-b]", "bad range"),
        ("n[]", "bad range"),
        ("n[1-2", "not closed"),
        ("n[1-2]]", "without '['"),
        ("n[[1]]", "nested"),
        ("n[ 1-2]", "bad range"),
        ("n[0-99999999]", f"more than {MAX_HOSTS}"),
        ("a[0-999]b[0-999]", f"more than {MAX_HOSTS}"),
        ("", "no host"),
        ("n/../x", "not allowed"),
    ],
)
def test_malformed_expressions_are_refused_with_the_reason(expression: str, says: str) -> None:
    with pytest.raises(HostlistError, match=says.replace("[", r"\[")):
        expand(expression)


def _random_expression(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    """A hostlist as schedulers print them, and sometimes not, with its items and their
    suffixes: made from parts, never from the expansion under test."""
    items = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(["gpu", "gb-n", "dgx-b300-", "r", "node", "x1y"])
        for group in range(rng.choice([0, 1, 1, 1, 2, 3])):
            if group:
                name += rng.choice(["-n", "s", ""])
            ranges = []
            for _ in range(rng.randint(1, 3)):
                width = rng.choice([1, 1, 2, 3])
                lo = rng.randrange(0, 10**width if width > 1 else 20)
                text = f"{lo:0{width}d}"
                if rng.random() < 0.6:
                    hi = lo + rng.randrange(-3 if rng.random() < 0.25 else 0, 12)
                    text += f"-{hi:0{rng.choice([1, width])}d}"
                ranges.append(text)
            name += "[" + ",".join(ranges) + "]"
        suffix = "-ib" if name.endswith("]") and rng.random() < 0.1 else ""
        items.append((name, suffix))
    expression = rng.choice([",", ",", " "]).join(name + suffix for name, suffix in items)
    return expression, items


def _scontrol_hostnames(expression: str, conf: Path) -> list[str] | None:
    """Slurm's expansion, or None where it says the expression is bad."""
    done = subprocess.run(
        ["scontrol", "show", "hostnames", expression],
        env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    # "Invalid hostlist", or (a bad range in a prefix group) an error and the other items'
    # hosts only: either way Slurm did not take the whole expression.
    if "Invalid hostlist" in done.stdout + done.stderr or "error:" in done.stderr:
        return None
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_generated_expressions_expand_as_scontrol_does(tmp_path: Path) -> None:
    gates.require("slurm", shutil.which("scontrol") is not None, "Slurm's scontrol (slurm-wlm)")
    conf = tmp_path / "slurm.conf"  # scontrol reads one before it expands anything
    conf.write_text(
        "ClusterName=hostlists\nSlurmctldHost=localhost\n"
        "NodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=p Nodes=localhost Default=YES\n"
    )
    rng = random.Random(20261201)
    refused = agreed = 0
    for _ in range(150):
        expression, items = _random_expression(rng)
        theirs = _scontrol_hostnames(expression, conf)
        if any(suffix for _, suffix in items):
            # Debian's 22.05 predates suffixes (23.11): it refuses them, so each item is
            # expanded without its suffix and the suffix put back on every host.
            assert theirs is None, expression
            bare = [(_scontrol_hostnames(name, conf), suffix) for name, suffix in items]
            if all(hosts is not None for hosts, _ in bare):
                theirs = [h + suffix for hosts, suffix in bare for h in hosts or ()]
        try:
            ours = expand(expression)
        except HostlistError:
            assert theirs is None, f"{expression!r}: Slurm expands it to {theirs}"
            refused += 1
            continue
        assert ours == theirs, expression
        agreed += 1
    assert refused >= 10 and agreed >= 90  # both sides of the rule were exercised
