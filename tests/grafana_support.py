"""Running the Grafana dashboards of deploy/grafana as Grafana and its ClickHouse plugin do.

Every panel and variable query is expanded the way Grafana and the official ClickHouse data
source plugin (grafana-clickhouse-datasource, v4) expand it, then run in chDB on a store migrated
with railtrace's own DDL and filled through railtrace's own writers. A wrong table or column
name, a macro the plugin does not know or a variable the dashboard does not define fails here.

The expansion follows the plugin's documentation and source:
- macros: https://grafana.com/docs/plugins/grafana-clickhouse-datasource/latest/query-editor/#macros
  (backend: github.com/grafana/clickhouse-datasource pkg/macros/macros.go);
- `$__conditionalAll` and the default formatting of multi-value variables happen in the
  frontend before the backend sees the query (src/data/CHDatasource.ts,
  `applyConditionalAll` and `format`), documented at
  https://grafana.com/docs/plugins/grafana-clickhouse-datasource/latest/template-variables/;
- Grafana's own variable syntax and formats (`$var`, `${var}`, `${var:singlequote}`):
  https://grafana.com/docs/grafana/latest/dashboards/variables/variable-syntax/
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import chdb
import pyarrow as pa

from railtrace.store.chdb_store import ChdbStore

GRAFANA = Path(__file__).resolve().parents[1] / "deploy" / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
DATASOURCE = {"type": "grafana-clickhouse-datasource", "uid": "railtrace-clickhouse"}

# ------------------------------------------------------------------------------------------
# The expander
# ------------------------------------------------------------------------------------------

ALL = "$__all"  # what Grafana stores as the current value when "All" is selected


@dataclasses.dataclass(frozen=True)
class QueryContext:
    """What the plugin's backend takes from Grafana's request: the time range and interval."""

    time_from: datetime
    time_to: datetime
    interval: timedelta


def _unix(t: datetime) -> int:
    return int(t.timestamp())


def _unix_ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _to_datetime(t: datetime) -> str:  # timeToDateTime in macros.go
    return f"toDateTime({_unix(t)})"


def _to_datetime64(t: datetime) -> str:  # timeToDateTime64 in macros.go
    return f"fromUnixTimestamp64Milli({_unix_ms(t)})"


def _to_date(t: datetime) -> str:  # timeToDate in macros.go
    return f"toDate('{t.astimezone(UTC):%Y-%m-%d}')"


def _interval_s(ctx: QueryContext) -> int:
    return int(max(ctx.interval.total_seconds(), 1))


def _one(name: str, args: list[str]) -> str:
    if len(args) != 1:
        raise ValueError(f"$__{name} expects 1 argument, got {len(args)}")
    return args[0]


def _range(col: str, lo: str, hi: str) -> str:
    return f"{col} >= {lo} AND {col} <= {hi}"


def _date_time_filter(c: QueryContext, a: list[str]) -> str:
    if len(a) != 2:
        raise ValueError(f"$__dateTimeFilter expects 2 arguments, got {len(a)}")
    dates = _range(a[0], _to_date(c.time_from), _to_date(c.time_to))
    times = _range(a[1], _to_datetime(c.time_from), _to_datetime(c.time_to))
    return f"({dates}) AND ({times})"


# name -> (takes arguments, expansion); as in ClickHouseMacros, pkg/macros/macros.go.
MacroFn = Callable[[QueryContext, list[str]], str]
MACROS: dict[str, tuple[bool, MacroFn]] = {
    "timeFilter": (
        True,
        lambda c, a: _range(
            _one("timeFilter", a), _to_datetime(c.time_from), _to_datetime(c.time_to)
        ),
    ),
    "timeFilter_ms": (
        True,
        lambda c, a: _range(
            _one("timeFilter_ms", a), _to_datetime64(c.time_from), _to_datetime64(c.time_to)
        ),
    ),
    "dateFilter": (
        True,
        lambda c, a: _range(_one("dateFilter", a), _to_date(c.time_from), _to_date(c.time_to)),
    ),
    "dateTimeFilter": (True, _date_time_filter),
    "dt": (True, _date_time_filter),
    "timeFrom": (True, lambda c, a: f"{_one('timeFrom', a)} >= {_to_datetime(c.time_from)}"),
    "timeTo": (True, lambda c, a: f"{_one('timeTo', a)} <= {_to_datetime(c.time_to)}"),
    "fromTime": (False, lambda c, a: _to_datetime(c.time_from)),
    "toTime": (False, lambda c, a: _to_datetime(c.time_to)),
    "fromTime_ms": (False, lambda c, a: _to_datetime64(c.time_from)),
    "toTime_ms": (False, lambda c, a: _to_datetime64(c.time_to)),
    "interval_s": (False, lambda c, a: str(_interval_s(c))),
    "timeInterval": (
        True,
        lambda c, a: (
            f"toStartOfInterval(toDateTime({_one('timeInterval', a)}), "
            f"INTERVAL {_interval_s(c)} second)"
        ),
    ),
    "timeInterval_ms": (
        True,
        lambda c, a: (
            f"toStartOfInterval(toDateTime64({_one('timeInterval_ms', a)}, 3), "
            f"INTERVAL {max(int(c.interval.total_seconds() * 1000), 1)} millisecond)"
        ),
    ),
}
#: Expanded by the plugin's frontend, before the variables (CHDatasource.applyConditionalAll).
FRONTEND_MACROS = {"conditionalAll"}
KNOWN_MACROS = set(MACROS) | FRONTEND_MACROS

_MACRO = re.compile(r"\$__(\w+)")
# Grafana's variable syntax: $var, ${var}, ${var:format}, [[var]]
_VARIABLE = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)\]\]")


def macro_args(sql: str, open_paren: int) -> tuple[list[str], int]:
    """The comma-separated arguments of the call whose `(` is at `open_paren`, and the index
    just past its `)`; nested parentheses and quoted strings are kept whole."""
    depth, quote, start, args = 0, "", open_paren + 1, []
    i = open_paren
    while i < len(sql):
        ch = sql[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append(sql[start:i].strip())
                return args, i + 1
        elif ch == "," and depth == 1:
            args.append(sql[start:i].strip())
            start = i + 1
        i += 1
    raise ValueError(f"unbalanced parentheses after {sql[: open_paren + 1][-40:]!r}")


Selection = dict[str, str | list[str]]


def apply_conditional_all(sql: str, selection: Selection) -> str:
    """`$__conditionalAll(condition, $var)`: the condition, or `1=1` when $var is All or empty
    (last call first, as the plugin does)."""
    macro = "$__conditionalAll("
    while (at := sql.rfind(macro)) != -1:
        args, end = macro_args(sql, at + len(macro) - 1)
        if len(args) != 2:
            raise ValueError(f"$__conditionalAll expects 2 arguments, got {args}")
        ref = re.search(r"(?<=\$\{)\w+(?=\})|(?<=\$)\w+", args[1])
        if ref is None:
            raise ValueError(f"$__conditionalAll's second argument is not a variable: {args[1]}")
        value = selection.get(ref.group(0))
        if value is None:
            raise KeyError(f"variable ${ref.group(0)} is not defined")
        picked = value if isinstance(value, str) else ",".join(value)
        sql = sql[:at] + ("1=1" if picked in ("", ALL) else args[0]) + sql[end:]
    return sql


def _format(value: str | list[str], fmt: str | None) -> str:
    values = [value] if isinstance(value, str) else value
    if fmt is None:  # the plugin's `format`: multi-value -> 'a','b'; one value as it is
        return value if isinstance(value, str) else "'" + "','".join(value) + "'"
    if fmt == "singlequote":
        return ",".join("'" + v.replace("'", "\\'") + "'" for v in values)
    if fmt in ("raw", "csv"):
        return ",".join(values)
    raise ValueError(f"variable format {fmt!r} is not handled by this expander")


def apply_variables(sql: str, selection: Selection, options: dict[str, list[str]]) -> str:
    """Grafana's template variables (the `$__` macros are left for the backend)."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3) or m.group(4)
        if name.startswith("__"):
            return m.group(0)
        if name not in selection:
            raise KeyError(f"variable ${name} is not defined")
        value = selection[name]
        if value in (ALL, [ALL]):
            value = options[name]  # no custom all value: All means every option
        return _format(value, m.group(2))

    return _VARIABLE.sub(sub, sql)


