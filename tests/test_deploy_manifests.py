"""The deployment files in deploy/compose and deploy/k8s run what the code has.

Neither Docker nor Kubernetes runs where the tests run, so nothing else would notice a compose
service calling a command that was renamed, an env var naming a setting that does not exist (an
unknown `RAILTRACE_*` name is silently ignored by pydantic-settings), a probe on a port the
process does not listen on, or a dashboard added to deploy/grafana but not to the Kubernetes
ConfigMap. So the files are parsed and every container in them is checked against the code
itself: the CLI as typer builds it, `railtrace.settings.Settings`, the API's public routes, the
collectors' endpoint.

Each check is a function that returns the problems it finds, and each has a test that feeds it a
deliberately broken snippet: a check that silently stopped checking would fail there.
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
import tempfile
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

import pytest
import typer
import yaml
from pydantic import BaseModel, SecretStr

from railtrace.api.routes import health
from railtrace.cli import app
from railtrace.probes.endpoint import Endpoint, parse_listen
from railtrace.settings import Settings, load_settings

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
K8S_DIR = DEPLOY / "k8s"
GRAFANA_DIR = DEPLOY / "grafana"

PREFIX = "RAILTRACE_"
CONFIG_VAR = (
    "RAILTRACE_CONFIG"  # the config file (railtrace/cli/__init__.py, `--config`), not a field
)
# Files with passwords are kept under a folder named `secrets` (git-ignored); each has a
# committed template of the same name under `secrets.example`, which is what the tests read.
SECRETS, EXAMPLES = "secrets", "secrets.example"
# What a value set outside the files (a Kubernetes fieldRef, a compose ${VAR}) is taken to be.
PLACEHOLDER = "placeholder"
LOOPBACK = re.compile(r"^(127\.|localhost$|::1$)")
# Env vars outside railtrace's settings that hold secrets (ClickHouse, Grafana, Kafka's JAAS).
SECRET_NAME = re.compile(r"PASSWORD|SECRET|JAAS|WEBHOOK")
ENV_NAME_IN_TEXT = re.compile(r"\bRAILTRACE_[A-Z0-9_]*[A-Z0-9]\b")
# The cabling plan is the site's own data, made by the operator (deploy/compose/README.md).
SITE_DATA = {COMPOSE_DIR / "fabric"}

# ------------------------------------------------------------------------------------------
# What the code offers: the CLI, the settings, the HTTP routes
# ------------------------------------------------------------------------------------------

# The typer app as click commands. Typer ships its own copy of click (`typer._click`), so
# commands and parameters are read by their attributes, not by click's classes.
ROOT_COMMAND: Any = typer.main.get_command(app)


@dataclass
class CliCall:
    """A `railtrace ...` command line as the CLI reads it: the command path (`collect gnmi`),
    every option's value by its first spelling (`--port`; defaults included) and what is
    wrong with it."""

    path: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " ".join(self.path)


def _takes_value(command: Any, spelling: str) -> bool:
    for param in command.params:
        if param.param_type_name == "option" and spelling in (*param.opts, *param.secondary_opts):
            return not (param.is_flag or param.count)
    return False  # an unknown option: make_context reports it


def _split_level(command: Any, argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """A group's own tokens (its options, up to the subcommand name) and the rest; all of a
    command's tokens when it is no group."""
    if not hasattr(command, "commands"):
        return list(argv), []
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        spelling, has_value, _ = argv[i].partition("=")
        i += 2 if _takes_value(command, spelling) and not has_value else 1
    return list(argv[:i]), list(argv[i:])


def _message(exc: Exception) -> str:
    format_message = getattr(exc, "format_message", None)
    return str(format_message()) if callable(format_message) else str(exc)


def parse_cli(argv: Sequence[str]) -> CliCall:
    """Parse `argv` (after `railtrace`) level by level with the CLI's own parser
    (`make_context`, which converts and checks every value but runs no command): command
    names, options, their values, required options, extra arguments."""
    call = CliCall()
    command, rest = ROOT_COMMAND, list(argv)
    with _environment({}):  # --config also reads RAILTRACE_CONFIG: not this process's
        while True:
            where = " ".join(["railtrace", *call.path])
            own, rest = _split_level(command, rest)
            is_group = hasattr(command, "commands")
            if is_group and not rest:
                known = ", ".join(sorted(command.commands))
                call.problems.append(f"`{where}` is a group, not a command (one of {known})")
                return call
            try:
                ctx = command.make_context(where, own + rest[:1])
            except Exception as exc:  # the CLI's usage errors, whatever click it ships
                call.problems.append(f"`{where}`: {_message(exc)}")
                return call
            for param in command.params:
                if param.param_type_name == "option":
                    call.options[param.opts[0]] = ctx.params.get(param.name)
            if not is_group:
                return call
            sub = command.commands.get(rest[0])
            if sub is None:
                known = ", ".join(sorted(command.commands))
                call.problems.append(f"`{where}` has no command {rest[0]!r} (one of {known})")
                return call
            call.path = (*call.path, rest[0])
            command, rest = sub, rest[1:]


def _models_in(annotation: object) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation names (`X`, `X | None`), where `__` nesting goes."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    elif typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _models_in(arg)


def _holds_secret(annotation: object) -> bool:
    if annotation is SecretStr:
        return True
    return any(_holds_secret(arg) for arg in typing.get_args(annotation))


def setting_annotation(env_name: str) -> object | None:
    """The annotation of the Settings field `env_name` sets (RAILTRACE_ prefix, `__` nesting,
    case-insensitive as pydantic-settings reads it), or None when no field has that name."""
    if not env_name.startswith(PREFIX):
        return None
    models: list[type[BaseModel]] = [Settings]
    annotation: object | None = None
    for part in env_name[len(PREFIX) :].lower().split("__"):
        found = [m.model_fields[part] for m in models if part in m.model_fields]
        if not found:
            return None
        annotation = found[0].annotation
        models = list(_models_in(annotation))
    return annotation


def env_name_problems(names: Iterable[str]) -> list[str]:
    """Names with the RAILTRACE_ prefix that set no setting: pydantic-settings ignores them."""
    return [
        f"{name} is no field of railtrace.settings.Settings"
        for name in sorted(set(names))
        if name != CONFIG_VAR and setting_annotation(name) is None
    ]


def is_secret(env_name: str) -> bool:
    """A setting typed SecretStr, or another program's password-like variable."""
    annotation = setting_annotation(env_name)
    if annotation is not None:
        return _holds_secret(annotation)
    return bool(SECRET_NAME.search(env_name))


@cache
def api_public_paths() -> frozenset[str]:
    """The API routes a probe can reach without a bearer token: the health router's."""
    return frozenset(getattr(r, "path", "") for r in health.router.routes)


