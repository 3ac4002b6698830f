"""A fast gNMI test target for the collector benchmark: one switch's SAMPLE stream, as fast as
the client reads it or at a given rate.

Run:
    .venv/bin/python benchmarks/gnmi_target.py [--port 0] [--ports 64] [--rate 0]
Prints `listening 127.0.0.1:<port>` on its first line of stdout, then serves until SIGTERM or
SIGINT (and prints what it sent on stderr).

Every Subscribe stream gets the same data whatever it asked for (paths and modes are read and
ignored, so gnmic, openconfig's gnmi_cli and railtrace's collector receive identical streams):
rounds of SAMPLE notifications of a 64-port 800G switch, each round one port-sample of every
port, a sync_response after the first round. A port-sample is two notifications in PROTO
encoding (one `uint_val` update per leaf, as the OpenConfig models name them):

- prefix `interfaces/interface[name=EthernetN]/state/counters`: 18 leaves
- prefix `interfaces/interface[name=EthernetN]/ethernet/state/counters`: 14 leaves

so 32 updates per port-sample (`UPDATES_PER_PORT_SAMPLE`). `--rate` is in port-samples per
second per stream (0: as fast as gRPC flow control lets the client take them).

The notifications are serialized once at start (a few variants of the counter values, cycled)
and sent as bytes, each with the round's timestamp spliced in as Notification field 1, so the
target costs little per message and the clients, not this process, set the pace.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from typing import Any

import grpc

from railtrace.proto.gen import gnmi_pb2

COUNTERS = (
    "in-octets",
    "in-pkts",
    "in-unicast-pkts",
    "in-broadcast-pkts",
    "in-multicast-pkts",
    "in-discards",
    "in-errors",
    "in-unknown-protos",
    "in-fcs-errors",
    "out-octets",
    "out-pkts",
    "out-unicast-pkts",
    "out-broadcast-pkts",
    "out-multicast-pkts",
    "out-discards",
    "out-errors",
    "carrier-transitions",
    "last-clear",
)
ETHERNET = (
    "in-mac-control-frames",
    "in-mac-pause-frames",
    "in-oversize-frames",
    "in-undersize-frames",
    "in-jabber-frames",
    "in-fragment-frames",
    "in-8021q-frames",
    "in-crc-errors",
    "in-block-errors",
    "in-symbol-error",
    "in-maxsize-exceeded",
    "out-mac-control-frames",
    "out-mac-pause-frames",
    "out-8021q-frames",
)
UPDATES_PER_PORT_SAMPLE = len(COUNTERS) + len(ETHERNET)
NOTIFICATIONS_PER_PORT_SAMPLE = 2
VARIANTS = 4  # counter value sets, cycled round by round
SYNC = gnmi_pb2.SubscribeResponse(sync_response=True).SerializeToString()


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _path(*elems: str | tuple[str, dict[str, str]]) -> Any:
    path = gnmi_pb2.Path()
    for e in elems:
        if isinstance(e, tuple):
            path.elem.add(name=e[0], key=e[1])
        else:
            path.elem.add(name=e)
    return path


def _body(prefix: Any, leaves: tuple[str, ...], base: int) -> bytes:
    """A Notification without its timestamp (added per round), serialized."""
    updates = [
        gnmi_pb2.Update(path=_path(leaf), val=gnmi_pb2.TypedValue(uint_val=base * (i + 1)))
        for i, leaf in enumerate(leaves)
    ]
    return bytes(gnmi_pb2.Notification(prefix=prefix, update=updates).SerializeToString())


def build_rounds(ports: int) -> list[list[tuple[bytes, bytes]]]:
    """VARIANTS rounds of (SubscribeResponse head, Notification body) per notification: the
    response is head + timestamp field + body. The timestamp varint of a current time in ns is
    9 bytes long, so the head (tag and length of field 1) is fixed."""
    ts_len = 1 + len(varint(time.time_ns()))
    rounds = []
    for v in range(VARIANTS):
        parts = []
        for p in range(1, ports + 1):
            iface = ("interface", {"name": f"Ethernet{p}"})
            base = 1_000_003 * (v + 1) + p
            for prefix, leaves in (
                (_path("interfaces", iface, "state", "counters"), COUNTERS),
                (_path("interfaces", iface, "ethernet", "state", "counters"), ETHERNET),
            ):
                body = _body(prefix, leaves, base)
                parts.append((b"\x0a" + varint(ts_len + len(body)), body))
        rounds.append(parts)
    return rounds


class Target:
    """The servicer's state: prebuilt rounds, pacing, and what was sent."""

    def __init__(self, ports: int, rate: float) -> None:
        self.ports = ports
        self.rounds = build_rounds(ports)
        self.round_s = ports / rate if rate > 0 else 0.0
        self.streams = 0
        self.notifications = 0
        self.active = 0

    async def capabilities(self, request: Any, context: Any) -> Any:
        return gnmi_pb2.CapabilityResponse(
            supported_models=[
                gnmi_pb2.ModelData(name=m, organization="OpenConfig")
                for m in ("openconfig-interfaces", "openconfig-if-ethernet")
            ],
            supported_encodings=[gnmi_pb2.PROTO, gnmi_pb2.JSON_IETF, gnmi_pb2.JSON],
            gNMI_version="0.10.0",
        )

    async def subscribe(self, requests: Any, context: Any) -> None:
        await anext(aiter(requests))  # the SubscriptionList; every stream gets the same data
        self.streams += 1
        self.active += 1
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        n = 0
        try:
            while True:
                ts = b"\x08" + varint(time.time_ns())
                for head, body in self.rounds[n % VARIANTS]:
                    await context.write(head + ts + body)
                self.notifications += len(self.rounds[0])
                if n == 0:
                    await context.write(SYNC)
                n += 1
                if self.round_s:
                    next_at += self.round_s
                    delay = next_at - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    else:
                        next_at = loop.time()  # behind: do not burst to catch up
        finally:
            self.active -= 1


