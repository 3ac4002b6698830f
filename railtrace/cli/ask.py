"""The questions: `verdict`, `jobs`, `cabling`, `nodes` and `profile`, read from the store or,
when a running process holds the embedded store, through its API; and `release-node`."""

from __future__ import annotations

import urllib.parse
from typing import Annotated

import orjson
import typer

from railtrace.cli.common import (
    DataOpt,
    JsonOpt,
    console,
    err,
    fail,
    reported,
    settings_of,
)
from railtrace.settings import Settings
from railtrace.streams.records import JobState


def register(app: typer.Typer) -> None:
    app.command()(verdict)
    app.command()(jobs)
    app.command()(profile)
    app.command()(cabling)
    app.command()(nodes)
    app.command("release-node")(release_node)


def _warn_unfinished(settings: Settings) -> bool:
    """Say so on stderr when the last replay into this directory stopped half way."""
    from railtrace.compose.stores import unfinished_replay

    found = unfinished_replay(settings)
    if found is not None:
        err.print(f"[bold yellow]Warning:[/] {found}")
    return found is not None


def verdict(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(help="The job id (the logs/<job_id>/ folder name).")],
    data: DataOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Which link stalled JOB_ID: the verdict, its candidates and the evidence."""
    from railtrace.api.schemas import VerdictOut
    from railtrace.compose.stores import quoted, read
    from railtrace.render import print_verdict
    from railtrace.streams.records import Verdict, valid_job_id

    settings = settings_of(ctx, data)
    if not valid_job_id(job_id):
        raise fail(
            f"no job {job_id!r}: a job id is letters, digits and ._:@+- (at most 128); "
            "`railtrace jobs` lists them",
            2,
        )
    path = f"/v1/jobs/{quoted(job_id)}/verdict"
    found: Verdict | None
    with reported():
        found = read(
            settings,
            lambda store: store.get_verdict(job_id),
            lambda get: VerdictOut.model_validate(get(path)).to_record(),
        )
    if found is None:
        _warn_unfinished(settings)
        raise fail(
            f"no job {job_id!r} in {settings.store.data_dir}; `railtrace jobs` lists them", 2
        )
    if json_out:
        console.print_json(VerdictOut.from_record(found).model_dump_json())
    else:
        print_verdict(console, found)


def jobs(
    ctx: typer.Context,
    data: DataOpt = None,
    state: Annotated[JobState | None, typer.Option(help="Only jobs in this state.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the jobs in the store with their current verdicts."""
    from railtrace.api.schemas import JobListOut, VerdictOut
    from railtrace.compose.stores import Fetch, quoted, read
    from railtrace.render import verdict_table
    from railtrace.store import Store
    from railtrace.streams.records import Verdict

    settings = settings_of(ctx, data)
    query = f"?state={state.value}&limit=1000" if state else "?limit=1000"

    def in_store(store: Store) -> list[Verdict]:
        rows = store.list_jobs(state, limit=1000, offset=0)
        return [v for r in rows if (v := store.get_verdict(r.job_id)) is not None]

    def via_api(get: Fetch) -> list[Verdict]:
        listing = JobListOut.model_validate(get(f"/v1/jobs{query}"))
        return [
            VerdictOut.model_validate(get(f"/v1/jobs/{quoted(row.job_id)}/verdict")).to_record()
            for row in listing.jobs
        ]

    with reported():
        found = read(settings, in_store, via_api)
    if json_out:
        docs = [VerdictOut.from_record(v).model_dump(mode="json") for v in found]
        console.print_json(orjson.dumps(docs).decode())
    else:
        console.print(verdict_table(found))
    if _warn_unfinished(settings):
        raise typer.Exit(1)


