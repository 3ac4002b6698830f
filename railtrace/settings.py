"""One typed settings object for every railtrace process.

Values come, in rising order of precedence, from defaults, a TOML config file
(`RAILTRACE_CONFIG` or `--config`), and environment variables with the `RAILTRACE_` prefix
(nested sections use `__`, e.g. `RAILTRACE_API__PORT=8080`). Secrets are SecretStr so they
never reach a log line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, create_model, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from railtrace.collectors import registry
from railtrace.streams.attribution.profile import AttributionProfile
from railtrace.topology.gpunics import GpuNicRule


class StoreSettings(BaseModel):
    """Where verdicts and telemetry are kept.

    With no `clickhouse_url`, the embedded chDB engine keeps them under `data_dir` (one owning
    process at a time). With a URL, a ClickHouse server is used through clickhouse-connect.
    """

    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Path("railtrace-data")
    clickhouse_url: str | None = None
    clickhouse_user: str = "default"
    clickhouse_password: SecretStr = SecretStr("")
    database: str = "railtrace"
    batch_rows: int = Field(default=50_000, ge=1)


class ApiSettings(BaseModel):
    """The HTTP API (`railtrace serve`, `railtrace sink --serve`)."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    # The folder with cables.csv (and hosts.csv) that /v1/topology serves; unset: the
    # workers' topology_dir, if that is set, else the plan a replay kept in the data directory.
    topology_dir: Path | None = None
    # Bearer tokens (hashed) that `railtrace token create` writes and the API checks; read
    # again whenever it changes, so a new or revoked token needs no restart.
    tokens_file: Path = Path("railtrace-tokens.json")
    # Browser origins allowed to call the API from their own pages; none by default, so a
    # page elsewhere cannot read verdicts with a token the browser happens to hold.
    cors_origins: list[Annotated[str, Field(pattern=r"^https?://[^/\s]+$")]] = Field(
        default_factory=list
    )


class KafkaSettings(BaseModel):
    """Where the broker is and how to reach it; see deploy/kafka/README.md for each topic."""

    model_config = ConfigDict(extra="forbid")

    bootstrap_servers: str = "127.0.0.1:9092"
    security_protocol: str = Field(
        default="PLAINTEXT", pattern="^(PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL)$"
    )
    sasl_mechanism: str = Field(default="PLAIN", pattern="^(PLAIN|SCRAM-SHA-256|SCRAM-SHA-512)$")
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    topic_prefix: str = "railtrace"
    partitions: int = Field(default=4, ge=1, le=1024)
    replication_factor: int = Field(default=1, ge=1)


class WorkerSettings(BaseModel):
    """The streaming workers (`railtrace worker`, `railtrace sink`)."""

    model_config = ConfigDict(extra="forbid")

    app_id: str = "railtrace"
    topology_dir: Path | None = None
    batch_max: int = Field(default=2000, ge=1)
    batch_within_s: float = Field(default=0.2, gt=0)
    reevaluate_every_s: float = Field(default=1.0, gt=0)
    # How often the telemetry stage saves its per-device state and commits its offsets: the
    # most telemetry a restarted worker reads again.
    checkpoint_every_s: float = Field(default=5.0, gt=0)
    session_timeout_s: float = Field(default=10.0, gt=0, le=10.0)
    # A stable, unique name for this worker process (a pod or host name): Kafka static
    # membership, so a worker restarted within the session timeout takes its partitions
    # straight back instead of waiting for the old session to expire and a rebalance.
    # Two live processes must never share one.
    instance_id: str | None = Field(default=None, min_length=1, max_length=200)
    data_dir: Path = Path("railtrace-worker")
    # How long (in the switch's own time) an LLDP difference from cables.csv must hold before
    # it is reported: a neighbour arrives leaf by leaf and a table fills over a few updates.
    lldp_settle_s: float = Field(default=30.0, ge=0)
    # How long a batch waits for a table's changelog topic to reach the producer's metadata
    # before the agent fails loudly: faust declares the changelogs at start, so a longer wait
    # means a broker that lost or never made the topic, not a slow one.
    changelog_wait_s: float = Field(default=60.0, gt=0)
    # Where `railtrace worker` serves /metrics and /healthz ("host:port"; port 0: any free
    # one, logged at start), and how long its telemetry stage may keep failing, or a consumer
    # group leave it without partitions, before /healthz says it is not healthy.
    metrics_listen: str = "127.0.0.1:9471"
    health_grace_s: float = Field(default=120.0, gt=0)


