"""The SNMP trap receiver: linkDown/linkUp notifications -> "snmp" messages, state changes.

pysnmp's NotificationReceiver decodes and authenticates (v2c communities, v3 USM users); its
callback runs synchronously inside the datagram handler, so messages go through a queue to one
task that awaits `emit`, in arrival order. What cannot become a message is counted and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any

import orjson
from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config as engine_config
from pysnmp.entity import engine as snmp_engine
from pysnmp.entity.rfc3413 import ntfrcv
from pysnmp.proto.api import v2c

from railtrace.collectors.emit import Emit, Outgoing
from railtrace.collectors.snmp import oids
from railtrace.collectors.snmp.config import TrapReceiverConfig
from railtrace.collectors.snmp.ifnames import IfNameCache
from railtrace.collectors.snmp.messages import UnknownTrapError, build_trap
from railtrace.collectors.snmp.usm import usm_arguments
from railtrace.collectors.snmp.walk import plain

log = logging.getLogger(__name__)

#: pysnmp's own counters of what it dropped before our callback: (MIB module, symbol).
ENGINE_DROPS = (
    ("__SNMPv2-MIB", "snmpInASNParseErrs"),
    ("__SNMPv2-MIB", "snmpInBadCommunityNames"),
    ("__SNMP-USER-BASED-SM-MIB", "usmStatsUnknownEngineIDs"),
    ("__SNMP-USER-BASED-SM-MIB", "usmStatsUnknownUserNames"),
    ("__SNMP-USER-BASED-SM-MIB", "usmStatsWrongDigests"),
    ("__SNMP-USER-BASED-SM-MIB", "usmStatsDecryptionErrors"),
)


@dataclass
class TrapStats:
    received: int = 0
    emitted: int = 0
    unknown: int = 0
    malformed: int = 0
    emit_failures: int = 0


class TrapReceiver:
    """Receives traps on config.host:config.port until closed."""

    def __init__(self, config: TrapReceiverConfig, emit: Emit, ifnames: IfNameCache) -> None:
        self.config = config
        self.emit = emit
        self.ifnames = ifnames
        self.stats = TrapStats()
        self.address: tuple[str, int] | None = None
        self._engine: Any = None
        self._receiver: Any = None
        self._queue: asyncio.Queue[Outgoing] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    async def start(self) -> tuple[str, int]:
        """Bind (port 0 picks a free one) and start receiving; returns the bound address."""
        # Bound here, not by pysnmp in the background, so a taken port fails loudly now.
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self.config.host, self.config.port))
        except OSError:
            sock.close()
            raise
        self.address = sock.getsockname()
        engine = snmp_engine.SnmpEngine()
        transport = udp.UdpAsyncioTransport().open_server_mode(sock=sock)
        engine_config.add_transport(engine, udp.DOMAIN_NAME, transport)
        for i, community in enumerate(self.config.communities):
            engine_config.add_v1_system(engine, f"railtrace-{i}", community.get_secret_value())
        for user in self.config.users:
            engine_config.add_v3_user(
                engine,
                user.user,
                securityEngineId=v2c.OctetString(hexValue=user.engine_id.removeprefix("0x")),
                **usm_arguments(user),
            )
        self._receiver = ntfrcv.NotificationReceiver(engine, self._received)
        self._engine = engine
        self._sender = asyncio.create_task(self._send(), name="snmp-trap-emit")
        log.info("snmp trap receiver listening", extra={"address": f"{self.address}"})
        return self.address

    async def serve(self) -> None:
        """Receive until cancelled."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop receiving, hand what is queued to emit, release the socket."""
        if self._engine is not None:
            self._receiver.close(self._engine)
            self._engine.close_dispatcher()
            self._engine = None
        if self._sender is not None:
            await self._queue.join()
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None

    def engine_drops(self) -> dict[str, int]:
        """What pysnmp dropped before the callback (bad packets, communities, users, keys)."""
        if self._engine is None:
            return {}
        builder = self._engine.get_mib_builder()
        out = {}
        for module, name in ENGINE_DROPS:
            (symbol,) = builder.import_symbols(module, name)
            out[name] = int(symbol.syntax)
        return out

    def _device(self, agent: str, varbinds: dict[str, Any]) -> str:
        # A trap forwarded by a relay says who raised it in snmpTrapAddress.0 (RFC 3584).
        for address in (str(varbinds.get(oids.SNMP_TRAP_ADDRESS, "")), agent):
            device = self.ifnames.device_for(address) if address else None
            if device:
                return device
        return agent

    def _received(
        self,
        engine: Any,
        state_reference: Any,
        context_engine_id: Any,
        context_name: Any,
        var_binds: Any,
        cb_ctx: Any,
    ) -> None:
        """pysnmp's callback: never raise out of it, that would end in pysnmp's dispatcher."""
        self.stats.received += 1
        agent = "unknown"
        try:
            _, address = engine.message_dispatcher.get_transport_info(state_reference)
            agent = str(address[0])
            varbinds = {str(name): plain(value) for name, value in var_binds}
            device = self._device(agent, varbinds)
            message = build_trap(device, time.time_ns(), varbinds, self.ifnames.ifnames(device))
        except UnknownTrapError as exc:
            self.stats.unknown += 1
            log.info("snmp trap ignored", extra={"agent": agent, "reason": str(exc)})
            return
        except Exception as exc:  # TrapError or anything a hostile packet provokes
            self.stats.malformed += 1
            log.warning(
                "snmp trap malformed",
                extra={"agent": agent, "error": f"{type(exc).__name__}: {exc}"},
            )
            return
        self._queue.put_nowait(
            Outgoing(
                stream="snmp",
                key=message["device"].encode(),
                value=orjson.dumps(message),
                state_change=True,
                ts_ns=message["ts_ns"],
            )
        )

    async def _send(self) -> None:
        while True:
            outgoing = await self._queue.get()
            try:
                await self.emit(outgoing)
                self.stats.emitted += 1
            except Exception as exc:
                self.stats.emit_failures += 1
                log.error(
                    "snmp trap not handed to delivery",
                    extra={"device": outgoing.key.decode(), "error": f"{type(exc).__name__}"},
                )
            finally:
                self._queue.task_done()