def profile(
    ctx: typer.Context,
    changed: Annotated[
        bool, typer.Option("--changed", help="Only the settings that differ from the defaults.")
    ] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="The defaults as the README's table.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Show the attribution profile in effect: every threshold, weight, window and cadence that
    link health and attribution judge by (the attribution section of the settings), why each
    default is what it is, and which ones this machine's config file or RAILTRACE_ATTRIBUTION__...
    variables change. replay, the workers and the API all judge by these."""
    from railtrace.render import profile_markdown, profile_table
    from railtrace.streams.attribution.profile import entries

    found = entries(settings_of(ctx).attribution)
    if markdown:
        console.print(profile_markdown(found), soft_wrap=True, markup=False, highlight=False)
    elif json_out:
        rows = [{"setting": e.key, "value": e.value, "default": e.default} for e in found]
        console.print_json(orjson.dumps(rows, option=orjson.OPT_NON_STR_KEYS).decode())
    else:
        console.print(profile_table(found, changed_only=changed))


def cabling(
    ctx: typer.Context,
    data: DataOpt = None,
    device: Annotated[str | None, typer.Option(help="Only ports of this switch.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Show the ports whose LLDP neighbour differs from cables.csv (miswired, unexpected,
    missing), as the live workers found them."""
    from railtrace.api.schemas import CablingDifferenceOut, CablingOut
    from railtrace.compose.stores import read
    from railtrace.render import cabling_table

    settings = settings_of(ctx, data)
    query = f"?limit=1000&device={urllib.parse.quote(device)}" if device else "?limit=1000"
    with reported():
        found = read(
            settings,
            lambda store: [
                CablingDifferenceOut.from_record(r)
                for r in store.cabling_differences(device=device, limit=1000, offset=0)
            ],
            lambda get: CablingOut.model_validate(get(f"/v1/topology/cabling{query}")).differences,
        )
    if json_out:
        console.print_json(orjson.dumps([d.model_dump(mode="json") for d in found]).decode())
    else:
        console.print(cabling_table(found))


def nodes(
    ctx: typer.Context,
    data: DataOpt = None,
    quarantined: Annotated[
        bool, typer.Option("--quarantined", help="Only nodes out of service.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """List the GPU nodes that reported Xids, with their quarantine state and why."""
    from railtrace.api.schemas import NodeListOut, NodeOut
    from railtrace.compose.stores import read
    from railtrace.render import node_table

    settings = settings_of(ctx, data)
    query = "?limit=1000&quarantined=true" if quarantined else "?limit=1000"
    with reported():
        found = read(
            settings,
            lambda store: [
                NodeOut.from_record(r)
                for r in store.list_nodes(quarantined=True if quarantined else None, limit=1000)
            ],
            lambda get: NodeListOut.model_validate(get(f"/v1/nodes{query}")).nodes,
        )
    if json_out:
        console.print_json(orjson.dumps([n.model_dump(mode="json") for n in found]).decode())
    else:
        console.print(node_table(found))


def release_node(
    ctx: typer.Context,
    node: Annotated[str, typer.Argument(help="The node's host name, as `railtrace nodes` shows.")],
    by: Annotated[str, typer.Option(help="Who releases it (kept in the node's history).")],
    reason: Annotated[str, typer.Option(help="Why, for the history.")] = "",
    clear: Annotated[
        bool,
        typer.Option(
            "--clear",
            help="Only lift a quarantine that is not for suspected silent data corruption "
            "(a health check passed); without it, any quarantine is lifted.",
        ),
    ] = False,
) -> None:
    """Put a quarantined GPU node back in service: hand the release to the Xid collector that
    quarantined it (run this where `railtrace collect xid` runs, with its settings file)."""
    from railtrace.collectors.hosts import requests

    settings = settings_of(ctx)
    directory = settings.collect.xid.requests_dir
    if directory is None:
        raise fail("collect.xid.requests_dir is not set: the Xid collector takes no requests")
    request = requests.Request("clear" if clear else "release", node, by, reason)
    try:
        path = requests.submit(directory, request)
    except OSError as exc:
        raise fail(f"could not write the request into {directory}: {exc}") from exc
    console.print(
        f"Asked the Xid collector to {request.action} {node} ({path}). It applies it within a "
        "second, or when it next starts; `railtrace nodes` shows the result once stored."
    )
