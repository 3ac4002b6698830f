"""What every command shares: the consoles, the settings of this invocation, progress bars,
the options several commands take, and how a `StartError` becomes a message and an exit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from railtrace.compose import StartError, Tick
from railtrace.settings import Settings

console = Console()
err = Console(stderr=True)

DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Data directory of the embedded store (default: from settings)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
TopologyOpt = Annotated[
    Path | None,
    typer.Option(help="Folder with cables.csv (and hosts.csv): the fabric to attribute on."),
]
ApiTopologyOpt = Annotated[
    Path | None,
    typer.Option(
        help="Folder with cables.csv (and hosts.csv): the fabric the incident and link pages "
        "draw (default: api.topology_dir, worker.topology_dir, else the plan the last replay "
        "into --data kept)."
    ),
]


def settings_of(ctx: typer.Context, data: Path | None = None) -> Settings:
    """This invocation's settings, with `--data` in place of `store.data_dir` when given."""
    settings: Settings = ctx.obj
    if data is not None:
        settings = settings.model_copy(
            update={"store": settings.store.model_copy(update={"data_dir": data})}
        )
    return settings


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `message` as an error; raise what this returns to exit with `code`."""
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


@contextmanager
def reported() -> Iterator[None]:
    """A `StartError` inside becomes its message on stderr and its exit code."""
    try:
        yield
    except StartError as exc:
        raise fail(exc.message, exc.code) from exc


def say(line: str) -> None:
    """A line for the user on stderr, where it does not mix with what a command prints."""
    err.print(line)


@contextmanager
def progress() -> Iterator[Tick]:
    """Progress bars on stderr, one per stage as it first reports, gone when done."""
    with Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def tick(stage: str, n: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.advance(tasks[stage], n)

        yield tick