def check_encoding(target: Target) -> None:
    """The spliced bytes parse as the SubscribeResponse they claim to be."""
    head, body = target.rounds[0][0]
    ts = time.time_ns()
    parsed = gnmi_pb2.SubscribeResponse.FromString(head + b"\x08" + varint(ts) + body)
    assert parsed.update.timestamp == ts, parsed
    assert len(parsed.update.update) == len(COUNTERS), parsed


async def serve(host: str, port: int, target: Target) -> None:
    server = grpc.aio.server(options=[("grpc.max_send_message_length", 64 * 1024 * 1024)])
    handler = grpc.method_handlers_generic_handler(
        "gnmi.gNMI",
        {
            "Capabilities": grpc.unary_unary_rpc_method_handler(
                target.capabilities,
                request_deserializer=gnmi_pb2.CapabilityRequest.FromString,
                response_serializer=gnmi_pb2.CapabilityResponse.SerializeToString,
            ),
            "Subscribe": grpc.stream_stream_rpc_method_handler(
                target.subscribe,
                request_deserializer=gnmi_pb2.SubscribeRequest.FromString,
                response_serializer=bytes,  # already serialized
            ),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    print(f"listening {host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(grace=0.5)
    print(
        f"target: {target.streams} streams, {target.notifications:,} notifications "
        f"({target.notifications // NOTIFICATIONS_PER_PORT_SAMPLE * UPDATES_PER_PORT_SAMPLE:,} "
        "updates) sent",
        file=sys.stderr,
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    ap.add_argument("--ports", type=int, default=64, help="switch ports per round")
    ap.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="port-samples/s per stream; 0: as fast as the client reads",
    )
    args = ap.parse_args()
    target = Target(args.ports, args.rate)
    check_encoding(target)
    asyncio.run(serve(args.host, args.port, target))


if __name__ == "__main__":
    main()
