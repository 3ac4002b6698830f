"""The streaming roles: a worker, a sink (optionally serving the API), and the Slack alerter.
Each ensures its topics, opens what it needs and runs until stopped."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from railtrace.compose import Say, StartError
from railtrace.compose.fabric import alert_topology, load_topology
from railtrace.compose.stores import held_store
from railtrace.gctuning import settle_heap
from railtrace.kafka import ensure_topics
from railtrace.settings import Settings

log = logging.getLogger(__name__)


def run_worker(settings: Settings, topology: Path | None) -> None:
    """Raw topics in; link samples, link events, job facts and verdicts out; `/metrics` and
    `/healthz` on `worker.metrics_listen`."""
    import faust

    from railtrace.probes.endpoint import Endpoint
    from railtrace.probes.service import EndpointService
    from railtrace.worker.processor import Processor

    fabric = load_topology(settings, topology)
    asyncio.run(ensure_topics(settings.kafka))
    processor = Processor(settings, fabric)
    endpoint = Endpoint(settings.worker.metrics_listen, processor.metrics(), processor.health)
    settle_heap()
    faust.Worker(
        processor.app,
        EndpointService(endpoint),
        loglevel=settings.log_level,
        quiet=True,
        override_logging=False,
    ).execute_from_commandline()


def run_sink(
    settings: Settings,
    api: tuple[str, int] | None,
    topology: Path | None,
    say: Say,
) -> None:
    """Write the topics into the store, with `/metrics` and `/healthz` on
    `sink.metrics_listen`; with `api` (host, port), serve the API from the same process, as
    one of the Faust worker's tasks."""
    import faust
    import uvicorn

    from railtrace.compose.api import api_app
    from railtrace.probes.endpoint import Endpoint
    from railtrace.probes.service import EndpointService
    from railtrace.sink.writer import Sink

    asyncio.run(ensure_topics(settings.kafka))
    with held_store(settings) as held:
        sink = Sink(settings, held.store)
        endpoint = Endpoint(settings.sink.metrics_listen, sink.metrics(), sink.health)
        if api is None:
            held.announce()
        else:
            host, port = api
            url = f"http://{host}:{port}"
            app, local_token = api_app(settings, held.store, say, sink, topology)
            server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
            # Faust's worker owns the signals; the API server runs as one of its tasks.
            server.install_signal_handlers = lambda: None  # type: ignore[attr-defined]

            async def serve_api_task() -> None:
                await server.serve()

            sink.app.task(serve_api_task)
            say(f"railtrace API on {url}")
            held.announce(url, local_token)
        faust.Worker(
            sink.app,
            EndpointService(endpoint),
            loglevel=settings.log_level,
            quiet=True,
            override_logging=False,
        ).execute_from_commandline()


def run_alert(settings: Settings) -> dict[str, int]:
    """Slack alerts until SIGTERM or SIGINT; returns the counters, which are also logged."""
    from railtrace.alerts.consumer import run_alerts, unreachable_links

    if settings.alerts.slack_webhook_url is None:
        raise StartError(
            "no Slack webhook configured: set RAILTRACE_ALERTS__SLACK_WEBHOOK_URL "
            "(or slack_webhook_url under \\[alerts] in the config file)"
        )
    for warning in unreachable_links(settings.alerts):
        log.warning(warning)
    fabric = alert_topology(settings, log.warning)
    asyncio.run(ensure_topics(settings.kafka))
    return run_alerts(settings, None if fabric is None else fabric.role)