@cache
def collector_paths() -> frozenset[str]:
    """The paths every collector process, the alerter, the worker and the sink serve
    (railtrace/probes/endpoint.py)."""
    return frozenset(re.findall(r'add_get\("([^"]+)"', inspect.getsource(Endpoint.start)))


# ------------------------------------------------------------------------------------------
# The files, read into one shape: containers with their command, environment, mounts, probes
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """What a container finds at `target`: a repository file or folder (Path), a volume's
    files by name (a ConfigMap or Secret), one file's text (str), or something unknown."""

    target: str
    source: Path | Mapping[str, str] | str | None


@dataclass(frozen=True)
class Probe:
    kind: str  # healthcheck, livenessProbe, readinessProbe, startupProbe
    port: int | str  # a number, or a Kubernetes port name
    path: str | None  # None: a TCP check
    from_outside: bool  # the kubelet probes the pod's address; a healthcheck runs inside


@dataclass(frozen=True)
class PortDecl:
    port: int
    protocol: str  # tcp or udp
    name: str | None = None


@dataclass
class Container:
    origin: str
    image: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    inline_env: set[str] = field(default_factory=set)  # written in the manifest, not a secret
    mounts: list[Mount] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    ports: list[PortDecl] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    init: bool = False

    def railtrace_argv(self) -> list[str] | None:
        """The arguments after the `railtrace` executable, or None when it runs something
        else (Kafka, ClickHouse, Grafana)."""
        for i, token in enumerate(self.argv):
            if Path(token).name == "railtrace":
                return self.argv[i + 1 :]
        return None

    def read(self, path: str) -> str | None:
        """The text the container finds at `path`, when a mount provides it."""
        for mount in sorted(self.mounts, key=lambda m: len(m.target), reverse=True):
            if path != mount.target and not path.startswith(mount.target.rstrip("/") + "/"):
                continue
            rel = path[len(mount.target) :].strip("/")
            source = mount.source
            if isinstance(source, Path):
                file = source / rel if rel else source
                return file.read_text() if file.is_file() else None
            if isinstance(source, str):
                return source if not rel else None
            if source is not None and rel:
                return source.get(rel)
            return None
        return None


