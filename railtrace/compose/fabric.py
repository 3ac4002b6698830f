"""Which fabric a role attributes on or draws: one loader for the worker, the API and the
alerter, so that a folder one of them accepts the others accept too."""

from __future__ import annotations

from pathlib import Path

from railtrace.compose import Say, StartError
from railtrace.replay import CaptureError, open_capture
from railtrace.replay.plan import kept_plan
from railtrace.settings import Settings
from railtrace.topology.fabric import Fabric


def load_topology(settings: Settings, topology: Path | None) -> Fabric:
    """The fabric of `topology`, else of `worker.topology_dir`; the worker cannot start without."""
    where = topology or settings.worker.topology_dir
    if where is None:
        raise StartError("no topology: pass --topology DIR (a folder with cables.csv, hosts.csv)")
    try:
        return open_capture(where, settings.site.gpu_nics).fabric
    except CaptureError as exc:
        raise StartError(str(exc)) from exc


def api_topology(settings: Settings, topology: Path | None, say: Say) -> Fabric | None:
    """The fabric the API draws and routes on: `topology`, else `api.topology_dir`, else
    `worker.topology_dir`, else the plan the last replay into the embedded store kept there.
    A bad one stops the start; none is said once, since the fabric, counter and link pages
    then answer 503."""
    where = topology or settings.api.topology_dir or settings.worker.topology_dir
    if where is None and not settings.store.clickhouse_url:
        where = kept_plan(settings.store.data_dir)
    if where is None:
        say(
            "no topology: the fabric drawing, counters and link pages will answer 503; pass "
            "--topology DIR (a folder with cables.csv, such as the capture) or set "
            "api.topology_dir"
        )
        return None
    say(f"fabric from {where}")
    return load_topology(settings, where)


def alert_topology(settings: Settings, say: Say) -> Fabric | None:
    """The fabric of `api.topology_dir` (else `worker.topology_dir`), which tells the alerter
    hosts from switches for a link verdict's next steps. Alerts go out without it: a topology
    that does not load is said, not fatal."""
    where = settings.api.topology_dir or settings.worker.topology_dir
    if where is None:
        return None
    try:
        return load_topology(settings, where)
    except StartError as exc:
        say(f"topology not loaded: link alerts carry no next steps ({exc.message})")
        return None