class SinkSettings(BaseModel):
    """`railtrace sink`'s own endpoint; its batches, group and app id are `worker`'s."""

    model_config = ConfigDict(extra="forbid")

    # Where /metrics and /healthz are served ("host:port"; port 0: any free one, logged at
    # start), and how long writes to the store may keep failing, or the group leave the sink
    # without partitions, before /healthz says it is not healthy.
    metrics_listen: str = "127.0.0.1:9472"
    health_grace_s: float = Field(default=120.0, gt=0)


class _MetricsListen(BaseModel):
    """Where each role's process serves /metrics and /healthz (deploy/collectors/README.md):
    "host:port", "[::]:port" for IPv6, port 0 for any free one (logged at start); checked
    when the collector starts. One port per role, so the collectors of one host can share
    a settings file. A field per collector, from its spec."""

    model_config = ConfigDict(extra="forbid")

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> str: ...


# The models a type checker sees are the bases; at run time they have the collectors' fields.
if TYPE_CHECKING:
    MetricsListen = _MetricsListen
else:
    MetricsListen = create_model(
        "MetricsListen",
        __base__=_MetricsListen,
        __doc__=_MetricsListen.__doc__,
        **registry.metrics_listen_fields(),
    )


class _CollectCommon(BaseModel):
    """`railtrace collect ...`: the spool in front of Kafka (one folder per collector role
    under `spool_dir`), each collector's HTTP endpoint, and a section per collector (what it
    gathers) that the collector's own spec brings (`railtrace.collectors.registry`)."""

    model_config = ConfigDict(extra="forbid")

    spool_dir: Path = Path("railtrace-spool")
    spool_max_bytes: int = Field(default=1 << 30, ge=1 << 20)
    metrics_listen: MetricsListen = Field(default_factory=MetricsListen)
    # /healthz reports a collector unhealthy once none of its targets has been up, or sending
    # to Kafka has been failing, for longer than this.
    health_grace_s: float = Field(default=60.0, gt=0)

    if TYPE_CHECKING:
        # The collectors' sections are fields of the model built from the registry below; a
        # type checker reaches them by name, and a collector reads its own, typed, through
        # its spec (`CollectorSpec.section`).
        def __getattr__(self, name: str) -> Any: ...


if TYPE_CHECKING:
    CollectSettings = _CollectCommon
else:
    CollectSettings = create_model(
        "CollectSettings",
        __base__=_CollectCommon,
        __doc__=_CollectCommon.__doc__,
        **registry.collect_settings_fields(),
    )