def _map(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def committed(path: Path) -> Path:
    """The committed template of a file under a `secrets` folder; other paths unchanged."""
    parts = list(path.parts)
    if SECRETS in parts:
        parts[parts.index(SECRETS)] = EXAMPLES
    return Path(*parts)


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (Docker env files, kustomize `envs`); quotes around a value dropped."""
    env: dict[str, str] = {}
    if not path.is_file():
        return env
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


_INTERPOLATION = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: Any) -> Any:
    """Compose's `${VAR}` interpolation with the variables unset: a default where one is
    given, the placeholder otherwise; `$$` is a literal `$`."""
    if isinstance(value, str):

        def one(m: re.Match[str]) -> str:
            if m.group(0) == "$$":
                return "$"
            return m.group(3) if (m.group(2) or "").endswith("-") else PLACEHOLDER

        return _INTERPOLATION.sub(one, value)
    if isinstance(value, dict):
        return {k: interpolate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    return value


def _argv(value: object) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value)
    return [str(v) for v in _list(value)]


_URL = re.compile(r"https?://([^/:\s'\"]+):(\d+)(/[^\s'\"]*)?")


def compose_containers(doc: Mapping[str, Any], base: Path, origin: str) -> list[Container]:
    """Every service of a compose file as a Container; env files and secrets under
    `secrets/` are read from their committed templates."""
    doc = interpolate(doc)
    top_secrets = _map(doc.get("secrets"))
    containers = []
    for name, raw in _map(doc.get("services")).items():
        svc = _map(raw)
        c = Container(
            origin=f"{origin}: service {name}",
            image=str(svc.get("image", "")),
            argv=_argv(svc.get("entrypoint")) + _argv(svc.get("command")),
        )
        env_files = svc.get("env_file", [])
        for entry in [env_files] if isinstance(env_files, str | dict) else _list(env_files):
            rel = str(_map(entry).get("path", "")) if isinstance(entry, dict) else str(entry)
            values = read_env_file(committed(base / rel))
            c.env.update(values)
            if SECRETS not in Path(rel).parts:
                c.inline_env.update(values)
        environment = svc.get("environment", {})
        if isinstance(environment, list):
            environment = dict(str(e).partition("=")[::2] for e in environment)
        for key, value in _map(environment).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            c.env[key] = "" if value is None else text
            c.inline_env.add(key)
        for volume in _list(svc.get("volumes")):
            if isinstance(volume, str):
                source, _, rest = volume.partition(":")
                target = rest.partition(":")[0]
                kind = "bind" if source.startswith((".", "/")) else "volume"
            else:
                v = _map(volume)
                source, target, kind = str(v.get("source", "")), str(v["target"]), str(v["type"])
            c.mounts.append(Mount(target, (base / source).resolve() if kind == "bind" else None))
        for secret in _list(svc.get("secrets")):
            s = _map(secret) if isinstance(secret, dict) else {"source": secret}
            target = str(s.get("target", s["source"]))
            file = _map(top_secrets.get(str(s["source"]))).get("file")
            secret_file = committed((base / str(file)).resolve()) if file else None
            where = target if target.startswith("/") else f"/run/secrets/{target}"
            c.mounts.append(Mount(where, secret_file))
        test = _map(svc.get("healthcheck")).get("test", [])
        for _host, port, url_path in _URL.findall(" ".join(_argv(test))):
            c.probes.append(Probe("healthcheck", int(port), url_path or "/", from_outside=False))
        for published in _list(svc.get("ports")):
            if isinstance(published, dict):
                p = _map(published)
                c.ports.append(PortDecl(int(p["target"]), str(p.get("protocol", "tcp"))))
            else:
                spec, _, protocol = str(published).partition("/")
                c.ports.append(PortDecl(int(spec.rpartition(":")[2]), protocol or "tcp"))
        containers.append(c)
    return containers


Volumes = dict[str, dict[str, str]]  # "configmap/NAME" or "secret/NAME" -> its files by key


def generator_files(kustomization: Mapping[str, Any], base: Path) -> dict[str, dict[str, Path]]:
    """The files each configMapGenerator / secretGenerator takes in, by generated key."""
    out: dict[str, dict[str, Path]] = {}
    for kind, key in (("configmap", "configMapGenerator"), ("secret", "secretGenerator")):
        for gen in _list(kustomization.get(key)):
            files: dict[str, Path] = {}
            for spec in _list(_map(gen).get("files")):
                name, _, rel = str(spec).rpartition("=")
                files[name or Path(rel).name] = committed(base / rel).resolve()
            out[f"{kind}/{_map(gen)['name']}"] = files
    return out


def generated_volumes(kustomization: Mapping[str, Any], base: Path) -> Volumes:
    """What kustomize's generators put in each ConfigMap and Secret (templates for secrets)."""
    out: Volumes = {}
    files = generator_files(kustomization, base)
    for kind, key in (("configmap", "configMapGenerator"), ("secret", "secretGenerator")):
        for gen in _list(kustomization.get(key)):
            g = _map(gen)
            data: dict[str, str] = {}
            for env in _list(g.get("envs")):
                data.update(read_env_file(committed(base / str(env))))
            for literal in _list(g.get("literals")):
                k, _, v = str(literal).partition("=")
                data[k] = v
            for k, path in files[f"{kind}/{g['name']}"].items():
                if path.is_file():
                    data[k] = path.read_text()
            out[f"{kind}/{g['name']}"] = data
    return out


WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"}


def _pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = _map(obj.get("spec"))
    if obj.get("kind") == "CronJob":
        spec = _map(_map(spec.get("jobTemplate")).get("spec"))
    return _map(spec.get("template"))


def _k8s_container(
    spec: Mapping[str, Any],
    pod_volumes: Mapping[str, Mapping[str, str] | None],
    store: Volumes,
    where: str,
    labels: dict[str, str],
    init: bool,
) -> Container:
    """One container of a pod template (`where`: its workload, `labels`: the pod's)."""
    c = Container(
        origin=f"{where} container {spec['name']}",
        image=str(spec.get("image", "")),
        argv=_argv(spec.get("command")) + _argv(spec.get("args")),
        labels=labels,
        init=init,
    )
    for source in _list(spec.get("envFrom")):
        s = _map(source)
        if "configMapRef" in s:
            values = store.get(f"configmap/{_map(s['configMapRef'])['name']}", {})
            c.inline_env.update(values)  # a ConfigMap keeps nothing secret
        else:
            values = store.get(f"secret/{_map(s.get('secretRef'))['name']}", {})
        c.env.update(values)
    for var in _list(spec.get("env")):
        v = _map(var)
        if "value" in v:
            c.env[v["name"]] = str(v["value"])
            c.inline_env.add(v["name"])
        else:
            c.env[v["name"]] = PLACEHOLDER  # a Secret's key, a fieldRef: set at run time
    for m in _list(spec.get("volumeMounts")):
        mount = _map(m)
        content = pod_volumes.get(mount["name"])
        sub = mount.get("subPath")
        source = content.get(sub) if content is not None and sub else content
        c.mounts.append(Mount(str(mount["mountPath"]), source))
    for p in _list(spec.get("ports")):
        port = _map(p)
        protocol = str(port.get("protocol", "TCP")).lower()
        c.ports.append(PortDecl(int(port["containerPort"]), protocol, port.get("name")))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _map(spec.get(kind))
        if "httpGet" in probe:
            get = _map(probe["httpGet"])
            c.probes.append(Probe(kind, get["port"], str(get.get("path", "/")), True))
        elif "tcpSocket" in probe:
            c.probes.append(Probe(kind, _map(probe["tcpSocket"])["port"], None, True))
    return c


def k8s_containers(objects: Iterable[Mapping[str, Any]], volumes: Volumes) -> list[Container]:
    """Every container (init containers too) of the workloads among `objects`; `volumes`:
    the ConfigMaps and Secrets kustomize generates (those in `objects` are added)."""
    store = dict(volumes)
    for obj in objects:
        if obj.get("kind") in ("ConfigMap", "Secret"):
            data = {**_map(obj.get("data")), **_map(obj.get("stringData"))}
            name = _map(obj.get("metadata"))["name"]
            store[f"{str(obj['kind']).lower()}/{name}"] = {k: str(v) for k, v in data.items()}
    containers = []
    for obj in objects:
        if obj.get("kind") not in WORKLOADS:
            continue
        template = _pod(obj)
        pod = _map(template.get("spec"))
        meta = _map(template.get("metadata"))
        labels = {str(k): str(v) for k, v in _map(meta.get("labels")).items()}
        pod_volumes: dict[str, Mapping[str, str] | None] = {}
        for v in _list(pod.get("volumes")):
            vol = _map(v)
            if "configMap" in vol:
                pod_volumes[vol["name"]] = store.get(f"configmap/{_map(vol['configMap'])['name']}")
            elif "secret" in vol:
                pod_volumes[vol["name"]] = store.get(f"secret/{_map(vol['secret'])['secretName']}")
            else:
                pod_volumes[vol["name"]] = None  # emptyDir, hostPath, a claim: no files known
        where = f"{obj['kind']}/{_map(obj.get('metadata'))['name']}"
        for init, key in ((True, "initContainers"), (False, "containers")):
            containers += [
                _k8s_container(_map(raw), pod_volumes, store, where, labels, init)
                for raw in _list(pod.get(key))
            ]
    return containers


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [_map(d) for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _deploy_files(root: Path, pattern: str) -> list[Path]:
    """Committed files only: a local `secrets/` folder holds real passwords."""
    return sorted(p for p in root.rglob(pattern) if SECRETS not in p.relative_to(root).parts)


COMPOSE_FILES = sorted(COMPOSE_DIR.glob("compose*.yaml"))
YAML_FILES = _deploy_files(COMPOSE_DIR, "*.y*ml") + _deploy_files(K8S_DIR, "*.y*ml")
TOML_FILES = _deploy_files(COMPOSE_DIR, "*.toml") + _deploy_files(K8S_DIR, "*.toml")


@cache
def k8s_kustomization() -> dict[str, Any]:
    return load_yaml_docs(K8S_DIR / "kustomization.yaml")[0]


@cache
def k8s_objects() -> list[dict[str, Any]]:
    return [
        doc
        for rel in _list(k8s_kustomization().get("resources"))
        if (K8S_DIR / str(rel)).is_file()
        for doc in load_yaml_docs(K8S_DIR / str(rel))
    ]


@cache
def compose_all() -> list[Container]:
    return [
        c
        for path in COMPOSE_FILES
        for c in compose_containers(load_yaml_docs(path)[0], COMPOSE_DIR, path.name)
    ]


@cache
def k8s_all() -> list[Container]:
    volumes = generated_volumes(k8s_kustomization(), K8S_DIR)
    return k8s_containers(k8s_objects(), volumes)


def railtrace_containers() -> list[Container]:
    return [c for c in [*compose_all(), *k8s_all()] if c.railtrace_argv() is not None]


def _ids(containers: Sequence[Container]) -> list[str]:
    return [c.origin for c in containers]


# ------------------------------------------------------------------------------------------
# The checks: each returns the problems it finds
# ------------------------------------------------------------------------------------------


def cli_problems(c: Container) -> list[str]:
    argv = c.railtrace_argv()
    return [] if argv is None else [f"{c.origin}: {p}" for p in parse_cli(argv).problems]


@contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """Exactly `env` as the RAILTRACE_ environment (the test process's own set aside)."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(PREFIX)}
    for key in saved:
        del os.environ[key]
    os.environ.update(env)
    try:
        yield
    finally:
        for key in env:
            os.environ.pop(key, None)
        os.environ.update(saved)


def config_path(c: Container) -> str | None:
    """The config file the command reads: `--config` (or its env var, RAILTRACE_CONFIG)."""
    option = parse_cli(c.railtrace_argv() or []).options.get("--config")
    return str(option) if option is not None else c.env.get(CONFIG_VAR) or None


def load_toml_settings(text: str, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from a TOML text and an environment, through railtrace's own loader."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "railtrace.toml"
        path.write_text(text)
        with _environment(env or {}):
            return load_settings(path)


def container_settings(c: Container) -> tuple[Settings | None, list[str]]:
    """The Settings the container's process builds, from its environment and the mounted
    config file, or the problems that would stop it at start."""
    env = {k: v for k, v in c.env.items() if k.startswith(PREFIX) and k != CONFIG_VAR}
    problems = [f"{c.origin}: {p}" for p in env_name_problems(env)]
    where = config_path(c)
    try:
        if where is None:
            with _environment(env):
                return load_settings(None), problems
        text = c.read(where)
        if text is None:
            return None, [*problems, f"{c.origin}: the config file {where} is not mounted"]
        return load_toml_settings(text, env), problems
    except (ValueError, OSError) as exc:
        return None, [*problems, f"{c.origin}: bad settings: {exc}"]


@dataclass(frozen=True)
class Listener:
    host: str
    port: int
    protocol: str
    paths: frozenset[str]  # HTTP paths a probe may use (no token needed)


def listeners(call: CliCall, settings: Settings) -> list[Listener]:
    """Where the process `call` starts listens, from its options and settings."""
    found = []
    if call.path == ("serve",) or (call.path == ("sink",) and call.options.get("--serve")):
        host, port = call.options.get("--host"), call.options.get("--port")
        found.append(
            Listener(
                settings.api.host if host is None else str(host),
                settings.api.port if port is None else int(port),
                "tcp",
                api_public_paths(),
            )
        )
    # The roles with an endpoint of their own (railtrace/probes/endpoint.py), by where each
    # takes its listen address from.
    own = {
        ("worker",): settings.worker.metrics_listen,
        ("sink",): settings.sink.metrics_listen,
        ("alert",): settings.alerts.metrics_listen,
    }
    if call.path in own:
        host, port = parse_listen(own[call.path])
        found.append(Listener(host, port, "tcp", collector_paths()))
    if len(call.path) == 2 and call.path[0] == "collect":
        role = call.path[1]
        host, port = parse_listen(getattr(settings.collect.metrics_listen, role))
        found.append(Listener(host, port, "tcp", collector_paths()))
        traps = settings.collect.snmp.traps
        if role == "snmp" and traps is not None:
            found.append(Listener(traps.host, traps.port, "udp", frozenset()))
    return found


def port_problems(c: Container) -> list[str]:
    """Probes, healthchecks and declared or published ports must meet a port the command
    listens on (a probe also a path it serves without a token), and what is reached from
    outside the container must not listen on loopback only."""
    argv = c.railtrace_argv()
    if argv is None:
        return []
    settings, problems = container_settings(c)
    if settings is None:
        return problems
    call = parse_cli(argv)
    found = listeners(call, settings)
    names = {p.name: p.port for p in c.ports if p.name}
    heard = ", ".join(f"{x.host}:{x.port}/{x.protocol}" for x in found) or "nothing"
    what = f"{c.origin} (`railtrace {call.name}` listens on {heard})"
    for probe in c.probes:
        port = names.get(probe.port) if isinstance(probe.port, str) else probe.port
        if port is None:
            problems.append(f"{what}: {probe.kind} names port {probe.port!r}, not declared")
            continue
        match = [x for x in found if x.port == port and x.protocol == "tcp"]
        if not match:
            problems.append(f"{what}: {probe.kind} targets port {port}")
            continue
        if probe.path is not None and probe.path not in match[0].paths:
            served = ", ".join(sorted(match[0].paths))
            problems.append(f"{what}: {probe.kind} asks for {probe.path}; served: {served}")
        if probe.from_outside and LOOPBACK.match(match[0].host):
            problems.append(f"{what}: {probe.kind} comes from outside; port {port} is loopback")
    for decl in c.ports:
        match = [x for x in found if x.port == decl.port and x.protocol == decl.protocol]
        if not match:
            problems.append(f"{what}: declares or publishes {decl.port}/{decl.protocol}")
        elif LOOPBACK.match(match[0].host):
            problems.append(f"{what}: {decl.port}/{decl.protocol} is reached from outside")
    return problems


def service_problems(objects: Iterable[Mapping[str, Any]], pods: Sequence[Container]) -> list[str]:
    """Every Service selects pods, and each of its ports reaches a port they declare (and so,
    by port_problems, one their command listens on)."""
    problems = []
    for obj in objects:
        if obj.get("kind") != "Service":
            continue
        name = _map(obj.get("metadata"))["name"]
        spec = _map(obj.get("spec"))
        selector = {str(k): str(v) for k, v in _map(spec.get("selector")).items()}
        chosen = [c for c in pods if not c.init and selector.items() <= c.labels.items()]
        if not chosen:
            problems.append(f"Service/{name}: its selector {selector} matches no pod")
            continue
        for raw in _list(spec.get("ports")):
            port = _map(raw)
            target = port.get("targetPort", port["port"])
            protocol = str(port.get("protocol", "TCP")).lower()
            declared = [
                d
                for c in chosen
                for d in c.ports
                if d.protocol == protocol and target in (d.name, d.port)
            ]
            if not declared:
                problems.append(
                    f"Service/{name}: targetPort {target!r}/{protocol} is no port of its pods"
                )
    return problems


def bind_mount_problems(containers: Iterable[Container]) -> list[str]:
    """A file or folder of this repository mounted into a container must exist: Docker would
    mount a missing one as an empty folder. The site's cabling plan is the one exception: the
    operator makes it (and compose refuses to start without it)."""
    return [
        f"{c.origin}: mounts {m.source}, which does not exist"
        for c in containers
        for m in c.mounts
        if isinstance(m.source, Path)
        and m.source.is_relative_to(REPO)
        and m.source not in SITE_DATA
        and not m.source.exists()
    ]


def components(containers: Iterable[Container]) -> set[str]:
    """The railtrace commands the long-running and one-shot containers run (init
    containers are helpers, not components)."""
    return {
        parse_cli(argv).name
        for c in containers
        if not c.init and (argv := c.railtrace_argv()) is not None
    }


def component_problems(compose: set[str], k8s: set[str]) -> list[str]:
    problems = [
        f"`railtrace {n}` runs in compose, not in deploy/k8s" for n in sorted(compose - k8s)
    ]
    problems += [
        f"`railtrace {n}` runs in deploy/k8s, not in compose" for n in sorted(k8s - compose)
    ]
    return problems


def inline_secret_problems(containers: Iterable[Container]) -> list[str]:
    """A secret's value must come from an env file under secrets/ or a Kubernetes Secret,
    never from the manifest (or a ConfigMap) itself."""
    return [
        f"{c.origin}: {name} is a secret written inline"
        for c in containers
        for name in sorted(c.inline_env)
        if is_secret(name)
    ]


def grafana_expected() -> dict[str, Path]:
    """Where Grafana must find railtrace's files: provisioning at Grafana's paths, the
    dashboards where the dashboard provider of deploy/grafana looks for them."""
    providers = yaml.safe_load((GRAFANA_DIR / "provisioning/dashboards/railtrace.yaml").read_text())
    path = str(_map(_list(_map(providers)["providers"])[0]["options"])["path"])
    return {
        "/etc/grafana/provisioning/datasources": GRAFANA_DIR / "provisioning/datasources",
        "/etc/grafana/provisioning/dashboards": GRAFANA_DIR / "provisioning/dashboards",
        path: GRAFANA_DIR / "dashboards",
    }


def grafana_env_needed() -> set[str]:
    """The variables the data source provisioning file reads from Grafana's environment."""

    def strings(value: object) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        for item in value.values() if isinstance(value, dict) else _list(value):
            yield from strings(item)

    found: set[str] = set()
    for path in (GRAFANA_DIR / "provisioning/datasources").glob("*.y*ml"):
        for text in strings(yaml.safe_load(path.read_text())):
            found.update(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", text))
    return found


def grafana_problems(mounts: Mapping[str, Sequence[Path]], env: set[str], where: str) -> list[str]:
    """`mounts`: what a Grafana deployment puts at each container folder (repository files
    or folders). Every one must exist, and each expected folder must hold all of railtrace's
    files there; every variable the data source reads must be set."""
    problems = []
    for target, sources in mounts.items():
        problems += [
            f"{where}: {s} (mounted at {target}) does not exist" for s in sources if not s.exists()
        ]
    for target, folder in grafana_expected().items():
        given = {
            f.resolve()
            for s in mounts.get(target, [])
            for f in (sorted(s.iterdir()) if s.is_dir() else [s])
            if f.is_file()
        }
        missing = sorted(
            f.name for f in folder.iterdir() if f.is_file() and f.resolve() not in given
        )
        if missing:
            problems.append(f"{where}: {target} lacks {', '.join(missing)} from {folder}")
    problems += [
        f"{where}: Grafana's environment lacks {v}" for v in sorted(grafana_env_needed() - env)
    ]
    return problems


def compose_grafana(doc: Mapping[str, Any], origin: str) -> tuple[dict[str, list[Path]], set[str]]:
    """The Grafana service's bind mounts and environment names in a compose file."""
    for c in compose_containers(doc, COMPOSE_DIR, origin):
        if c.image.startswith("grafana/grafana"):
            mounts: dict[str, list[Path]] = {}
            for m in c.mounts:
                if isinstance(m.source, Path):
                    mounts.setdefault(m.target, []).append(m.source)
            return mounts, set(c.env)
    return {}, set()


def helm_grafana(
    values: Mapping[str, Any], kustomization: Mapping[str, Any], base: Path
) -> tuple[dict[str, list[Path]], set[str]]:
    """The ConfigMap mounts and environment of the Grafana chart's values, with the files
    deploy/k8s/grafana/kustomization.yaml generates those ConfigMaps from."""
    files = generator_files(kustomization, base)
    mounts: dict[str, list[Path]] = {}
    for raw in _list(values.get("extraConfigmapMounts")):
        m = _map(raw)
        mounts[str(m["mountPath"])] = list(files.get(f"configmap/{m['configMap']}", {}).values())
    env = set(_map(values.get("env")))
    secret = generated_volumes(kustomization, base).get(f"secret/{values.get('envFromSecret')}", {})
    return mounts, env | set(secret)


def secret_template_problems(referenced: Iterable[tuple[str, Path]]) -> list[str]:
    """Every secret file a deploy file names needs its committed template: it is what
    people copy and fill in, and what these tests read in its place."""
    return [
        f"{who}: names {path}, whose template {committed(path)} does not exist"
        for who, path in referenced
        if not committed(path).is_file()
    ]


def referenced_secret_files() -> list[tuple[str, Path]]:
    """Every file under a secrets/ folder the deploy files name (compose env files and
    secrets, kustomize generators), with who names it."""
    found: list[tuple[str, Path]] = []
    for path in COMPOSE_FILES:
        doc = _map(load_yaml_docs(path)[0])
        for name, svc in _map(doc.get("services")).items():
            env_files = _map(svc).get("env_file", [])
            for e in [env_files] if isinstance(env_files, str | dict) else _list(env_files):
                rel = str(_map(e).get("path")) if isinstance(e, dict) else str(e)
                found.append((f"{path.name}: service {name}", COMPOSE_DIR / rel))
        for name, secret in _map(doc.get("secrets")).items():
            found.append((f"{path.name}: secret {name}", COMPOSE_DIR / str(_map(secret)["file"])))
    for kust_dir in (K8S_DIR, K8S_DIR / "grafana"):
        kust = load_yaml_docs(kust_dir / "kustomization.yaml")[0]
        for key in ("configMapGenerator", "secretGenerator"):
            for gen in _list(kust.get(key)):
                g = _map(gen)
                rels = [str(e) for e in _list(g.get("envs"))]
                rels += [str(f).rpartition("=")[2] for f in _list(g.get("files"))]
                found += [
                    (f"{kust_dir.name}/kustomization.yaml: {g['name']}", kust_dir / r) for r in rels
                ]
    return [(who, p) for who, p in found if SECRETS in p.parts]


def resource_problems(
    kustomization: Mapping[str, Any], manifests: Iterable[Path], base: Path = K8S_DIR
) -> list[str]:
    """A manifest written but not listed is never applied; a listed one missing breaks
    `kubectl apply -k`; a document without apiVersion, kind and metadata is no object."""
    listed = [str(r) for r in _list(kustomization.get("resources"))]
    problems = [
        f"{r} is a kustomize resource but does not exist"
        for r in listed
        if not (base / r).is_file()
    ]
    for path in manifests:
        if path.name not in listed:
            problems.append(f"{path.name} is a manifest but no kustomize resource")
        if any(not {"apiVersion", "kind", "metadata"} <= d.keys() for d in load_yaml_docs(path)):
            problems.append(f"{path.name}: a document lacks apiVersion, kind or metadata")
    return problems


def image_problems(
    compose: Mapping[str, Mapping[str, Any]],
    kustomization: Mapping[str, Any],
    pods: Iterable[Container],
) -> list[str]:
    """Compose builds railtrace's images from a stage of the Dockerfile; every other image
    carries a version; Kubernetes maps railtrace's images to a registry through kustomize
    `images` (else the kubelet would pull `railtrace` from Docker Hub)."""
    problems = []
    for origin, doc in compose.items():
        for name, raw in _map(doc.get("services")).items():
            svc, build = _map(raw), _map(_map(raw).get("build"))
            if not build:
                if not re.search(r":\d", str(svc.get("image", ""))):
                    problems.append(f"{origin}: {svc.get('image')} carries no version")
                continue
            dockerfile = COMPOSE_DIR / str(build["context"]) / str(build["dockerfile"])
            text = dockerfile.read_text() if dockerfile.is_file() else ""
            stages = set(re.findall(r"^FROM \S+ AS (\S+)$", text, re.MULTILINE))
            if build.get("target") not in stages:
                problems.append(
                    f"{origin}: {name} builds target {build.get('target')!r}, "
                    f"not a stage of {dockerfile.resolve().relative_to(REPO)}"
                )
    mapped = {str(_map(i)["name"]) for i in _list(kustomization.get("images"))}
    problems += [
        f"{c.origin}: image {c.image} is not mapped by kustomize `images`"
        for c in pods
        if c.image not in mapped
    ]
    return problems


# ------------------------------------------------------------------------------------------
# Tests of the real files
# ------------------------------------------------------------------------------------------


def test_deploy_files_exist_where_the_tests_look() -> None:
    """Guards the rest: an empty parametrization would pass every test below."""
    assert {p.name for p in COMPOSE_FILES} == {"compose.yaml", "compose.gpu-host.yaml"}
    assert len(railtrace_containers()) >= 15
    assert k8s_objects()


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_yaml_file_parses(path: Path) -> None:
    assert load_yaml_docs(path), f"{path} holds no YAML document"


def test_every_kubernetes_manifest_is_a_kustomize_resource() -> None:
    manifests = [p for p in K8S_DIR.glob("*.yaml") if p.name != "kustomization.yaml"]
    assert resource_problems(k8s_kustomization(), manifests) == []


def test_a_manifest_left_out_of_kustomize_or_a_missing_resource_is_caught(tmp_path: Path) -> None:
    forgotten = tmp_path / "forgotten.yaml"
    forgotten.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    nameless = tmp_path / "nameless.yaml"
    nameless.write_text("kind: ConfigMap\n")
    kustomization = {"resources": ["nameless.yaml", "gone.yaml"]}
    problems = resource_problems(kustomization, [forgotten, nameless], tmp_path)
    assert problems == [
        "gone.yaml is a kustomize resource but does not exist",
        "forgotten.yaml is a manifest but no kustomize resource",
        "nameless.yaml: a document lacks apiVersion, kind or metadata",
    ], problems


@pytest.mark.parametrize("c", railtrace_containers(), ids=_ids(railtrace_containers()))
def test_every_railtrace_command_is_a_real_command_with_options_it_accepts(c: Container) -> None:
    assert cli_problems(c) == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["railtrace", "wroker"], "no command 'wroker'"),
        (["railtrace", "serve", "--prot", "8000"], "No such option: --prot"),
        (["railtrace", "serve", "--port", "eighty"], "Invalid value for '--port'"),
        (["railtrace", "collect"], "is a group"),
        (["railtrace", "collect", "ufm", "extra"], "unexpected extra argument"),
        (["railtrace", "worker", "--log-level", "info"], "No such option: --log-level"),
        (["railtrace", "release-node", "gpu7"], "Missing option '--by'"),
        (["railtrace", "serve", "--port"], "requires an argument"),
    ],
)
def test_a_misspelt_or_misplaced_command_line_is_caught(argv: list[str], expected: str) -> None:
    snippet = {"services": {"api": {"image": "railtrace:0.1.0", "command": argv}}}
    [c] = compose_containers(snippet, COMPOSE_DIR, "snippet")
    problems = cli_problems(c)
    assert any(expected in p for p in problems), problems


