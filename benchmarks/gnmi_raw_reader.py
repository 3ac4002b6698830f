"""The floor of a Python gNMI collector: a Subscribe stream read through grpcio and nothing else.

Run: .venv/bin/python benchmarks/gnmi_raw_reader.py HOST:PORT

Subscribes as `railtrace collect gnmi` does and takes each SubscribeResponse as the bytes on the
wire (no protobuf parse, no conversion, no spool): what is left is grpcio's own cost per
message, which any collector reading gNMI through it pays. Writes one newline per
notification to stdout, in blocks of 1,000, so the collector benchmark counts notifications in
its output as it counts a Go client's lines.
"""

from __future__ import annotations

import sys

import grpc

from railtrace.proto.gen import gnmi_pb2

BLOCK = 1_000


def subscription() -> gnmi_pb2.SubscribeRequest:
    counters = [
        gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=name) for name in path.split("/")])
        for path in ("interfaces/interface/state/counters",)
    ]
    return gnmi_pb2.SubscribeRequest(
        subscribe=gnmi_pb2.SubscriptionList(
            mode=gnmi_pb2.SubscriptionList.STREAM,
            encoding=gnmi_pb2.PROTO,
            subscription=[
                gnmi_pb2.Subscription(path=p, mode=gnmi_pb2.SAMPLE, sample_interval=1_000_000_000)
                for p in counters
            ],
        )
    )


def main() -> None:
    address = sys.argv[1]
    with grpc.insecure_channel(address) as channel:
        subscribe = channel.stream_stream(
            "/gnmi.gNMI/Subscribe",
            request_serializer=gnmi_pb2.SubscribeRequest.SerializeToString,
            response_deserializer=None,  # the bytes as they came
        )
        out = sys.stdout.buffer
        read = 0
        for _ in subscribe(iter([subscription()])):
            read += 1
            if read == BLOCK:
                out.write(b"\n" * BLOCK)
                out.flush()
                read = 0


if __name__ == "__main__":
    main()
