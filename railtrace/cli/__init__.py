"""`railtrace`: the command line. It parses arguments, calls one composition function per
command (`railtrace.compose`) and presents what comes back; it holds no wiring of its own.

The commands live by kind: `capture` (simulate, replay, demo), `roles` (worker, sink, serve,
alert, collect), `ask` (verdict, jobs, cabling, nodes, profile, release-node) and `admin`
(token, db); `common` holds what they share.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from railtrace import __version__
from railtrace.cli import admin, ask, capture, roles
from railtrace.cli.common import console, fail
from railtrace.logconfig import configure
from railtrace.private import UMASK
from railtrace.settings import load_settings

app = typer.Typer(
    name="railtrace",
    help="Which fabric link stalled job X? railtrace reads switch telemetry and NCCL/PyTorch "
    "logs, places every job on the rail fabric, and names the link (or node) that stalled it, "
    "with the evidence.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)


def _print_version(value: bool) -> None:
    if value:
        console.print(f"railtrace {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", envvar="RAILTRACE_CONFIG", help="TOML settings file."),
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "WARNING",
    log_json: Annotated[bool, typer.Option(help="Log as JSON lines.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    try:
        settings = load_settings(config)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(f"bad settings: {exc}") from exc
    configure(log_level, log_json or settings.log_json)
    ctx.obj = settings


# The order `railtrace --help` lists them in: the tour first, the roles, then the questions.
for _kind in (capture, roles, ask, admin):
    _kind.register(app)


def main() -> None:
    # Before anything is created: what libraries write inside railtrace's (0700) directories,
    # chDB's parts among them, is then private too (railtrace.private).
    os.umask(UMASK)
    app()