def test_every_railtrace_env_var_in_the_deploy_files_is_a_setting() -> None:
    """Scans every committed file (manifests, env files, scripts, READMEs): an unknown
    RAILTRACE_ name would be ignored without a word when railtrace starts."""
    names = {
        name
        for root in (COMPOSE_DIR, K8S_DIR)
        for path in _deploy_files(root, "*")
        if path.is_file()
        for name in ENV_NAME_IN_TEXT.findall(path.read_text(errors="replace"))
    }
    assert {"RAILTRACE_STORE__CLICKHOUSE_PASSWORD", "RAILTRACE_API__TOKENS_FILE"} <= names
    assert env_name_problems(names) == []


@pytest.mark.parametrize(
    "name",
    [
        "RAILTRACE_API__PROT",  # no such field
        "RAILTRACE_KAFKA_BOOTSTRAP_SERVERS",  # one underscore: no nesting
        "RAILTRACE_STORE__CLICKHOUSE_URL__HOST",  # below a leaf
        "RAILTRACE_COLLECT__METRICS_LISTEN__GMNI",
    ],
)
def test_an_env_var_that_sets_no_setting_is_caught(name: str) -> None:
    assert env_name_problems([name, "RAILTRACE_API__PORT", CONFIG_VAR]) == [
        f"{name} is no field of railtrace.settings.Settings"
    ]


