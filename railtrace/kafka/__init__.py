"""Kafka as every role reaches it: connection settings for each client railtrace makes, and
topic creation; the topics themselves are described once, in `topics`.

One place turns `KafkaSettings` into aiokafka and faust arguments, so TLS and SASL work the
same for the workers, the sink, the collectors, the alerter and the replay publisher.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from railtrace.kafka import topics
from railtrace.settings import KafkaSettings

log = logging.getLogger(__name__)


def ssl_context(settings: KafkaSettings) -> ssl.SSLContext | None:
    if "SSL" not in settings.security_protocol:
        return None
    context = ssl.create_default_context(
        cafile=str(settings.ssl_cafile) if settings.ssl_cafile else None
    )
    if settings.ssl_certfile:
        context.load_cert_chain(
            str(settings.ssl_certfile), str(settings.ssl_keyfile) if settings.ssl_keyfile else None
        )
    return context


def client_kwargs(settings: KafkaSettings) -> dict[str, Any]:
    """Arguments shared by aiokafka producers, consumers and admin clients."""
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "security_protocol": settings.security_protocol,
    }
    context = ssl_context(settings)
    if context is not None:
        kwargs["ssl_context"] = context
    if "SASL" in settings.security_protocol:
        kwargs["sasl_mechanism"] = settings.sasl_mechanism
        kwargs["sasl_plain_username"] = settings.sasl_username
        kwargs["sasl_plain_password"] = (
            settings.sasl_password.get_secret_value() if settings.sasl_password else None
        )
    return kwargs


def producer_kwargs(settings: KafkaSettings) -> dict[str, Any]:
    """Every railtrace producer waits for all in-sync replicas and is idempotent, so a retry
    after a lost acknowledgement cannot write a record twice."""
    return {**client_kwargs(settings), "acks": "all", "enable_idempotence": True}


async def ensure_topics(settings: KafkaSettings) -> list[str]:
    """Create railtrace's topics that do not exist yet; returns the names created."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(
                topics.name(settings.topic_prefix, spec),
                num_partitions=settings.partitions,
                replication_factor=settings.replication_factor,
                topic_configs=(
                    {"cleanup.policy": "compact"}
                    if spec.compacted
                    else {"retention.ms": str(spec.retention_ms)}
                ),
            )
            for spec in topics.ALL
            if topics.name(settings.topic_prefix, spec) not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):  # another process was first
                await admin.create_topics(wanted)
            log.info("created topics", extra={"topics": [t.name for t in wanted]})
        return [t.name for t in wanted]
    finally:
        await admin.close()
