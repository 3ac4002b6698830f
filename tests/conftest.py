"""The test tiers: every test gets its markers here, from what its code reaches, so a new test
is classified without anyone remembering to mark it.

- a service marker (`kafka`, `snmp`, `snmpsim`, `browser`, ...: gates.SERVICES) when the test,
  one of its fixtures, or a function or class of tests/ they use (followed transitively) calls
  `gates.require` with that marker as a literal;
- `integration` when that code uses processes or sockets: the subprocess, socket,
  multiprocessing, uvicorn, grpc, aiohttp, aiokafka, playwright ... modules, or calls such as
  asyncio's create_subprocess_exec / open_connection, os.fork, urlopen;
- `chdb` when it opens the embedded ClickHouse (chDB): code that reaches ChdbStore, open_store
  or the chdb module. In-process and no service, but about a second a store;
- `e2e` for the modules named test_*_e2e.py and for tests that simulate a cluster and run the
  pipeline over it (code that reaches railtrace.simulate.write_capture, e.g. through
  api_support.replayed): tens of seconds each, too slow for `make check`;
- `core` for every other test (or one marked `core` explicitly, which overrides the above).

What this reading cannot see (railtrace code that a test calls, the CLI through
cli_support.invoke, that itself starts a process, connects or opens a store) is caught when it
runs: a `core` test that opens a network socket, resolves a name, starts a process or opens a
chDB store FAILS (the call is refused, the test reports it: give it its marker), and a gate
reached by a test without its marker fails (gates.check_marked). Explicit markers are kept.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import traceback
import types
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

import chdb
import gates
import pytest

from railtrace.simulate import write_capture
from railtrace.store import chdb_store, open_store

TESTS = Path(__file__).resolve().parent
E2E_MODULE = re.compile(r"test_.*_e2e\.py")

#: Modules whose use (the module, or anything imported from it) gives a marker.
MODULE_MARKERS = {
    **dict.fromkeys(
        (
            "subprocess",
            "socket",
            "socketserver",
            "multiprocessing",
            "concurrent.futures.process",
            "pty",
            "http.server",
            "http.client",
            "urllib.request",
            "asyncio.subprocess",
            "uvicorn",
            "grpc",
            "aiohttp",
            "aiokafka",
            "playwright",
        ),
        "integration",
    ),
    "chdb": "chdb",
}
#: Attribute names that start processes or open connections whatever module they come from.
PROCESS_CALLS = frozenset(
    {
        "create_subprocess_exec",
        "create_subprocess_shell",
        "fork",
        "forkpty",
        "posix_spawn",
        "posix_spawnp",
        "spawnv",
        "spawnve",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "popen",
        "open_connection",
        "open_unix_connection",
        "start_server",
        "start_unix_server",
        "create_server",
        "create_connection",
        "create_datagram_endpoint",
        "urlopen",
        "getaddrinfo",
        "runpytest_subprocess",  # pytester
        "spawn_pytest",
    }
)
#: railtrace objects whose use gives a marker: simulating a whole cluster is an end-to-end run.
OBJECT_MARKERS = ((write_capture, "e2e"), (chdb_store.ChdbStore, "chdb"), (open_store, "chdb"))
#: The gates whose literal marker argument classifies a test (gates.configured is not read:
#: it serves parametrized variants, which carry their marker on the parameter).
GATE_CALLS = (gates.require,)


def _in_tests(path: str | None) -> bool:
    return path is not None and _file_in_tests(path)


@functools.cache
def _file_in_tests(path: str) -> bool:
    return Path(path).resolve().is_relative_to(TESTS)


def _module_marker(name: str) -> str | None:
    for module, marker in MODULE_MARKERS.items():
        if name == module or name.startswith(module + "."):
            return marker
    return None


class Reach:
    """The markers one test's code implies, found by following the names its code objects
    use through the functions and classes of tests/ (never into railtrace or libraries)."""

    def __init__(self) -> None:
        self.markers: dict[str, str] = {}  # marker -> where it was found
        self._seen: set[int] = set()

    def _mark(self, marker: str, where: str) -> None:
        self.markers.setdefault(marker, where)

    def obj(self, value: Any) -> None:
        if id(value) in self._seen:
            return
        self._seen.add(id(value))
        if isinstance(value, types.ModuleType):
            marker = _module_marker(value.__name__)
            if marker:
                self._mark(marker, f"uses the {value.__name__} module")
            return
        for known, marker in OBJECT_MARKERS:
            if value is known:
                self._mark(marker, f"uses {value.__module__}.{value.__qualname__}")
                return
        module = getattr(value, "__module__", None)
        marker = _module_marker(module) if isinstance(module, str) else None
        if marker:
            self._mark(marker, f"uses {module}.{getattr(value, '__qualname__', repr(value))}")
            return
        if isinstance(value, staticmethod | classmethod):
            self.obj(value.__func__)
        elif isinstance(value, property):
            for accessor in (value.fget, value.fset, value.fdel):
                if accessor is not None:
                    self.obj(accessor)
        elif isinstance(value, type):
            if _in_tests(getattr(sys.modules.get(value.__module__), "__file__", None)):
                for member in vars(value).values():
                    self.obj(member)
        elif callable(value):
            self.function(value)

    def function(self, fn: Callable[..., Any]) -> None:
        fn = getattr(fn, "__func__", fn)
        while True:  # contextmanager, functools.wraps, functools.cache, fixture wrappers
            inner = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None)
            if not callable(inner) or inner is fn:
                break
            self.obj(inner)
            fn = inner
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType) and _in_tests(code.co_filename):
            self.code(code, getattr(fn, "__globals__", {}))

    def code(self, code: types.CodeType, namespace: dict[str, Any]) -> None:
        where = f"{Path(code.co_filename).name}:{code.co_firstlineno} ({code.co_name})"
        names = code.co_names
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const, namespace)
        if PROCESS_CALLS.intersection(names):
            self._mark("integration", f"{where} calls {sorted(PROCESS_CALLS.intersection(names))}")
        for name in names:  # imports inside a function: `import subprocess`, `from x import y`
            marker = _module_marker(name)
            if marker:
                self._mark(marker, f"{where} imports {name}")
            local = sys.modules.get(name)
            if local is not None and name not in namespace:
                self.obj_from(local, names)
        resolved = [namespace[n] for n in names if n in namespace]
        calls_gate = any(v in GATE_CALLS for v in resolved) or (
            any(v is gates for v in resolved) and "require" in names
        )
        if calls_gate:
            for const in code.co_consts:
                if isinstance(const, str) and const in gates.SERVICES:
                    self._mark(const, f"{where} calls gates.require({const!r}, ...)")
        for value in resolved:
            if isinstance(value, types.ModuleType):
                self.obj_from(value, names)
            self.obj(value)

    def obj_from(self, module: types.ModuleType, names: Iterable[str]) -> None:
        """`import kafka_support as ks; ks.stack(...)` or `from cli_support import invoke`
        inside a function: the attributes of a tests/ module that the code names."""
        if _in_tests(getattr(module, "__file__", None)):
            for attr in names:
                if hasattr(module, attr):
                    self.obj(getattr(module, attr))


def _fixture_functions(item: pytest.Function) -> Iterable[Callable[..., Any]]:
    defs = item._fixtureinfo.name2fixturedefs
    for name in item.fixturenames:
        for fixturedef in defs.get(name, ()):
            yield fixturedef.func


#: id(root) -> (root, the markers it implies): parametrized tests and shared fixtures are
#: read once (the root is kept so that its id is not reused).
_READ: dict[int, tuple[object, dict[str, str]]] = {}


def _read(root: object) -> dict[str, str]:
    if id(root) not in _READ:
        reach = Reach()
        reach.obj(root)
        _READ[id(root)] = (root, reach.markers)
    return _READ[id(root)][1]


def classify(item: pytest.Item) -> dict[str, str]:
    """The markers `item` implies, each with where it was found."""
    found: dict[str, str] = {}
    if isinstance(item, pytest.Function):
        roots: list[object] = [item.obj, *_fixture_functions(item)]
        if item.cls is not None:  # `self.helper()`: every method of the test's class
            roots.append(item.cls)
        for root in roots:
            for marker, where in _read(getattr(root, "__func__", root)).items():
                found.setdefault(marker, where)
    if E2E_MODULE.fullmatch(item.path.name):
        found.setdefault("e2e", f"{item.path.name} is an end-to-end module")
    return found


def pytest_configure(config: pytest.Config) -> None:
    registered = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    missing = sorted({"core", *gates.NOT_CORE} - registered)
    if missing:
        raise pytest.UsageError(f"tier markers not registered in pyproject.toml: {missing}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        explicit = {m.name for m in item.iter_markers()}
        if "core" in explicit:
            clash = sorted(explicit.intersection(gates.NOT_CORE))
            if clash:
                raise pytest.UsageError(f"{item.nodeid} is marked core and {clash}")
            continue
        found = classify(item)
        for marker in sorted(found):
            if marker not in explicit:
                item.add_marker(marker)
        if not explicit.intersection(gates.NOT_CORE) and not found:
            item.add_marker("core")


# --- the core tier's guard -----------------------------------------------------------------

#: Audit events a core test must not raise: starting a process, a network socket, a lookup.
FORBIDDEN = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.exec",
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
    }
)
#: What each refusal asks for.
REMEDY = "@pytest.mark.integration (processes, sockets), chdb (a store), or a gates.require(...)"


class CoreTierError(RuntimeError):
    """Raised into a core test that tried to start a process, use the network or open a
    chDB store."""


class Guard:
    """Armed around the setup and call of a core test. A forbidden event from the test's
    thread, or a thread started during the test, is recorded and refused (threads left running
    by earlier tests are not the core test's doing and are let be)."""

    def __init__(self) -> None:
        self.armed = False
        self.earlier_threads: frozenset[int] = frozenset()
        self.seen: list[str] = []

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.armed and event in FORBIDDEN:
            self.refuse(event, args)

    def refuse(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed or threading.get_ident() in self.earlier_threads:
            return
        stack = "".join(traceback.format_stack(limit=14)[:-2])
        thread = threading.current_thread().name
        self.seen.append(f"{event} {args!r:.300} (thread {thread})\n{stack}")
        raise CoreTierError(f"not in a core test: {event} {args!r:.200}; mark it {REMEDY}")

    def arm(self) -> None:
        main = threading.main_thread().ident
        self.earlier_threads = frozenset(
            t.ident for t in threading.enumerate() if t.ident is not None and t.ident != main
        )
        self.seen = []
        self.armed = True

    def disarm(self) -> list[str]:
        self.armed = False
        return self.seen


GUARD = Guard()
sys.addaudithook(GUARD.audit)


def _refusing(event: str, open_: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(*args: Any, **kw: Any) -> Any:
        GUARD.refuse(event, args)
        return open_(*args, **kw)

    return guarded


# chDB raises no audit event: every way railtrace and the tests open it goes through these.
chdb_store._open_session = _refusing("chdb.session.Session", chdb_store._open_session)
chdb_store._connect = _refusing("chdb.connect", chdb_store._connect)
chdb.connect = _refusing("chdb.connect", chdb.connect)


def _report(item: pytest.Item, seen: list[str]) -> str:
    return (
        f"{item.nodeid} is in the core tier but started a process, used the network or opened "
        f"a chDB store ({len(seen)} time(s)); mark it {REMEDY}. First:\n{seen[0]}"
    )


def _guarded(item: pytest.Item) -> Generator[None, Any, Any]:
    if item.get_closest_marker("core") is None:
        return (yield)
    GUARD.arm()
    try:
        result = yield
    except BaseException:
        seen = GUARD.disarm()
        if seen:
            pytest.fail(_report(item, seen), pytrace=False)
        raise
    seen = GUARD.disarm()
    if seen:
        pytest.fail(_report(item, seen), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    gates.current = item
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    gates.current = item
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    # Not guarded: the last test of a module also tears down the module's fixtures, which may
    # be other tiers' (a server of the module's integration tests, stopped after a core test).
    gates.current = item
    try:
        return (yield)
    finally:
        gates.current = None
