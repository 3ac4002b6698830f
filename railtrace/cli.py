"""`railtrace`: the command line, and the one place where every component is wired together.

Each command builds its settings, opens what it needs, and hands those to the core or the
adapters; none of them holds logic of its own beyond presenting results.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
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

from railtrace import __version__
from railtrace.gctuning import settle_heap
from railtrace.logconfig import configure
from railtrace.private import UMASK
from railtrace.settings import Settings, load_settings
from railtrace.simulate.scenario import Fault
from railtrace.streams.records import JobState

if TYPE_CHECKING:
    from fastapi import FastAPI

    from railtrace.api.joblinks import JobLinks
    from railtrace.api.metrics import SinkFigures
    from railtrace.store import Store
    from railtrace.topology.fabric import Fabric

app = typer.Typer(
    name="railtrace",
    help="Which fabric link stalled job X? railtrace reads switch telemetry and NCCL/PyTorch "
    "logs, places every job on the rail fabric, and names the link (or node) that stalled it, "
    "with the evidence.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)
console = Console()
err = Console(stderr=True)
log = logging.getLogger(__name__)


DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Data directory of the embedded store (default: from settings)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _settings(ctx: typer.Context, data: Path | None = None) -> Settings:
    settings: Settings = ctx.obj
    if data is not None:
        settings = settings.model_copy(
            update={"store": settings.store.model_copy(update={"data_dir": data})}
        )
    return settings


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


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
        raise _fail(f"bad settings: {exc}") from exc
    configure(log_level, log_json or settings.log_json)
    ctx.obj = settings


@contextmanager
def _progress():  # type: ignore[no-untyped-def]
    with Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        yield bar


@app.command()
def simulate(
    out_dir: Annotated[Path, typer.Argument(help="Where to write the capture.")],
    nodes: Annotated[int, typer.Option(min=2, help="Cluster size (8-GPU nodes).")] = 64,
    fault: Annotated[Fault, typer.Option(help="What goes wrong.")] = Fault.LINK_DOWN,
    seed: Annotated[int, typer.Option(help="One seed names one incident.")] = 1,
    watchdog: Annotated[int, typer.Option(min=10, help="PyTorch NCCL timeout, seconds.")] = 600,
    sample_interval: Annotated[int, typer.Option(min=1, help="gNMI sample interval, s.")] = 10,
) -> None:
    """Simulate an incident on a rail-optimized cluster and write it as a capture directory
    (cables.csv, hosts.csv, gnmi/, logs/) plus its ground truth in truth.json."""
    truth = _simulate(out_dir, nodes, fault, seed, watchdog, sample_interval)
    console.print(f"Wrote capture to {out_dir} ({truth['nodes']} nodes, fault {truth['fault']}).")


def _simulate(
    out_dir: Path, nodes: int, fault: Fault, seed: int, watchdog: int, sample: int
) -> dict[str, object]:
    from railtrace.simulate import write_capture

    with _progress() as bar:
        task = bar.add_task("simulate", total=None)
        truth = write_capture(
            out_dir,
            nodes,
            fault,
            seed,
            watchdog_s=watchdog,
            sample_s=sample,
            progress=lambda n: bar.advance(task, n),
        )
    return truth


def _open_owned(settings: Settings) -> Store:
    """Open the store this process will write to (and hold, for chDB), schema applied.

    The embedded store migrates itself: it is this machine's own. A ClickHouse server's
    schema is changed only by `railtrace db migrate`, so the sink and the API can run as a
    user without CREATE, and several of them never race to apply the same migration."""
    from railtrace.store import StoreLockedError, open_store

    try:
        store = open_store(settings.store)
    except StoreLockedError as exc:
        raise _fail(str(exc)) from exc
    if not settings.store.clickhouse_url:
        store.migrate()
        return store
    pending = [m for m in store.migration_status() if m.applied_at is None]
    if pending:
        store.close()
        raise _fail(
            f"the ClickHouse database {settings.store.database!r} lacks {len(pending)} schema "
            f"migration(s) (first: {pending[0].version} {pending[0].name}); run "
            "`railtrace db migrate` with a user that may CREATE, then start this again"
        )
    return store


def _replay_into(settings: Settings, capture_dir: Path) -> object:
    from railtrace.render import STORED_TABLES, replay_summary
    from railtrace.replay import CaptureError, marker, open_capture, replay, warnings
    from railtrace.replay.plan import keep_plan

    try:
        capture = open_capture(capture_dir, settings.site.gpu_nics)
    except CaptureError as exc:
        raise _fail(str(exc)) from exc
    store = _open_owned(settings)
    embedded = not settings.store.clickhouse_url
    settle_heap()
    try:
        if embedded:  # until the last write: `jobs` tells a killed replay from an empty one
            marker.begin(settings.store.data_dir, capture_dir)
        before = {t: store.count(t) for t in STORED_TABLES}
        with _progress() as bar:
            tasks: dict[str, TaskID] = {}

            def tick(stage: str, n: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.advance(tasks[stage], n)

            report = replay(
                capture,
                store,
                profile=settings.attribution,
                local=settings.site.zone,
                batch_rows=settings.store.batch_rows,
                progress=tick,
                quarantine=settings.collect.xid.policy,
            )
        # What the store holds now, not what was sent: rows it already had collapse into them.
        stored = {t: store.count(t) - before[t] for t in STORED_TABLES}
    finally:
        store.close()
    if embedded:
        keep_plan(capture.root, settings.store.data_dir)  # what `serve` draws the fabric from
        marker.finish(settings.store.data_dir)
    replay_summary(err, report, stored, warnings(report, time.time_ns()))
    return report


@app.command("replay")
def replay_cmd(
    ctx: typer.Context,
    capture_dir: Annotated[
        Path, typer.Argument(help="Capture directory (cables.csv, gnmi/, logs/).")
    ],
    data: DataOpt = None,
    json_out: JsonOpt = False,
    to_kafka: Annotated[
        bool,
        typer.Option(
            "--kafka",
            help="Publish the capture onto the raw Kafka topics (original timestamps kept) "
            "for the streaming workers, instead of replaying it here.",
        ),
    ] = False,
) -> None:
    """Replay a capture through the attribution in event time and store the results."""
    from railtrace.render import verdict_table
    from railtrace.replay import ReplayReport

    settings = _settings(ctx, data)
    if to_kafka:
        _publish(settings, capture_dir)
        return
    report = _replay_into(settings, capture_dir)
    assert isinstance(report, ReplayReport)
    if json_out:
        from railtrace.api.schemas import VerdictOut

        docs = [VerdictOut.from_record(v).model_dump(mode="json") for v in report.verdicts]
        console.print_json(orjson.dumps(docs).decode())
    else:
        console.print(verdict_table(report.verdicts))
        console.print(
            f"Stored in {settings.store.data_dir}. "
            f"Ask: railtrace verdict JOB_ID --data {settings.store.data_dir}"
        )


def _open_for_reading(settings: Settings) -> Store | None:
    """The store, or None when another process holds it (read through its API then)."""
    from railtrace.store import StoreError, StoreLockedError, open_store

    if not settings.store.clickhouse_url and not settings.store.data_dir.is_dir():
        raise _fail(f"no data directory {settings.store.data_dir}; run `railtrace replay` first")
    try:
        store = open_store(settings.store)
    except StoreLockedError:
        return None
    try:
        store.ping()
    except StoreError as exc:
        store.close()
        raise _fail(
            f"{settings.store.data_dir} holds no railtrace data ({exc}); run `railtrace replay`"
        ) from exc
    return store


def _quoted(part: str) -> str:
    """One path segment of an API URL: a job id holds no `/`, `?` or `#` by its grammar, but
    one read from an older store may, and must not change which route is asked."""
    return urllib.parse.quote(part, safe="")


def _unfinished_replay(settings: Settings) -> bool:
    """Say so on stderr when the last replay into this directory stopped half way."""
    from railtrace.replay import marker

    if settings.store.clickhouse_url:
        return False
    found = marker.unfinished(settings.store.data_dir)
    if found is not None:
        err.print(f"[bold yellow]Warning:[/] {found.describe(settings.store.data_dir)}")
    return found is not None


def _through_owner(settings: Settings, path: str) -> object:
    """Read from the process that holds the chDB directory, through its API."""
    from railtrace.store import read_owner

    owner = read_owner(settings.store.data_dir)
    if owner is None or owner.api_url is None:
        raise _fail(
            f"{settings.store.data_dir} is held by another process that serves no API; "
            "wait for it to finish or start `railtrace serve` on it"
        )
    request = urllib.request.Request(owner.api_url.rstrip("/") + path, headers=owner.auth_headers())
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = orjson.loads(exc.read() or b"{}").get("detail", str(exc))
        except (orjson.JSONDecodeError, AttributeError):
            detail = str(exc)
        raise _fail(str(detail), 2 if exc.code == 404 else 1) from exc
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise _fail(
            f"the API of the owning process at {owner.api_url} did not answer: {exc}"
        ) from exc


def _publish(settings: Settings, capture_dir: Path) -> None:
    from railtrace.replay import CaptureError, open_capture
    from railtrace.replay.publish import publish_capture

    try:
        capture = open_capture(capture_dir, settings.site.gpu_nics)
    except CaptureError as exc:
        raise _fail(str(exc)) from exc
    with _progress() as bar:
        task = bar.add_task("publish", total=len(capture.gnmi_files) + capture.log_file_count)
        try:
            done = publish_capture(
                capture, settings.kafka, lambda n: bar.advance(task, n), settings.site.timezone
            )
            bar.update(task, completed=len(capture.gnmi_files) + capture.log_file_count)
        except Exception as exc:  # broker down, auth refused: say so, not a traceback
            raise _fail(
                f"could not publish to Kafka at {settings.kafka.bootstrap_servers}: {exc}"
            ) from exc
    console.print(
        f"Published {done.gnmi_messages:,} gNMI messages, {done.log_lines:,} log lines "
        f"({done.log_messages:,} messages) and {done.scheduler_records:,} scheduler records "
        f"to {settings.kafka.bootstrap_servers} "
        f"(topic prefix {settings.kafka.topic_prefix!r})."
    )


def _load_topology(settings: Settings, topology: Path | None) -> Fabric:
    from railtrace.replay import CaptureError, open_capture

    where = topology or settings.worker.topology_dir
    if where is None:
        raise _fail("no topology: pass --topology DIR (a folder with cables.csv, hosts.csv)")
    try:
        return open_capture(where, settings.site.gpu_nics).fabric
    except CaptureError as exc:
        raise _fail(str(exc)) from exc


def _api_topology(settings: Settings, topology: Path | None) -> Fabric | None:
    """The fabric the API draws and routes on: `--topology`, else the settings' folder, else
    the plan the last replay into the embedded store kept there. A bad one stops the start;
    none is said once, since the fabric, counter and link pages then answer 503."""
    from railtrace.replay.plan import kept_plan

    where = topology or settings.api.topology_dir or settings.worker.topology_dir
    if where is None and not settings.store.clickhouse_url:
        where = kept_plan(settings.store.data_dir)
    if where is None:
        err.print(
            "[yellow]no topology:[/] the fabric drawing, counters and link pages will answer "
            "503; pass --topology DIR (a folder with cables.csv, such as the capture) or set "
            "api.topology_dir"
        )
        return None
    err.print(f"fabric from {where}")
    return _load_topology(settings, where)


def _api_app(
    settings: Settings,
    store: Store,
    sink: SinkFigures | None = None,
    topology: Path | None = None,
) -> tuple[FastAPI, str]:
    """The API app and a read token for this machine's CLI, which the owner file hands over
    so `railtrace verdict` can read through a running API without a token of its own."""
    from railtrace.api.app import create_app
    from railtrace.api.tokens import TokenBook, TokenFileError

    book = TokenBook(settings.api.tokens_file)
    try:
        if book.empty():
            err.print(
                f"[yellow]no API tokens in {settings.api.tokens_file} yet:[/] create one with "
                "`railtrace token create --name <who>`; until then only this machine's "
                "railtrace commands can read the API"
            )
    except TokenFileError as exc:
        raise _fail(str(exc)) from exc
    app = create_app(
        store,
        book,
        sink=sink,
        fabric=_api_topology(settings, topology),
        cors_origins=settings.api.cors_origins,
        profile=settings.attribution,
    )
    if app.state.job_links is not None:
        threading.Thread(
            target=_warm_job_links, args=(app.state.job_links, store), daemon=True
        ).start()
    return app, book.issue_local("railtrace CLI on this machine")


def _warm_job_links(job_links: JobLinks, store: Store) -> None:
    """Fill the blast-radius cache while the API starts; a failure only means a slower first
    link page, so it is logged, not raised."""
    try:
        jobs = job_links.warm(store)
    except Exception as exc:  # the store may be empty, closing, or not migrated yet
        log.warning("blast-radius cache not warmed", extra={"reason": str(exc)})
    else:
        log.info("blast-radius cache warmed", extra={"jobs": jobs})


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


@app.command()
def worker(ctx: typer.Context, topology: TopologyOpt = None) -> None:
    """Run a streaming worker: raw topics in; link samples, link events, job facts and
    verdicts out. Start as many as there are partitions to share; they balance by themselves."""
    import asyncio

    import faust

    from railtrace.streams.worker.kafka import ensure_topics
    from railtrace.streams.worker.processor import Processor

    settings: Settings = ctx.obj
    fabric = _load_topology(settings, topology)
    asyncio.run(ensure_topics(settings.kafka))
    processor = Processor(settings, fabric)
    settle_heap()
    faust.Worker(
        processor.app, loglevel=settings.log_level, quiet=True, override_logging=False
    ).execute_from_commandline()


@app.command()
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
    import asyncio

    import faust
    import uvicorn

    from railtrace.store import remove_owner, write_owner
    from railtrace.streams.worker.kafka import ensure_topics
    from railtrace.streams.worker.sink import Sink

    settings = _settings(ctx, data)
    asyncio.run(ensure_topics(settings.kafka))
    store = _open_owned(settings)
    sink_app = Sink(settings, store)
    embedded = not settings.store.clickhouse_url
    if serve_api:
        bind_host = settings.api.host if host is None else host
        bind_port = settings.api.port if port is None else port
        url = f"http://{bind_host}:{bind_port}"
        api, local_token = _api_app(settings, store, sink_app, topology)
        config = uvicorn.Config(
            api,
            host=bind_host,
            port=bind_port,
            log_level="warning",
        )
        server = uvicorn.Server(config)
        # Faust's worker owns the signals; the API server runs as one of its tasks.
        server.install_signal_handlers = lambda: None  # type: ignore[attr-defined]

        async def serve_api_task() -> None:
            await server.serve()

        sink_app.app.task(serve_api_task)

        err.print(f"railtrace API on {url}")
        if embedded:
            write_owner(settings.store.data_dir, url, local_token)
    elif embedded:
        write_owner(settings.store.data_dir, None)
    try:
        faust.Worker(
            sink_app.app, loglevel=settings.log_level, quiet=True, override_logging=False
        ).execute_from_commandline()
    finally:
        if embedded:
            remove_owner(settings.store.data_dir)
        store.close()


@app.command()
def alert(ctx: typer.Context) -> None:
    """Send Slack alerts for new verdicts, node quarantines, link flap storms and cabling
    differences until stopped (deploy/alerts/README.md)."""
    settings: Settings = ctx.obj
    if settings.alerts.slack_webhook_url is None:
        raise _fail(
            "no Slack webhook configured: set RAILTRACE_ALERTS__SLACK_WEBHOOK_URL "
            "(or slack_webhook_url under \\[alerts] in the config file)"
        )
    import asyncio

    from railtrace.alerts.consumer import run_alerts, unreachable_links
    from railtrace.streams.worker.kafka import ensure_topics

    for warning in unreachable_links(settings.alerts):
        log.warning(warning)
    asyncio.run(ensure_topics(settings.kafka))
    run_alerts(settings)


@app.command()
def verdict(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(help="The job id (the logs/<job_id>/ folder name).")],
    data: DataOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Which link stalled JOB_ID: the verdict, its candidates and the evidence."""
    from railtrace.api.schemas import VerdictOut
    from railtrace.render import print_verdict
    from railtrace.streams.records import Verdict, valid_job_id

    settings = _settings(ctx, data)
    if not valid_job_id(job_id):
        raise _fail(
            f"no job {job_id!r}: a job id is letters, digits and ._:@+- (at most 128); "
            "`railtrace jobs` lists them",
            2,
        )
    store = _open_for_reading(settings)
    found: Verdict | None
    if store is None:
        found = VerdictOut.model_validate(
            _through_owner(settings, f"/v1/jobs/{_quoted(job_id)}/verdict")
        ).to_record()
    else:
        try:
            found = store.get_verdict(job_id)
        finally:
            store.close()
    if found is None:
        _unfinished_replay(settings)
        raise _fail(
            f"no job {job_id!r} in {settings.store.data_dir}; `railtrace jobs` lists them", 2
        )
    if json_out:
        console.print_json(VerdictOut.from_record(found).model_dump_json())
    else:
        print_verdict(console, found)