@pytest.mark.parametrize("c", railtrace_containers(), ids=_ids(railtrace_containers()))
def test_every_container_builds_valid_settings(c: Container) -> None:
    """Its environment (env files and Secrets read from their templates) and its mounted
    config file together, as `railtrace` loads them at start."""
    settings, problems = container_settings(c)
    assert problems == []
    assert settings is not None


@pytest.mark.parametrize("path", TOML_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_toml_config_parses_into_settings(path: Path) -> None:
    settings = load_toml_settings(path.read_text())
    assert settings.collect.spool_dir.is_absolute()  # a relative spool lands in the image


def test_every_container_that_names_a_config_file_has_it_mounted() -> None:
    with_config = [c for c in railtrace_containers() if config_path(c) is not None]
    assert len(with_config) >= 8  # the collectors of both files
    for c in with_config:
        text = c.read(cast(str, config_path(c)))
        assert text is not None, f"{c.origin}: {config_path(c)} is not mounted"
        assert "[collect" in text


@pytest.mark.parametrize(
    ("env", "toml", "expected"),
    [
        ({"RAILTRACE_API__PORT": "eighty"}, None, "bad settings"),
        ({"RAILTRACE_KAFKA__SECURITY_PROTOCOL": "SASL_PLAIN"}, None, "bad settings"),
        ({"RAILTRACE_API__PROT": "8000"}, None, "no field"),
        ({CONFIG_VAR: "/etc/railtrace/c.toml"}, '[collect]\nspool_dri = "/x"\n', "bad settings"),
        ({CONFIG_VAR: "/etc/railtrace/elsewhere.toml"}, "", "is not mounted"),
    ],
)
def test_a_bad_setting_value_toml_key_or_config_path_is_caught(
    env: dict[str, str], toml: str | None, expected: str
) -> None:
    c = Container("snippet", "railtrace", ["railtrace", "collect", "gnmi"], env=env)
    if toml is not None:
        c.mounts.append(Mount("/etc/railtrace", {"c.toml": toml}))
    _, problems = container_settings(c)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize("c", railtrace_containers(), ids=_ids(railtrace_containers()))
def test_probes_and_ports_meet_the_port_the_command_listens_on(c: Container) -> None:
    assert port_problems(c) == []


def test_the_api_every_collector_the_worker_and_the_sink_are_probed() -> None:
    """The port test above passes vacuously for a container without probes."""
    probed = {parse_cli(c.railtrace_argv() or []).name for c in railtrace_containers() if c.probes}
    assert probed == {
        "serve",
        "worker",
        "sink",
        "collect gnmi",
        "collect snmp",
        "collect logs",
        "collect xid",
        "alert",
    }


COMPOSE_API = """
services:
  api:
    image: railtrace:0.1.0
    command: [railtrace, serve]
    environment:
      RAILTRACE_API__HOST: 0.0.0.0
    healthcheck:
      test: [CMD, python, -c, "...", "http://127.0.0.1:{port}{path}"]
"""

K8S_COLLECTOR = """
kind: Deployment
metadata: {{name: c}}
spec:
  template:
    metadata: {{labels: {{app: c}}}}
    spec:
      containers:
        - name: c
          image: railtrace
          command: [railtrace, collect, gnmi]
          env:
            - {{name: RAILTRACE_COLLECT__METRICS_LISTEN__GNMI, value: "{listen}"}}
          ports:
            - {{name: metrics, containerPort: {declared}}}
          livenessProbe:
            httpGet: {{path: {path}, port: {port}}}
"""


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        (COMPOSE_API.format(port=8080, path="/readyz"), "healthcheck targets port 8080"),
        (COMPOSE_API.format(port=8000, path="/v1/jobs"), "asks for /v1/jobs"),
        (
            K8S_COLLECTOR.format(
                listen="0.0.0.0:9464", declared=9464, path="/readyz", port="metrics"
            ),
            "asks for /readyz",  # collectors have no /readyz
        ),
        (
            K8S_COLLECTOR.format(
                listen="127.0.0.1:9464", declared=9464, path="/healthz", port=9464
            ),
            "loopback",  # the kubelet cannot reach it
        ),
        (
            K8S_COLLECTOR.format(
                listen="0.0.0.0:9464", declared=9465, path="/healthz", port="metrics"
            ),
            "targets port 9465",
        ),
        (
            K8S_COLLECTOR.format(
                listen="0.0.0.0:9464", declared=9464, path="/healthz", port="http"
            ),
            "names port 'http'",
        ),
    ],
)
def test_a_probe_on_the_wrong_port_or_path_is_caught(snippet: str, expected: str) -> None:
    doc = _map(yaml.safe_load(snippet))
    if "services" in doc:
        [c] = compose_containers(doc, COMPOSE_DIR, "snippet")
    else:
        [c] = k8s_containers([doc], {})
    problems = port_problems(c)
    assert any(expected in p for p in problems), problems


