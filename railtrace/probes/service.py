"""The endpoint of a faust-streaming role (the worker, the sink) as a mode Service.

Handed to `faust.Worker` beside the app, it starts before the app and stops with it: an app
task would start only once the tables are recovered, and a worker recovering a long changelog
would answer no probe meanwhile. A listen address already in use fails the start.
"""

from __future__ import annotations

from mode import Service

from railtrace.probes.endpoint import Endpoint


class EndpointService(Service):
    """Serves `endpoint` for as long as the service runs."""

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__()
        self.endpoint = endpoint

    async def on_start(self) -> None:
        await self.endpoint.start()

    async def on_stop(self) -> None:
        await self.endpoint.stop()