@app.command()
def jobs(
    ctx: typer.Context,
    data: DataOpt = None,
    state: Annotated[JobState | None, typer.Option(help="Only jobs in this state.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the jobs in the store with their current verdicts."""
    from railtrace.api.schemas import JobListOut, VerdictOut
    from railtrace.render import verdict_table

    settings = _settings(ctx, data)
    store = _open_for_reading(settings)
    if store is None:
        query = f"?state={state.value}&limit=1000" if state else "?limit=1000"
        listing = JobListOut.model_validate(_through_owner(settings, f"/v1/jobs{query}"))
        found = [
            VerdictOut.model_validate(
                _through_owner(settings, f"/v1/jobs/{_quoted(row.job_id)}/verdict")
            ).to_record()
            for row in listing.jobs
        ]
    else:
        try:
            rows = store.list_jobs(state, limit=1000, offset=0)
            found = [v for r in rows if (v := store.get_verdict(r.job_id)) is not None]
        finally:
            store.close()
    if json_out:
        docs = [VerdictOut.from_record(v).model_dump(mode="json") for v in found]
        console.print_json(orjson.dumps(docs).decode())
    else:
        console.print(verdict_table(found))
    if _unfinished_replay(settings):
        raise typer.Exit(1)


@app.command()
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

    found = entries(_settings(ctx).attribution)
    if markdown:
        console.print(profile_markdown(found), soft_wrap=True, markup=False, highlight=False)
    elif json_out:
        rows = [{"setting": e.key, "value": e.value, "default": e.default} for e in found]
        console.print_json(orjson.dumps(rows, option=orjson.OPT_NON_STR_KEYS).decode())
    else:
        console.print(profile_table(found, changed_only=changed))


@app.command()
def cabling(
    ctx: typer.Context,
    data: DataOpt = None,
    device: Annotated[str | None, typer.Option(help="Only ports of this switch.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Show the ports whose LLDP neighbour differs from cables.csv (miswired, unexpected,
    missing), as the live workers found them."""
    from railtrace.api.schemas import CablingDifferenceOut, CablingOut
    from railtrace.render import cabling_table

    settings = _settings(ctx, data)
    store = _open_for_reading(settings)
    if store is None:
        query = f"?limit=1000&device={urllib.parse.quote(device)}" if device else "?limit=1000"
        found = CablingOut.model_validate(
            _through_owner(settings, f"/v1/topology/cabling{query}")
        ).differences
    else:
        try:
            rows = store.cabling_differences(device=device, limit=1000, offset=0)
            found = [CablingDifferenceOut.from_record(r) for r in rows]
        finally:
            store.close()
    if json_out:
        console.print_json(orjson.dumps([d.model_dump(mode="json") for d in found]).decode())
    else:
        console.print(cabling_table(found))


@app.command()
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
    from railtrace.render import node_table

    settings = _settings(ctx, data)
    store = _open_for_reading(settings)
    if store is None:
        query = "?limit=1000&quarantined=true" if quarantined else "?limit=1000"
        found = NodeListOut.model_validate(_through_owner(settings, f"/v1/nodes{query}")).nodes
    else:
        try:
            rows = store.list_nodes(quarantined=True if quarantined else None, limit=1000)
            found = [NodeOut.from_record(r) for r in rows]
        finally:
            store.close()
    if json_out:
        console.print_json(orjson.dumps([n.model_dump(mode="json") for n in found]).decode())
    else:
        console.print(node_table(found))


@app.command("release-node")
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

    settings = _settings(ctx)
    directory = settings.collect.xid.requests_dir
    if directory is None:
        raise _fail("collect.xid.requests_dir is not set: the Xid collector takes no requests")
    request = requests.Request("clear" if clear else "release", node, by, reason)
    try:
        path = requests.submit(directory, request)
    except OSError as exc:
        raise _fail(f"could not write the request into {directory}: {exc}") from exc
    console.print(
        f"Asked the Xid collector to {request.action} {node} ({path}). It applies it within a "
        "second, or when it next starts; `railtrace nodes` shows the result once stored."
    )


@app.command()
def serve(
    ctx: typer.Context,
    data: DataOpt = None,
    host: Annotated[str | None, typer.Option(help="Listen address (default: api.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Listen port (default: api.port).")] = None,
    topology: ApiTopologyOpt = None,
) -> None:
    """Serve the HTTP API (verdicts, links, topology, nodes; bearer tokens from `railtrace
    token create`) and the incident pages (/incidents) over the store."""
    import uvicorn

    from railtrace.store import remove_owner, write_owner

    settings = _settings(ctx, data)
    bind_host = settings.api.host if host is None else host
    bind_port = settings.api.port if port is None else port
    store = _open_owned(settings)
    try:
        url = f"http://{bind_host}:{bind_port}"
        app, local_token = _api_app(settings, store, topology=topology)
        if not settings.store.clickhouse_url:
            write_owner(settings.store.data_dir, url, local_token)
        err.print(f"railtrace API on {url}  (incidents: {url}/incidents, reference: {url}/docs)")
        # uvicorn re-raises SIGTERM after its own shutdown, which would skip the cleanup below;
        # turning it into SystemExit lets the owner file be removed and the store closed.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        uvicorn.run(app, host=bind_host, port=bind_port, log_level="warning")
    finally:
        if not settings.store.clickhouse_url:
            remove_owner(settings.store.data_dir)
        store.close()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


DEMO_MARK = ".railtrace-demo"


@app.command()
def demo(
    ctx: typer.Context,
    workdir: Annotated[Path, typer.Option(help="Where the demo writes its capture and store.")] = (
        Path("railtrace-demo")
    ),
    nodes: Annotated[int, typer.Option(min=2)] = 64,
    fault: Annotated[Fault, typer.Option(help="What goes wrong.")] = Fault.LINK_DOWN,
    seed: Annotated[int, typer.Option()] = 7,
) -> None:
    """Simulate a 64-node cluster with a fault, replay it, and show which link stalled which job."""
    from railtrace.render import verdict_table
    from railtrace.replay import ReplayReport
    from railtrace.store.owner import holder

    if workdir.exists() and any(workdir.iterdir()) and not (workdir / DEMO_MARK).exists():
        raise _fail(f"{workdir} exists and is not a railtrace demo directory; pick --workdir")
    held = holder(workdir / "data")
    if held is not None:
        raise _fail(
            f"{workdir / 'data'} is in use by {held}: a new demo would delete the store under "
            "it. Stop that process first (Ctrl-C in its shell), or pick another --workdir"
        )
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / DEMO_MARK).touch()
    capture, data = workdir / "capture", workdir / "data"
    console.rule(f"railtrace demo: {nodes} nodes, fault {fault}, seed {seed}")
    truth = _simulate(capture, nodes, fault, seed, 600, 10)
    settings = _settings(ctx, data)
    report = _replay_into(settings, capture)
    assert isinstance(report, ReplayReport)
    console.print(verdict_table(report.verdicts))
    _say_truth(truth)
    stalled = [v.job_id for v in report.verdicts if v.state == "stalled"]
    job = stalled[0] if stalled else (report.verdicts[0].job_id if report.verdicts else "JOB")
    me = _self_command()
    console.print(
        "\nNext:\n"
        f"  {me} verdict {job} --data {data}    # the evidence, in the terminal\n"
        f"  {me} serve --data {data}            # then, in another shell:\n"
        f"  TOKEN=$({me} token create --name $USER --quiet)\n"
        f'  curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8000/v1/jobs/{job}/verdict\n'
        f"  and open http://127.0.0.1:8000/incidents/{job} in a browser (it asks for the token)",
        soft_wrap=True,
    )


def _self_command() -> str:
    """How the user can run railtrace again: bare when it is on PATH, else the script path."""
    argv0 = Path(sys.argv[0])
    on_path = shutil.which("railtrace")
    if on_path and argv0.name == "railtrace" and Path(on_path).resolve() == argv0.resolve():
        return "railtrace"
    if argv0.name == "railtrace":
        try:
            return str(argv0.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(argv0)
    return "railtrace"


def _say_truth(truth: dict[str, Any]) -> None:
    """What the simulator did, per job it struck, to compare with the verdicts above."""
    struck = [(j, t) for j, t in sorted(truth["jobs"].items()) if t["state"] != "healthy"]
    if not struck:
        console.print("Simulated fault: none (only unrelated anomalies on idle links)")
    for job, t in struck:
        if t.get("link"):
            where = f"link {t['link']['id']}"
        elif t.get("node"):
            where = f"node {t['node']}"
        else:
            where = "nothing in the fabric (the right verdict names no link)"
        side = f", side {t['diagnosis']}" if t.get("diagnosis") else ""
        console.print(f"Simulated: job {job} {t['state']} by {t['fault']} on {where}{side}")


token_app = typer.Typer(
    help="Bearer tokens for the HTTP API: every route but /healthz and /readyz needs one. "
    "Kept hashed in api.tokens_file; the API notices changes without a restart.",
    no_args_is_help=True,
)
app.add_typer(token_app, name="token")


class TokenScope(StrEnum):
    read = "read"
    admin = "admin"


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Who or what uses it: a person, Grafana, a script.")],
    scope: Annotated[
        list[TokenScope],
        typer.Option(help="read: every GET route. admin: also list and revoke tokens."),
    ] = [TokenScope.read],  # noqa: B006 - typer reads the default, nobody mutates it
    expires_days: Annotated[
        int | None, typer.Option(min=1, max=3650, help="Days until it stops working.")
    ] = None,
    quiet: Annotated[bool, typer.Option(help="Print only the token, for scripts.")] = False,
) -> None:
    """Create a token and print it; it is shown this once and stored only as a hash."""
    from datetime import timedelta

    from railtrace.api.tokens import Scope, TokenBook, TokenFileError

    settings: Settings = ctx.obj
    book = TokenBook(settings.api.tokens_file)
    expires = None if expires_days is None else timedelta(days=expires_days)
    try:
        token, info = book.issue(name, {Scope(s.value) for s in scope}, expires)
    except (TokenFileError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if quiet:
        print(token)
        return
    until = "never expires" if info.expires_at is None else f"expires {info.expires_at:%Y-%m-%d}"
    err.print(
        f"token {info.token_id} for {info.name!r}: {', '.join(sorted(info.scopes))}, {until}.\n"
        f"Kept hashed in {settings.api.tokens_file}; copy it now, it is not shown again:"
    )
    print(token)


@token_app.command("list")
def token_list(ctx: typer.Context) -> None:
    """The tokens in api.tokens_file: id, name, scopes, dates (never the secrets)."""
    from rich.table import Table

    from railtrace.api.tokens import TokenBook, TokenFileError

    settings: Settings = ctx.obj
    try:
        tokens = TokenBook(settings.api.tokens_file).tokens()
    except TokenFileError as exc:
        raise _fail(str(exc)) from exc
    if not tokens:
        err.print(f"no tokens in {settings.api.tokens_file}; `railtrace token create` makes one")
        return
    table = Table("id", "name", "scopes", "created", "expires")
    for t in tokens:
        expires = "never" if t.expires_at is None else f"{t.expires_at:%Y-%m-%d %H:%M}"
        table.add_row(
            t.token_id,
            t.name,
            ",".join(sorted(t.scopes)),
            f"{t.created_at:%Y-%m-%d %H:%M}",
            expires,
        )
    console.print(table)


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context, token_id: Annotated[str, typer.Argument(help="The id `token list` shows.")]
) -> None:
    """Revoke a token; every API reading the same file refuses it from its next request."""
    from railtrace.api.tokens import TokenBook, TokenFileError

    settings: Settings = ctx.obj
    try:
        gone = TokenBook(settings.api.tokens_file).revoke(token_id)
    except TokenFileError as exc:
        raise _fail(str(exc)) from exc
    if gone is None:
        raise _fail(
            f"no token '{token_id}' in {settings.api.tokens_file}; see `railtrace token list`", 2
        )
    console.print(f"revoked token {gone.token_id} ({gone.name})")


db_app = typer.Typer(
    help="The store's schema: versioned migrations, applied to embedded chDB (--data) or to the "
    "ClickHouse server of store.clickhouse_url.",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")


def _open_for_schema(settings: Settings) -> Store:
    from railtrace.store import StoreError, StoreLockedError, open_store

    try:
        return open_store(settings.store)
    except StoreLockedError as exc:
        raise _fail(str(exc)) from exc
    except StoreError as exc:
        raise _fail(f"cannot open the store: {exc}") from exc


@db_app.command("migrate")
def db_migrate(ctx: typer.Context, data: DataOpt = None) -> None:
    """Apply the schema migrations the store lacks (safe to run again: applies nothing)."""
    settings = _settings(ctx, data)
    store = _open_for_schema(settings)
    try:
        applied = store.migrate()
    finally:
        store.close()
    if not applied:
        console.print("The schema is up to date; nothing to apply.")
    for m in applied:
        console.print(f"applied {m.version:>4}  {m.name}")


@db_app.command("status")
def db_status(ctx: typer.Context, data: DataOpt = None) -> None:
    """List the schema migrations and which the store has; exits 3 while some are pending."""
    settings = _settings(ctx, data)
    if not settings.store.clickhouse_url and not settings.store.data_dir.is_dir():
        raise _fail(f"no data directory {settings.store.data_dir}; run `railtrace db migrate`")
    store = _open_for_schema(settings)
    try:
        found = store.migration_status()
    finally:
        store.close()
    for st in found:
        when = f"applied {st.applied_at} UTC" if st.applied_at else "[yellow]pending[/]"
        console.print(f"{st.version:>4}  {st.name:<55} {when}")
    if any(st.applied_at is None for st in found):
        raise typer.Exit(3)


collect_app = typer.Typer(
    help="Gather inputs onto the raw Kafka topics: one collector role per process, configured "
    "in the `collect` section of the settings file (--config); a disk spool covers broker "
    "outages.",
    no_args_is_help=True,
)
app.add_typer(collect_app, name="collect")


def _run_collector(ctx: typer.Context, role: str) -> None:
    from railtrace.collectors import run
    from railtrace.collectors.errors import CollectorFailedError

    settings: Settings = ctx.obj
    try:
        run.run(settings, role)
    except (OSError, ValueError, CollectorFailedError) as exc:
        raise _fail(f"collect {role}: {exc}") from exc


@collect_app.command("gnmi")
def collect_gnmi(ctx: typer.Context) -> None:
    """Subscribe to every switch of `collect.gnmi` (gNMI dial-in, SAMPLE and ON_CHANGE)."""
    _run_collector(ctx, "gnmi")


@collect_app.command("snmp")
def collect_snmp(ctx: typer.Context) -> None:
    """Poll the `collect.snmp` targets (GETBULK, v2c/v3) and receive linkDown/linkUp traps."""
    _run_collector(ctx, "snmp")


@collect_app.command("logs")
def collect_logs(ctx: typer.Context) -> None:
    """Follow this host's NCCL/PyTorch log files (`collect.logs.paths`), through rotation."""
    _run_collector(ctx, "logs")


@collect_app.command("xid")
def collect_xid(ctx: typer.Context) -> None:
    """Watch this host's kernel log for GPU Xid errors and apply the quarantine policy."""
    _run_collector(ctx, "xid")


@collect_app.command("ufm")
def collect_ufm(ctx: typer.Context) -> None:
    """Poll the `collect.ufm` UFM Telemetry endpoints (InfiniBand counters over HTTP)."""
    _run_collector(ctx, "ufm")


@collect_app.command("scheduler")
def collect_scheduler(ctx: typer.Context) -> None:
    """Poll Slurm (`scontrol show job -d`, or `squeue --json`) and publish where each job
    runs, when it starts, changes and ends (`collect.scheduler`)."""
    _run_collector(ctx, "scheduler")


def main() -> None:
    # Before anything is created: what libraries write inside railtrace's (0700) directories,
    # chDB's parts among them, is then private too (railtrace.private).
    os.umask(UMASK)
    app()
