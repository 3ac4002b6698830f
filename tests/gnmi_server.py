"""A real grpc.aio gNMI server on 127.0.0.1, streaming like a switch, for the collector tests.

It answers Capabilities with configurable encodings, and Subscribe in STREAM mode: for each
SAMPLE subscription it sends the interface counters under it right away and then every
requested interval (the counters grow between samples), for each ON_CHANGE subscription the
current oper-status, then a sync_response; `set_oper_status` pushes an ON_CHANGE update.
Modes: `drop_after` ends the stream after that many notifications (the client sees the RPC
end); `malformed` adds to each sample an update with no value, one with no path and one
with JSON that does not parse, and `only_malformed` sends nothing else (oper-status without a
value); `capabilities=False` answers Capabilities UNIMPLEMENTED, as openconfig's reference fake
does; `stamp_unit_ns` stamps notifications in that unit (10**6: milliseconds) where gNMI has
nanoseconds, as some switch OSes do. Optional TLS (server certificate, client CA for mutual TLS)
and username/password checks. Test certificates are made with the `openssl` CLI.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import orjson

from railtrace.proto.gen import gnmi_pb2, gnmi_pb2_grpc

INTERFACES = ("Ethernet1", "Ethernet2")


@dataclass
class SwitchState:
    """What the fake switch holds and has seen; tests read and change it."""

    encodings: tuple[str, ...] = ("JSON", "JSON_IETF", "PROTO")
    drop_after: int | None = None
    malformed: bool = False
    only_malformed: bool = False
    capabilities: bool = True
    stamp_unit_ns: int = 1
    username: str | None = None
    password: str | None = None
    oper_status: dict[str, str] = field(default_factory=lambda: dict.fromkeys(INTERFACES, "UP"))
    # interface -> (neighbour system-name, port-id) as openconfig-lldp reports it
    lldp: dict[str, tuple[str, str]] = field(default_factory=dict)
    subscribes: list[Any] = field(default_factory=list)
    streams: int = 0
    samples: int = 0
    changes: asyncio.Queue[str] = field(default_factory=asyncio.Queue)


def _path(text: str) -> Any:
    path = gnmi_pb2.Path()
    for part in text.strip("/").split("/"):
        name, _, key = part.partition("[")
        elem = path.elem.add(name=name)
        if key:
            k, _, v = key.rstrip("]").partition("=")
            elem.key[k] = v
    return path


def _elems(path: Any) -> str:
    return "/".join(e.name for e in path.elem)


class Servicer(gnmi_pb2_grpc.gNMIServicer):
    def __init__(self, state: SwitchState) -> None:
        self.state = state

    def _authorize(self, context: Any) -> bool:
        if self.state.username is None:
            return True
        md = dict(context.invocation_metadata())
        return (
            md.get("username") == self.state.username and md.get("password") == self.state.password
        )

    async def Capabilities(self, request: Any, context: Any) -> Any:  # noqa: N802
        if not self._authorize(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad credentials")
        if not self.state.capabilities:
            await context.abort(
                grpc.StatusCode.UNIMPLEMENTED, "method Capabilities not implemented"
            )
        return gnmi_pb2.CapabilityResponse(
            supported_models=[
                gnmi_pb2.ModelData(name="openconfig-interfaces", organization="OpenConfig")
            ],
            supported_encodings=[gnmi_pb2.Encoding.Value(e) for e in self.state.encodings],
            gNMI_version="0.10.0",
        )

    def _counters(self, encoding: int, now_ns: int) -> list[Any]:
        n = self.state.samples
        out = []
        for i, name in enumerate(INTERFACES):
            prefix = _path(f"interfaces/interface[name={name}]/state/counters")
            octets = 1000 * (i + 1) + 100 * n
            fcs = 7 + n
            if encoding == gnmi_pb2.PROTO:
                updates = [
                    gnmi_pb2.Update(
                        path=_path("in-octets"), val=gnmi_pb2.TypedValue(uint_val=octets)
                    ),
                    gnmi_pb2.Update(
                        path=_path("in-fcs-errors"), val=gnmi_pb2.TypedValue(uint_val=fcs)
                    ),
                ]
            else:
                blob = {"openconfig-interfaces:in-octets": str(octets), "in-fcs-errors": str(fcs)}
                val = gnmi_pb2.TypedValue(json_ietf_val=orjson.dumps(blob))
                if encoding == gnmi_pb2.JSON:
                    val = gnmi_pb2.TypedValue(json_val=orjson.dumps(blob))
                updates = [gnmi_pb2.Update(path=gnmi_pb2.Path(), val=val)]
                # an update at the prefix itself: give it the last element as its path
                prefix = _path(f"interfaces/interface[name={name}]/state")
                updates[0].path.CopyFrom(_path("counters"))
            if self.state.only_malformed:
                updates = []
            if self.state.malformed or self.state.only_malformed:
                updates += [
                    gnmi_pb2.Update(path=_path("in-discards")),  # no value at all
                    gnmi_pb2.Update(val=gnmi_pb2.TypedValue(uint_val=1)),  # no path
                    gnmi_pb2.Update(
                        path=_path("in-errors"), val=gnmi_pb2.TypedValue(json_val=b"{not json")
                    ),
                ]
            stamp = now_ns // self.state.stamp_unit_ns
            out.append(gnmi_pb2.Notification(timestamp=stamp, prefix=prefix, update=updates))
        self.state.samples += 1
        return out

    def _status(self, name: str) -> Any:
        update = gnmi_pb2.Update(path=_path("oper-status"))
        if not self.state.only_malformed:
            update.val.string_val = self.state.oper_status[name]
        return gnmi_pb2.Notification(
            timestamp=time.time_ns() // self.state.stamp_unit_ns,
            prefix=_path(f"interfaces/interface[name={name}]/state"),
            update=[update],
        )

    def _neighbour(self, name: str) -> Any:
        """The interface's LLDP neighbour as an update, or its removal as a delete."""
        entry = _path(f"lldp/interfaces/interface[name={name}]/neighbors/neighbor[id=1]")
        far = self.state.lldp.get(name)
        if far is None:
            return gnmi_pb2.Notification(timestamp=time.time_ns(), delete=[entry])
        return gnmi_pb2.Notification(
            timestamp=time.time_ns(),
            prefix=entry,
            update=[
                gnmi_pb2.Update(
                    path=_path(f"state/{leaf}"), val=gnmi_pb2.TypedValue(string_val=value)
                )
                for leaf, value in zip(("system-name", "port-id"), far, strict=True)
            ],
        )

    async def Subscribe(self, request_iterator: Any, context: Any) -> Any:  # noqa: N802
        if not self._authorize(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad credentials")
        first = await anext(aiter(request_iterator))
        subs = first.subscribe
        self.state.subscribes.append(first)
        self.state.streams += 1
        sample = [s for s in subs.subscription if s.mode == gnmi_pb2.SAMPLE]
        on_change = [s for s in subs.subscription if s.mode == gnmi_pb2.ON_CHANGE]
        wants_counters = any(
            _elems(s.path).startswith("interfaces/interface/state/counters") for s in sample
        )
        wants_status = any(_elems(s.path).endswith("oper-status") for s in on_change)
        wants_lldp = any(_elems(s.path).startswith("lldp/") for s in on_change)
        interval_s = min((s.sample_interval for s in sample), default=10**9) / 1e9
        sent = 0

        def budget() -> bool:
            return self.state.drop_after is None or sent < self.state.drop_after

        async def send(notification: Any) -> bool:
            nonlocal sent
            if not budget():
                return False
            await context.write(gnmi_pb2.SubscribeResponse(update=notification))
            sent += 1
            return True

        if wants_counters:
            for n in self._counters(subs.encoding, time.time_ns()):
                if not await send(n):
                    return
        if wants_status:
            for name in INTERFACES:
                if not await send(self._status(name)):
                    return
        if wants_lldp:
            for name in sorted(self.state.lldp):
                if not await send(self._neighbour(name)):
                    return
        await context.write(gnmi_pb2.SubscribeResponse(sync_response=True))
        next_sample = time.monotonic() + interval_s
        while budget():
            try:
                changed = await asyncio.wait_for(
                    self.state.changes.get(), max(0.0, next_sample - time.monotonic())
                )
            except TimeoutError:
                next_sample += interval_s
                if wants_counters:
                    for n in self._counters(subs.encoding, time.time_ns()):
                        if not await send(n):
                            return
                continue
            if changed.startswith("lldp:"):
                if wants_lldp and not await send(self._neighbour(changed[5:])):
                    return
            elif wants_status and not await send(self._status(changed)):
                return


@dataclass
class Certs:
    """A test PKI: a CA, a server certificate for localhost/127.0.0.1, a client certificate,
    and an unrelated CA that signed neither."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return cert, key


def _leaf(directory: Path, name: str, ca: tuple[Path, Path], ext: str) -> tuple[Path, Path]:
    cert, key, csr = (directory / f"{name}.{s}" for s in ("pem", "key", "csr"))
    extfile = directory / f"{name}.ext"
    extfile.write_text(ext)
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", f"/CN={name}",
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", extfile,
    )  # fmt: skip
    return cert, key


def make_certs(directory: Path) -> Certs:
    ca = _ca(directory, "test-ca")
    other, _ = _ca(directory, "other-ca")
    server = _leaf(
        directory,
        "localhost",
        ca,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
        "extendedKeyUsage=serverAuth\n",
    )
    client = _leaf(
        directory, "collector", ca, "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
    )
    return Certs(ca[0], server[0], server[1], client[0], client[1], other)


class GnmiServer:
    """Start with `await GnmiServer(...).start()`; `address` is `127.0.0.1:<port>`."""

    def __init__(
        self, state: SwitchState | None = None, certs: Certs | None = None, mtls: bool = False
    ) -> None:
        self.state = state or SwitchState()
        self.certs = certs
        self.mtls = mtls
        self.server: Any = None
        self.address = ""

    async def start(self) -> GnmiServer:
        self.server = grpc.aio.server()
        gnmi_pb2_grpc.add_gNMIServicer_to_server(Servicer(self.state), self.server)
        if self.certs is None:
            port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            c = self.certs
            creds = grpc.ssl_server_credentials(
                [(c.server_key.read_bytes(), c.server_cert.read_bytes())],
                root_certificates=c.ca.read_bytes() if self.mtls else None,
                require_client_auth=self.mtls,
            )
            port = self.server.add_secure_port("127.0.0.1:0", creds)
        await self.server.start()
        self.address = f"127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        await self.server.stop(grace=None)

    def set_oper_status(self, interface: str, status: str) -> None:
        self.state.oper_status[interface] = status
        self.state.changes.put_nowait(interface)

    def set_neighbour(self, interface: str, far: tuple[str, str] | None) -> None:
        """Plug `interface` into `far` (system-name, port-id), or unplug it with None."""
        if far is None:
            self.state.lldp.pop(interface, None)
        else:
            self.state.lldp[interface] = far
        self.state.changes.put_nowait(f"lldp:{interface}")
