"""The faust-streaming app as the worker and the sink both build it: the broker, security and
timeouts from the settings, an idempotent producer, and raw-bytes topics and tables.
"""

from __future__ import annotations

import asyncio
from typing import Any

import faust
from faust.transport.drivers.aiokafka import Producer as FaustProducer

from railtrace import kafka
from railtrace.kafka import topics
from railtrace.settings import Settings

# A job's view grows with its ranks and channels (766 KB for a simulated 512-GPU job), and a
# table value is one changelog message: allow up to this much, on the topic and the producer.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024


class IdempotentProducer(FaustProducer):
    """Faust enables producer idempotence only with transactions; railtrace wants it always
    (acks=all plus idempotence, at-least-once processing)."""

    def _settings_extra(self) -> dict[str, Any]:
        return {"acks": "all", "enable_idempotence": True}

    async def ready_for(self, topic: str, within_s: float) -> None:
        """Wait until the producer's metadata knows `topic`. A table write picks its
        changelog partition synchronously from that metadata (faust's `key_partition`), and
        before the producer has sent to a new changelog it raises TypeError, crashing the
        agent with its batch half done (seen: a job streamed one host short). At once when
        the topic is known; aiokafka itself would wait forever on a topic the cluster lacks,
        so past `within_s` this raises, naming the topic."""
        try:
            await asyncio.wait_for(self._ensure_producer().partitions_for(topic), within_s)
        except TimeoutError:
            raise RuntimeError(
                f"changelog topic {topic!r} is not in the cluster's metadata after {within_s:g}"
                " s (worker.changelog_wait_s); was it deleted, or is the broker refusing"
                " this worker's requests?"
            ) from None


def faust_app(settings: Settings, app_id: str) -> faust.App:
    """A faust.App configured from railtrace's settings (broker, security, timeouts)."""
    k = settings.kafka
    datadir = settings.worker.data_dir / app_id
    datadir.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {
        "broker": "kafka://" + ";".join(k.bootstrap_servers.split(",")),
        "store": "memory://",
        "topic_partitions": k.partitions,
        "topic_replication_factor": k.replication_factor,
        "broker_session_timeout": settings.worker.session_timeout_s,
        "broker_heartbeat_interval": min(3.0, settings.worker.session_timeout_s / 3),
        "consumer_group_instance_id": settings.worker.instance_id,
        "producer_acks": -1,
        "consumer_auto_offset_reset": "earliest",
        "web_enabled": False,
        "datadir": str(datadir),
        "table_cleanup_interval": 60.0,
        "producer_max_request_size": MAX_MESSAGE_BYTES,
    }
    context = kafka.ssl_context(k)
    if "SASL" in k.security_protocol:
        kwargs["broker_credentials"] = faust.SASLCredentials(
            username=k.sasl_username,
            password=k.sasl_password.get_secret_value() if k.sasl_password else None,
            mechanism=k.sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        kwargs["broker_credentials"] = faust.SSLCredentials(context)
    app = faust.App(app_id, **kwargs)
    app.transport.Producer = IdempotentProducer  # type: ignore[misc]
    return app


def topic_of(app: faust.App, settings: Settings, spec: topics.TopicSpec) -> faust.TopicT:
    return app.topic(
        topics.name(settings.kafka.topic_prefix, spec),
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=settings.kafka.partitions,
    )


class DeliveredTable(faust.Table[bytes, bytes]):
    """A table whose changelog writes can be awaited. Faust queues a write and, before it
    commits offsets, flushes its queue only as long as messages keep leaving it within 0.1 s
    (`ProducerBuffer.flush_atmost`): behind a large job view on a busy broker it gives up and
    commits anyway, so a worker killed then restarts past input whose state never reached the
    changelog, and that job's earlier facts are lost (seen in CI). An agent awaits
    `delivered()` before its batch is acknowledged instead."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unconfirmed: list[asyncio.Future[Any]] = []

    def send_changelog(self, *args: Any, **kwargs: Any) -> Any:
        fut = super().send_changelog(*args, **kwargs)
        self._unconfirmed.append(fut)
        return fut

    async def delivered(self) -> None:
        """Wait until the broker has every changelog write made so far; a failed write raises
        here, as a batch's failed output does, rather than pass unnoticed."""
        pending, self._unconfirmed = self._unconfirmed, []
        for fut in pending:
            await fut


def raw_table(app: faust.App, settings: Settings, name: str) -> DeliveredTable:
    table = DeliveredTable(
        app,
        name=name,
        default=None,
        beacon=app.tables.beacon,
        partitions=settings.kafka.partitions,
        # bytes key and value types make Faust use its "raw" codec for the table and its
        # changelog (and so for recovery too).
        key_type=bytes,
        value_type=bytes,
        use_partitioner=True,
        extra_topic_configs={"max.message.bytes": str(MAX_MESSAGE_BYTES)},
    )
    app.tables.add(table)
    return table