def apply_macros(sql: str, ctx: QueryContext) -> str:
    """The backend's `$__` macros; an unknown one fails (the plugin would leave it in place
    and ClickHouse would reject the query)."""
    while (m := _MACRO.search(sql)) is not None:
        name = m.group(1)
        if name not in MACROS:
            raise ValueError(f"unknown macro $__{name}")
        takes_args, expand = MACROS[name]
        if takes_args:
            if m.end() >= len(sql) or sql[m.end()] != "(":
                raise ValueError(f"$__{name} needs arguments")
            args, end = macro_args(sql, m.end())
        else:
            args, end = [], m.end()
        sql = sql[: m.start()] + expand(ctx, args) + sql[end:]
    return sql


def expand(sql: str, selection: Selection, options: dict[str, list[str]], ctx: QueryContext) -> str:
    """The query ClickHouse receives: conditionalAll, then variables, then backend macros."""
    out = apply_macros(
        apply_variables(apply_conditional_all(sql, selection), selection, options), ctx
    )
    if "$" in out:
        raise ValueError(f"unexpanded reference left in {out}")
    return out


# ------------------------------------------------------------------------------------------
# Dashboards
# ------------------------------------------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield from panel.get("panels", [])
        if panel.get("type") != "row":
            yield panel


def variables(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return list(dashboard["templating"]["list"])


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, SQL) of every panel target and every query variable."""
    for var in variables(dashboard):
        if var["type"] == "query":
            yield f"variable {var['name']}", var["query"]
    for panel in panels(dashboard):
        for t in panel["targets"]:
            yield f"panel {panel['title']!r} {t['refId']}", t["rawSql"]
    for a in annotation_queries(dashboard):
        yield f"annotation {a['name']!r}", a["target"]["rawSql"]


def annotation_queries(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """The dashboard's annotation queries (the built-in Grafana one has no SQL)."""
    return [a for a in dashboard["annotations"]["list"] if "target" in a]


