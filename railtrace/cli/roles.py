"""The long-running roles: `worker`, `sink`, `serve`, `alert` and `collect <role>`. Each parses
its options and hands them to its composition function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from railtrace.cli.common import (
    ApiTopologyOpt,
    DataOpt,
    TopologyOpt,
    fail,
    reported,
    say,
    settings_of,
)
from railtrace.collectors import registry
from railtrace.settings import Settings

collect_app = typer.Typer(
    help="Gather inputs onto the raw Kafka topics: one collector role per process, configured "
    "in the `collect` section of the settings file (--config); a disk spool covers broker "
    "outages.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.command()(worker)
    app.command()(sink)
    app.command()(alert)
    app.command()(serve)
    for spec in registry.SPECS:
        collect_app.command(spec.name, help=spec.help)(_collector(spec.name))
    app.add_typer(collect_app, name="collect")


def worker(ctx: typer.Context, topology: TopologyOpt = None) -> None:
    """Run a streaming worker: raw topics in; link samples, link events, job facts and
    verdicts out. Start as many as there are partitions to share; they balance by themselves."""
    from railtrace.compose.roles import run_worker

    with reported():
        run_worker(settings_of(ctx), topology)


def sink(
    ctx: typer.Context,
    data: DataOpt = None,
    serve_api: Annotated[bool, typer.Option("--serve", help="Also serve the HTTP API.")] = False,
    host: Annotated[str | None, typer.Option(help="API listen address.")] = None,
    port: Annotated[int | None, typer.Option(help="API listen port.")] = None,
    topology: ApiTopologyOpt = None,
) -> None:
    """Write railtrace's topics into the store (chDB: run exactly one; a ClickHouse server:
    as many as you like), optionally serving the API from the same process."""
    from railtrace.compose.roles import run_sink

    settings = settings_of(ctx, data)
    api = _bind(settings, host, port) if serve_api else None
    with reported():
        run_sink(settings, api, topology, say)


def alert(ctx: typer.Context) -> None:
    """Send Slack alerts for new verdicts, node quarantines, link flap storms and cabling
    differences until stopped (deploy/alerts/README.md)."""
    from railtrace.compose.roles import run_alert

    with reported():
        run_alert(settings_of(ctx))


def serve(
    ctx: typer.Context,
    data: DataOpt = None,
    host: Annotated[str | None, typer.Option(help="Listen address (default: api.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Listen port (default: api.port).")] = None,
    topology: ApiTopologyOpt = None,
) -> None:
    """Serve the HTTP API (verdicts, links, topology, nodes; bearer tokens from `railtrace
    token create`) and the incident pages (/incidents) over the store."""
    from railtrace.compose.api import serve as run_serve

    settings = settings_of(ctx, data)
    with reported():
        run_serve(settings, *_bind(settings, host, port), topology, say)


def _bind(settings: Settings, host: str | None, port: int | None) -> tuple[str, int]:
    return (
        settings.api.host if host is None else host,
        settings.api.port if port is None else port,
    )


def _collector(role: str) -> Callable[[typer.Context], None]:
    def command(ctx: typer.Context) -> None:
        from railtrace.collectors import run
        from railtrace.collectors.errors import CollectorFailedError

        try:
            run.run(settings_of(ctx), role)
        except (OSError, ValueError, CollectorFailedError) as exc:
            raise fail(f"collect {role}: {exc}") from exc

    command.__name__ = f"collect_{role}"
    return command
