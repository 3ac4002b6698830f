"""Where a flow's bytes go: the cables each switch forwards it on, by the world's routing.

Written from how the switches decide, not from railtrace's path model: at every switch with
several equal-cost next hops,

- `ecmp` hashes the flow's 5-tuple (RoCEv2: the NICs' addresses, UDP port 4791 and the source
  port the NIC derives from the queue pair) with a CRC, salted per switch, so the spread is
  uneven; `ecmp-polarised` uses one salt everywhere, so spines re-pick what leaves picked;
- `spray` sends every packet of every flow over every next hop in equal shares (adaptive
  routing), so a flow crosses all its leaf's uplinks;
- `ib` follows the subnet manager's destination-based routes: next hop = destination LID modulo
  the number of choices, the same at every switch.

A route is {(cable, upward): share of the flow's bytes}; `upward` is from the cable's lower end
(`a`) to its upper end (`b`).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from railtrace.world.shape import Cable, Cluster, Port

Route = dict[tuple[Cable, bool], float]
ROCE_PORT = 4791


class Router:
    def __init__(self, cluster: Cluster, routing: str, down: set[Cable] | None = None) -> None:
        self.cluster = cluster
        self.routing = routing
        #: Cables that are down: routes avoid them where another equal-cost choice exists.
        self.down = down or set()
        self._below: dict[str, list[Cable]] = {}
        for cable in cluster.cables:
            self._below.setdefault(cable.b.device, []).append(cable)

    def route(self, src: Port, dst: Port, sport: int) -> Route:
        """The shares of one flow from NIC port `src` to NIC port `dst`."""
        out: Route = {}
        first = self.cluster.at[src]
        out[(first, True)] = 1.0
        self._from(first.b.device, dst, (src, dst, sport), 1.0, out)
        return out

    # -- the hop-by-hop walk ----------------------------------------------------------------

    def _from(
        self, device: str, dst: Port, flow: tuple[Port, Port, int], share: float, out: Route
    ) -> None:
        last = self.cluster.at[dst]
        if last.b.device == device:
            _add(out, (last, False), share)
            return
        dst_leaf = last.b.device
        options, upward = self._next(device, dst_leaf)
        for cable, part in self._choose(device, options, dst, flow):
            _add(out, (cable, upward), share * part)
            nxt = cable.b.device if upward else cable.a.device
            self._from(nxt, dst, flow, share * part, out)

    def _next(self, device: str, dst_leaf: str) -> tuple[list[Cable], bool]:
        """The equal-cost cables from `device` towards `dst_leaf`, and whether they go up."""
        below = self._below.get(device, [])
        direct = [c for c in below if c.a.device == dst_leaf]
        if direct:
            return direct, False
        # Down towards a spine that has dst_leaf below it (a super-spine over several pods).
        via = [
            c for c in below if any(d.a.device == dst_leaf for d in self._below.get(c.a.device, []))
        ]
        if via:
            return via, False
        return list(self.cluster.up.get(device, [])), True

    def _choose(
        self, device: str, options: Sequence[Cable], dst: Port, flow: tuple[Port, Port, int]
    ) -> list[tuple[Cable, float]]:
        live = [c for c in options if c not in self.down] or list(options)
        if len(live) == 1:
            return [(live[0], 1.0)]
        if self.routing == "spray":
            return [(c, 1.0 / len(live)) for c in live]
        if self.routing == "ib":
            return [(live[self.cluster.lid[dst] % len(live)], 1.0)]
        src, dst_port, sport = flow
        salt = "" if self.routing == "ecmp-polarised" else device
        key = (
            f"{self.cluster.address[src]}|{self.cluster.address[dst_port]}|17|{sport}|{ROCE_PORT}"
            f"|{salt}"
        ).encode()
        return [(live[zlib.crc32(key) % len(live)], 1.0)]


def _add(out: Route, key: tuple[Cable, bool], share: float) -> None:
    out[key] = out.get(key, 0.0) + share