_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def min_interval(panel: dict[str, Any]) -> timedelta:
    """A panel's "Min interval" query option (`interval`, e.g. "10s"); zero when unset."""
    text = panel.get("interval") or ""
    if not text:
        return timedelta(0)
    m = _DURATION.fullmatch(text)
    if m is None:
        raise ValueError(f"min interval {text!r} is not a plain duration")
    return timedelta(seconds=int(m.group(1)) * _UNIT_S[m.group(2)])


def panel_context(ctx: QueryContext, panel: dict[str, Any]) -> QueryContext:
    """The interval Grafana sends for a panel: the one the zoom asks for, never below the
    panel's min interval (Grafana's interval calculation clamps to it)."""
    return dataclasses.replace(ctx, interval=max(ctx.interval, min_interval(panel)))


BY_UID = {load(p)["uid"]: p for p in DASHBOARDS}


class Grafana:
    """Queries as the data source runs them: in railtrace's database by default (its
    defaultDatabase), on a chDB connection of their own, since `USE` holds per connection."""

    def __init__(self, store: ChdbStore) -> None:
        self._conn = chdb.connect(str(store.data_dir))
        self._conn.query(f"USE {store.database}")

    def select(self, sql: str) -> pa.Table:
        table: pa.Table = self._conn.query(sql, "ArrowTable")
        return table

    def close(self) -> None:
        self._conn.close()


@dataclasses.dataclass(frozen=True)
class Run:
    """What a dashboard showed: each panel's and each annotation's result, by title or name."""

    panels: dict[str, pa.Table]
    annotations: dict[str, pa.Table]


def _time_type(grafana: Grafana, sql: str, column: str) -> str:
    # the ClickHouse type, which the plugin turns into Grafana's time field (chDB hands
    # DateTime to arrow as uint32)
    described = grafana.select(f"DESCRIBE ({sql})")
    types = dict(zip(described["name"].to_pylist(), described["type"].to_pylist(), strict=True))
    return str(types[column])


def run_dashboard(
    grafana: Grafana, dashboard: dict[str, Any], selection: Selection, ctx: QueryContext
) -> Run:
    """Every variable query, then every panel and annotation query of a dashboard, each at the
    interval Grafana would send it; checks the shape Grafana needs (a time column first in
    time series, a time and a text column in annotations)."""
    options: dict[str, list[str]] = {}
    selection = dict(selection)
    for var in variables(dashboard):
        if var["type"] == "custom":
            options[var["name"]] = var["query"].split(",")
        elif var["type"] == "textbox":
            selection.setdefault(var["name"], var["query"])
        elif var["type"] == "query":
            result = grafana.select(expand(var["query"], selection, options, ctx))
            options[var["name"]] = [str(v) for v in result.column(0).to_pylist()]
            assert options[var["name"]], f"variable {var['name']} has no options"
    shown = {}
    for panel in panels(dashboard):
        for t in panel["targets"]:
            sql = expand(t["rawSql"], selection, options, panel_context(ctx, panel))
            table = grafana.select(sql)
            if t["format"] == 0:
                assert table.column_names[0] == "time", panel["title"]
                assert re.fullmatch(r"DateTime(64)?(\(.*\))?", _time_type(grafana, sql, "time"))
                times = table.column("time").to_pylist()
                assert times == sorted(times), panel["title"]
            shown[panel["title"]] = table
    marks = {}
    for a in annotation_queries(dashboard):
        sql = expand(a["target"]["rawSql"], selection, options, ctx)
        table = grafana.select(sql)
        assert {"time", "text"} <= set(table.column_names), a["name"]
        assert re.fullmatch(r"DateTime(64)?(\(.*\))?", _time_type(grafana, sql, "time"))
        marks[a["name"]] = table
    return Run(shown, marks)