def test_services_route_to_ports_their_pods_declare() -> None:
    pods = k8s_all()
    assert service_problems(k8s_objects(), pods) == []
    assert sum(1 for o in k8s_objects() if o.get("kind") == "Service") >= 4


@pytest.mark.parametrize(
    ("service", "expected"),
    [
        (
            {"selector": {"app": "c"}, "ports": [{"port": 80, "targetPort": "http"}]},
            "targetPort 'http'",
        ),
        ({"selector": {"app": "c"}, "ports": [{"port": 9464, "protocol": "UDP"}]}, "9464/udp"),
        ({"selector": {"app": "other"}, "ports": [{"port": 80}]}, "matches no pod"),
    ],
)
def test_a_service_that_reaches_no_pod_port_is_caught(
    service: dict[str, Any], expected: str
) -> None:
    pod = _map(
        yaml.safe_load(
            K8S_COLLECTOR.format(
                listen="0.0.0.0:9464", declared=9464, path="/healthz", port="metrics"
            )
        )
    )
    svc = {"kind": "Service", "metadata": {"name": "s"}, "spec": service}
    problems = service_problems([svc], k8s_containers([pod], {}))
    assert any(expected in p for p in problems), problems


def test_every_repository_file_mounted_in_compose_exists() -> None:
    assert bind_mount_problems(compose_all()) == []
    assert sum(isinstance(m.source, Path) for c in compose_all() for m in c.mounts) >= 10


