"""A smoke-sized run of both fuzz harnesses, with a fixed seed, so CI sees regressions.

benchmarks/fuzz_readers.py feeds the capture readers good records among garbage (about 2,000
inputs here, spread over the readers), benchmarks/fuzz_api.py sends 2,000 generated requests to
the app over a small replayed incident; the full runs and their figures are in
benchmarks/README.md. A reader that raises, hangs or loses a good record, or a response that
is a 5xx, undeclared or unauthenticated, fails `test_readers_fail_only_as_known` /
`test_api_fails_only_as_known`, unless it is an open defect listed below. Each listed defect
has its own strict xfail: once it is fixed, that test passes, strict xfail reports it, and the
entry has to go, so the list cannot outlive the defects.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gates import DELIBERATE

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.fuzzing
import fuzz_api
import fuzz_readers

from benchmarks.fuzzing.corpus import build_corpus
from benchmarks.fuzzing.harness import Harness, fuzz

#: Both harnesses simulate an incident and replay it (e2e); the API's goes into a chDB store.
pytestmark = pytest.mark.e2e

SEED = 1
READER_INPUTS = {
    "cables": 300,
    "hosts": 300,
    "gnmi": 400,
    "gnmi-message": 400,
    "logs": 400,
    "replay": 200,
    "scheduler": 400,
}
API_ARGS = ["--seed", str(SEED), "--requests", "2000", "--nodes", "8", "--sample-s", "60"]

#: Open defects seen at this seed and size: (reader, signature without line numbers) -> why.
#: The full run on 40b29fb found the reader defects listed in benchmarks/README.md ("Fuzzing
#: the capture readers and the API"); at 0492379 this run sees none of them. The scheduler
#: reader's still open (the full run on 90a9dc6 found more, each with its reduced input in
#: tests/fixtures/fuzz/ and README there, fixed since): a JSON file past orjson's limits
#: beside other damage is refused whole. Of its two kinds, a number past a double beside other
#: damage is still open but no longer met here: the 22.05 sacct fixture's jobs changed what
#: this seed draws, and seed 1 first meets it at input 423 (`--readers scheduler`).
_WHOLE = "lost: file refused as a whole: "
KNOWN_READERS: dict[tuple[str, str], str] = {
    ("scheduler", _WHOLE + "not JSON: depth limit exceeded"): (
        "one job nested past orjson's 1,024 levels refuses the whole JSON file"
    ),
}
#: Open API defects seen at this seed and size: signature -> why. The full run on 40b29fb found
#: those listed in benchmarks/README.md; at 0492379 this run sees none of them.
KNOWN_API: dict[str, str] = {}


def reader_signature(sig: str) -> str:
    """A reader failure's kind without the line number, which moves as the code is edited."""
    return re.sub(r"(\.py):\d+", r"\1", sig)


def api_signature(problem: str) -> str:
    """An API problem's kind: without line numbers, counts and status codes."""
    if problem.startswith("server error"):
        return re.sub(r"(\.py):\d+", r"\1", problem)
    kind = re.sub(r"\s*\(.*", "", problem)
    return re.sub(r"^\d+ ", "N ", re.sub(r"status \d+", "status N", kind)).strip()


@pytest.fixture(scope="module")
def reader_runs() -> dict[str, Any]:
    args = fuzz_readers.parser().parse_args(["--seed", str(SEED), "--hang-limit", "0"])
    work = fuzz_readers.work_dir()
    try:
        corpus = build_corpus(work, args.capture_seed)
        harness = Harness(args, corpus, work)
        return {
            reader: fuzz(harness, reader, n, time.perf_counter() + 120)
            for reader, n in READER_INPUTS.items()
        }
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def api_run() -> Any:
    return fuzz_api.fuzz(API_ARGS)


@pytest.mark.parametrize("reader", list(READER_INPUTS))
def test_readers_fail_only_as_known(reader_runs: dict[str, Any], reader: str) -> None:
    tally = reader_runs[reader]
    assert tally.inputs == READER_INPUTS[reader], "the run stopped early"
    assert tally.checked > 0, "no good record was checked"
    new = {
        sig: n
        for sig, n in tally.signatures.items()
        if (reader, reader_signature(sig)) not in KNOWN_READERS
    }
    assert not new, (
        f"{reader}: failures outside the known defects {new}; reproduce with "
        + "; ".join(
            f".venv/bin/python benchmarks/fuzz_readers.py --seed {SEED} --readers {reader} "
            f"--index {tally.examples[sig]}"
            for sig in new
        )
    )


@pytest.mark.parametrize(
    "reader, signature",
    [
        pytest.param(reader, sig, marks=pytest.mark.xfail(strict=True, reason=why))
        for (reader, sig), why in KNOWN_READERS.items()
    ],
)
def test_known_reader_defect_is_fixed(
    reader_runs: dict[str, Any], reader: str, signature: str
) -> None:
    seen = {reader_signature(s): n for s, n in reader_runs[reader].signatures.items()}
    assert signature not in seen, f"{reader}: {seen[signature]} inputs still fail as {signature}"


@pytest.mark.chdb
def test_api_fails_only_as_known(api_run: Any) -> None:
    fig = api_run.fig
    assert fig.requests == 2000, "the run stopped early"
    assert fig.statuses[200] > 0 and fig.statuses[401] > 0, fig.statuses
    new = {p: n for p, n in fig.problems.items() if api_signature(p) not in KNOWN_API}
    assert not new, f"API failures outside the known defects {new}; reproduce with " + "; ".join(
        f".venv/bin/python benchmarks/fuzz_api.py {' '.join(API_ARGS)} --index {fig.first[p]}"
        for p in new
        if p in fig.first
    )


@pytest.mark.chdb
@pytest.mark.parametrize(
    "signature",
    [
        pytest.param(sig, marks=pytest.mark.xfail(strict=True, reason=why))
        for sig, why in KNOWN_API.items()
    ]
    # With no known defect there is nothing to re-check: said so, not an empty parameter set
    # (pytest's skip for that reads as a missing service).
    or [pytest.param("", marks=pytest.mark.skip(reason=DELIBERATE + "no API defect is known"))],
)
def test_known_api_defect_is_fixed(api_run: Any, signature: str) -> None:
    seen = {api_signature(p): n for p, n in api_run.fig.problems.items()}
    assert signature not in seen, f"{seen[signature]} requests still fail as {signature}"
