"""Running the `railtrace` CLI in the test process, as a user would, without their settings."""

from __future__ import annotations

import logging
import os

from typer.testing import CliRunner, Result

from railtrace.cli import app

#: Wide enough that rich tables and help text do not wrap what tests look for.
COLUMNS = "250"


def clean_env() -> dict[str, str | None]:
    """The caller's RAILTRACE_* settings removed (None unsets in CliRunner), output wide."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("RAILTRACE_")}
    env["COLUMNS"] = COLUMNS
    return env


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in this process; the `railtrace` logger it configures is put back after."""
    logger = logging.getLogger("railtrace")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    try:
        return CliRunner().invoke(app, [str(a) for a in args], env={**clean_env(), **(env or {})})
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