class SiteSettings(BaseModel):
    """Facts of the site that the inputs do not carry."""

    model_config = ConfigDict(extra="forbid")

    # The zone the hosts' clocks print in: `dmesg -T`, syslog, PyTorch's and NCCL's own
    # stamps carry none, and a cluster logging in local time was judged an hour or more off
    # its switches' (UTC) telemetry. An IANA name (Europe/Berlin, America/Chicago); stamps
    # that carry a zone (ISO 8601 with Z or +hh:mm) keep theirs.
    timezone: str = "UTC"
    # Which NIC each GPU sends through, per host model, for a site that keeps it here rather
    # than as `nvidia-smi topo -m` files in the topology's gpu-nics/: a job on some GPUs of a
    # node talks only on those GPUs' rails. The first rule whose `hosts` pattern matches a
    # host applies; a host's own gpu-nics/ file wins over every rule.
    gpu_nics: tuple[GpuNicRule, ...] = ()

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"{name!r} is not a time zone this machine knows (an IANA name such as "
                "Europe/Berlin; the tzdata package provides them)"
            ) from exc
        return name

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class AlertSettings(BaseModel):
    """`railtrace alert`: Slack incoming-webhook alerts (deploy/alerts/README.md).

    The webhook URL is the secret: it comes only from the config file or the environment
    (`RAILTRACE_ALERTS__SLACK_WEBHOOK_URL`) and is never logged.
    """

    model_config = ConfigDict(extra="forbid")

    slack_webhook_url: SecretStr | None = None
    # Where people open an incident: alerts link to `<incident_base_url>/incidents/<job id>`.
    incident_base_url: str = "http://127.0.0.1:8000"
    # Grafana with railtrace's dashboards provisioned (deploy/grafana), as people reach it:
    # when set, alerts add a button opening the culprit link's or node's dashboard.
    grafana_base_url: str | None = None
    # A verdict below this confidence is not worth waking anyone up for.
    min_confidence: float = Field(default=0.5, ge=0, le=1)
    # The same alert (same job, state and cause; node and action; ...) again within this
    # window is suppressed; a change is always sent.
    dedup_window_s: float = Field(default=3600.0, gt=0)
    # Slack accepts about one message a second per webhook.
    rate_per_s: float = Field(default=1.0, gt=0)
    burst: int = Field(default=3, ge=1)
    # Alerts waiting to be sent; past it the oldest least important one is dropped (counted).
    queue_max: int = Field(default=100, ge=1)
    max_retries: int = Field(default=5, ge=0)
    backoff_base_s: float = Field(default=1.0, gt=0)
    backoff_max_s: float = Field(default=60.0, gt=0)
    timeout_s: float = Field(default=10.0, gt=0)
    # A job alerted stalled or slow whose verdict turns healthy gets a recovery message.
    send_recovery: bool = True
    # Evidence lines shown in a verdict alert.
    evidence_lines: int = Field(default=3, ge=0, le=10)
    # A new consumer group starts at the end of the topics (no alerts for old history) unless
    # this is set.
    from_beginning: bool = False
    # The API as the alerter reaches it (default: incident_base_url), and a read token for it
    # (`railtrace token create --scope read`): a link alert then names the other jobs whose
    # paths cross the link, its blast radius. Without the token alerts go out without it.
    api_url: str | None = None
    api_token: SecretStr | None = None
    api_timeout_s: float = Field(default=3.0, gt=0, le=60)
    # Where `railtrace alert` serves /metrics and /healthz ("host:port"; port 0: any free one,
    # logged at start), and how long Slack may fail, or the group leave it without its topics,
    # before /healthz says it is not healthy.
    metrics_listen: str = "127.0.0.1:9470"
    health_grace_s: float = Field(default=120.0, gt=0)


class Settings(BaseSettings):
    """Settings for all railtrace commands; build one per process in the composition root."""

    model_config = SettingsConfigDict(
        env_prefix="RAILTRACE_",
        env_nested_delimiter="__",
        extra="forbid",
    )

    store: StoreSettings = StoreSettings()
    api: ApiSettings = ApiSettings()
    attribution: AttributionProfile = AttributionProfile()
    site: SiteSettings = SiteSettings()
    kafka: KafkaSettings = KafkaSettings()
    worker: WorkerSettings = WorkerSettings()
    sink: SinkSettings = SinkSettings()
    collect: CollectSettings = CollectSettings()
    alerts: AlertSettings = AlertSettings()
    log_level: str = "INFO"
    log_json: bool = False

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings from the environment and a TOML file (`config_file`, else the file
    named by `RAILTRACE_CONFIG`, else none); unknown keys are an error, not silently ignored."""
    if config_file is None and os.environ.get("RAILTRACE_CONFIG"):
        config_file = Path(os.environ["RAILTRACE_CONFIG"])
    if config_file is None:
        return Settings(**overrides)
    if not config_file.is_file():
        raise FileNotFoundError(f"config file not found: {config_file}")

    class FileSettings(Settings):
        model_config = SettingsConfigDict(
            **{
                **Settings.model_config,
                "toml_file": config_file,
                "title": f"settings in {config_file}",
            }
        )

    return FileSettings(**overrides)
