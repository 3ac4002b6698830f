"""The HTTP API as `serve` and `sink --serve` run it: the app over a store, and the owner file
that lets this machine's CLI read a held embedded store through it."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from railtrace.api.app import create_app
from railtrace.api.joblinks import JobLinks
from railtrace.api.tokens import TokenBook, TokenFileError
from railtrace.compose import Say, StartError
from railtrace.compose.fabric import api_topology
from railtrace.compose.stores import held_store
from railtrace.settings import Settings
from railtrace.store import Store

if TYPE_CHECKING:
    from fastapi import FastAPI

    from railtrace.api.metrics import SinkFigures

log = logging.getLogger(__name__)


def api_app(
    settings: Settings,
    store: Store,
    say: Say,
    sink: SinkFigures | None = None,
    topology: Path | None = None,
) -> tuple[FastAPI, str]:
    """The API app and a read token for this machine's CLI, which the owner file hands over
    so `railtrace verdict` can read through a running API without a token of its own."""
    book = TokenBook(settings.api.tokens_file)
    try:
        if book.empty():
            say(
                f"no API tokens in {settings.api.tokens_file} yet: create one with "
                "`railtrace token create --name <who>`; until then only this machine's "
                "railtrace commands can read the API"
            )
    except TokenFileError as exc:
        raise StartError(str(exc)) from exc
    app = create_app(
        store,
        book,
        sink=sink,
        fabric=api_topology(settings, topology, say),
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


def serve(settings: Settings, host: str, port: int, topology: Path | None, say: Say) -> None:
    """Serve the API over the store until SIGTERM or Ctrl-C."""
    import uvicorn

    with held_store(settings) as held:
        url = f"http://{host}:{port}"
        app, local_token = api_app(settings, held.store, say, topology=topology)
        held.announce(url, local_token)
        say(f"railtrace API on {url}  (incidents: {url}/incidents, reference: {url}/docs)")
        # uvicorn re-raises SIGTERM after its own shutdown, which would skip the cleanup of
        # `held_store`; turning it into SystemExit lets the owner file go and the store close.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        uvicorn.run(app, host=host, port=port, log_level="warning")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
