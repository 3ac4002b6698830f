"""railtrace's HTTP API: the verdicts of the store, read-only, for engineers and dashboards.

`create_app(store)` builds the app around an open store; the process that owns the store (the
CLI's `serve`) runs it, and other processes read through it.
"""

from railtrace.api.app import create_app

__all__ = ["create_app"]
