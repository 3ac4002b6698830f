"""The gRPC channel and call metadata for one target, from its settings.

Files are read here, once per connection, so that a renewed client certificate is picked up
at the next reconnect without a restart. A file that cannot be read is a configuration
error (`TargetFailedError`): retrying would only repeat it.
"""

from __future__ import annotations

from pathlib import Path

import grpc

from .config import GnmiTarget
from .errors import TargetFailedError

#: Telemetry notifications for a large switch can exceed gRPC's 4 MiB default.
MAX_RECEIVE_BYTES = 64 * 1024 * 1024


def _read(path: Path | None, what: str, target: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TargetFailedError(f"target {target}: cannot read TLS {what} {path}: {exc}") from exc


def open_channel(target: GnmiTarget) -> grpc.aio.Channel:
    """A new channel to the target: TLS as configured, plaintext only when `insecure`."""
    options: list[tuple[str, int | str]] = [
        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
        # One connection attempt per session: reconnecting is this collector's job, with
        # its own backoff, not the channel's.
        ("grpc.enable_retries", 0),
    ]
    if target.insecure:
        return grpc.aio.insecure_channel(target.address, options=options)
    tls = target.tls
    assert tls is not None  # GnmiTarget refuses a target with neither
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca_file, "CA", target.name),
        private_key=_read(tls.key_file, "key", target.name),
        certificate_chain=_read(tls.cert_file, "certificate", target.name),
    )
    if tls.server_name:
        options.append(("grpc.ssl_target_name_override", tls.server_name))
    return grpc.aio.secure_channel(target.address, credentials, options=options)


def call_metadata(target: GnmiTarget) -> tuple[tuple[str, str], ...]:
    """`username`/`password` metadata, the way gNMI targets expect credentials."""
    if target.credentials is None:
        return ()
    return (
        ("username", target.credentials.username),
        ("password", target.credentials.password.get_secret_value()),
    )