def test_a_mount_of_a_missing_repository_file_is_caught() -> None:
    volumes = [
        "./host-colectors.toml:/etc/railtrace/host-collectors.toml:ro",
        "./host-collectors.toml:/etc/railtrace/ok.toml:ro",
        "./fabric:/etc/railtrace/fabric:ro",  # site data: the operator makes it
        "/var/log/jobs:/var/log/jobs:ro",  # the host's, not the repository's
    ]
    snippet = {"services": {"s": {"image": "x", "volumes": volumes}}}
    problems = bind_mount_problems(compose_containers(snippet, COMPOSE_DIR, "snippet"))
    assert problems == [
        f"snippet: service s: mounts {COMPOSE_DIR / 'host-colectors.toml'}, which does not exist"
    ]


def test_compose_and_kubernetes_run_the_same_railtrace_components() -> None:
    compose, k8s = components(compose_all()), components(k8s_all())
    assert component_problems(compose, k8s) == []
    assert compose >= {
        "db migrate",
        "worker",
        "sink",
        "serve",
        "alert",
        "collect gnmi",
        "collect xid",
    }


def test_a_component_missing_on_one_side_is_caught() -> None:
    k8s = components(k8s_all()) - {"alert"}
    assert component_problems(components(compose_all()), k8s) == [
        "`railtrace alert` runs in compose, not in deploy/k8s"
    ]


def test_the_workers_run_as_two_replicas_with_a_disruption_budget() -> None:
    compose = _map(load_yaml_docs(COMPOSE_DIR / "compose.yaml")[0]["services"])
    assert _map(compose["worker"]["deploy"])["replicas"] == 2
    [sts] = [
        o for o in k8s_objects() if o["kind"] == "StatefulSet" and "worker" in o["metadata"]["name"]
    ]
    assert sts["spec"]["replicas"] == 2
    [pdb] = [o for o in k8s_objects() if o["kind"] == "PodDisruptionBudget"]
    assert (
        pdb["spec"]["selector"]["matchLabels"].items()
        <= sts["spec"]["template"]["metadata"]["labels"].items()
    )


def test_no_secret_is_written_inline() -> None:
    containers = [*compose_all(), *k8s_all()]
    assert inline_secret_problems(containers) == []
    # the check must see the secrets that are there, from their files
    assert any("RAILTRACE_ALERTS__SLACK_WEBHOOK_URL" in c.env for c in compose_all())


@pytest.mark.parametrize(
    "service",
    [
        {"environment": {"RAILTRACE_STORE__CLICKHOUSE_PASSWORD": "hunter2"}},
        {"environment": ["GF_SECURITY_ADMIN_PASSWORD=admin"]},
        {"env_file": "settings.env in tmp_path"},  # an env file, but not under secrets/
    ],
)
def test_a_secret_written_inline_is_caught(service: dict[str, Any], tmp_path: Path) -> None:
    settings = tmp_path / "settings.env"
    settings.write_text("RAILTRACE_ALERTS__SLACK_WEBHOOK_URL=https://hooks.slack.com/x\n")
    if "env_file" in service:
        service["env_file"] = [str(settings)]
    snippet = {"services": {"s": {"image": "x", **service}}}
    problems = inline_secret_problems(compose_containers(snippet, COMPOSE_DIR, "snippet"))
    assert len(problems) == 1 and "secret written inline" in problems[0], problems


def test_a_secret_in_a_kubernetes_env_value_or_configmap_is_caught() -> None:
    pod = _map(
        yaml.safe_load(
            K8S_COLLECTOR.format(
                listen="0.0.0.0:9464", declared=9464, path="/healthz", port="metrics"
            )
        )
    )
    container = pod["spec"]["template"]["spec"]["containers"][0]
    container["env"].append(
        {"name": "RAILTRACE_ALERTS__SLACK_WEBHOOK_URL", "value": "https://hooks"}
    )
    container["envFrom"] = [{"configMapRef": {"name": "env"}}]
    volumes = {"configmap/env": {"RAILTRACE_KAFKA__SASL_PASSWORD": "pw"}}
    problems = inline_secret_problems(k8s_containers([pod], volumes))
    assert len(problems) == 2, problems


def test_every_secret_file_named_has_a_committed_template_and_is_git_ignored() -> None:
    referenced = referenced_secret_files()
    assert len(referenced) >= 10
    assert secret_template_problems(referenced) == []
    for root in (COMPOSE_DIR, K8S_DIR):
        assert "/secrets/" in (root / ".gitignore").read_text().split()


def test_a_secret_file_without_a_template_is_caught() -> None:
    referenced = [
        ("snippet", COMPOSE_DIR / SECRETS / "store.env"),
        ("snippet", COMPOSE_DIR / SECRETS / "nowhere.env"),
    ]
    problems = secret_template_problems(referenced)
    assert len(problems) == 1 and "nowhere.env" in problems[0], problems


def test_grafana_in_compose_mounts_railtrace_provisioning_and_dashboards() -> None:
    mounts, env = compose_grafana(load_yaml_docs(COMPOSE_DIR / "compose.yaml")[0], "compose.yaml")
    assert grafana_problems(mounts, env, "compose.yaml") == []


def test_grafana_on_kubernetes_gets_every_provisioning_file_and_dashboard() -> None:
    values = load_yaml_docs(K8S_DIR / "grafana/values.yaml")[0]
    kustomization = load_yaml_docs(K8S_DIR / "grafana/kustomization.yaml")[0]
    mounts, env = helm_grafana(values, kustomization, K8S_DIR / "grafana")
    assert grafana_problems(mounts, env, "deploy/k8s/grafana") == []
    assert "grafana-clickhouse-datasource" in _list(values.get("plugins"))


def test_a_grafana_mount_of_a_missing_folder_or_dashboard_is_caught() -> None:
    doc = _map(load_yaml_docs(COMPOSE_DIR / "compose.yaml")[0])
    grafana = doc["services"]["grafana"]
    grafana["volumes"] = [
        v.replace("../grafana/dashboards", "../grafana/dashbords") for v in grafana["volumes"]
    ]
    del grafana["environment"]["CLICKHOUSE_HOST"]
    problems = grafana_problems(*compose_grafana(doc, "snippet"), "snippet")
    assert any("dashbords" in p and "does not exist" in p for p in problems), problems
    assert any("lacks railtrace-fabric-health.json" in p for p in problems), problems
    assert any("lacks CLICKHOUSE_HOST" in p for p in problems), problems

    kustomization = load_yaml_docs(K8S_DIR / "grafana/kustomization.yaml")[0]
    for gen in kustomization["configMapGenerator"]:
        gen["files"] = [f for f in gen["files"] if "nodes" not in f]
    values = load_yaml_docs(K8S_DIR / "grafana/values.yaml")[0]
    problems = grafana_problems(*helm_grafana(values, kustomization, K8S_DIR / "grafana"), "k8s")
    [dashboards] = [t for t, f in grafana_expected().items() if f == GRAFANA_DIR / "dashboards"]
    assert problems == [
        f"k8s: {dashboards} lacks railtrace-nodes.json from {GRAFANA_DIR / 'dashboards'}"
    ]


def test_every_image_is_built_here_or_pinned() -> None:
    docs = {p.name: load_yaml_docs(p)[0] for p in COMPOSE_FILES}
    assert image_problems(docs, k8s_kustomization(), k8s_all()) == []


def test_an_unpinned_unmapped_or_unbuildable_image_is_caught() -> None:
    build = {"context": "../..", "dockerfile": "deploy/compose/Dockerfile", "target": "runtme"}
    services = {
        "grafana": {"image": "grafana/grafana"},
        "worker": {"image": "railtrace:0.1.0", "build": build},
    }
    compose = {"snippet": {"services": services}}
    pod = Container("Deployment/x container x", "railtrace-hots", ["railtrace", "worker"])
    problems = image_problems(compose, {"images": [{"name": "railtrace"}]}, [pod])
    assert problems == [
        "snippet: grafana/grafana carries no version",
        "snippet: worker builds target 'runtme', not a stage of deploy/compose/Dockerfile",
        "Deployment/x container x: image railtrace-hots is not mapped by kustomize `images`",
    ], problems
