"""Cabling plans in NetBox's cable bulk-import CSV, and the NICs' addresses in `hosts.csv`.

Parsing takes text, not paths, so it is pure; a bad row is reported with its line number and
skipped, and the rest of the plan is kept.
"""

from __future__ import annotations

import csv
import io
import ipaddress
from dataclasses import dataclass, field

from railtrace.topology.ends import Endpoint

CABLE_COLUMNS = (
    "side_a_device",
    "side_a_type",
    "side_a_name",
    "side_b_device",
    "side_b_type",
    "side_b_name",
)
INTERFACE_TYPE = "dcim.interface"
HOSTS_COLUMNS = ("device", "interface", "ip")


@dataclass(frozen=True, slots=True)
class Cable:
    a: Endpoint
    b: Endpoint


@dataclass(slots=True)
class CablePlan:
    cables: list[Cable] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _rows(
    text: str, required: tuple[str, ...], what: str
) -> tuple[list[tuple[int, dict[str, str]]], list[str]]:
    """The rows of a CSV, one per physical line: no field of these files spans lines, so a row
    that does not parse (an unclosed quote, a field over the csv module's size limit) is one
    error, and the rows after it are still read; a quote left open no longer swallows every
    row up to the next quote."""
    lines = text.lstrip("\ufeff").splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.strip()), None)
    header = [] if header_at is None else [h.strip() for h in _fields(lines[header_at]) or []]
    missing = [c for c in required if c not in header]
    if missing:
        return [], [f"{what}: missing column(s) {', '.join(missing)}; header is {header}"]
    twice = [c for c in required if header.count(c) > 1]
    if twice:
        # A row would silently take one of the two values: refuse rather than guess which.
        where = "; ".join(
            f"{c!r} is column {' and '.join(str(i + 1) for i, h in enumerate(header) if h == c)}"
            for c in twice
        )
        return [], [f"{what}: a column appears twice in the header ({where}); keep one"]
    assert header_at is not None
    rows: list[tuple[int, dict[str, str]]] = []
    errors: list[str] = []
    for number, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        if not line.strip():
            continue
        fields = _fields(line)
        if fields is None:
            errors.append(
                f"{what} line {number}: unreadable CSV (an unclosed quote, or a field "
                "over 128 KiB); skipped"
            )
            continue
        values = {h: (fields[i].strip() if i < len(fields) else "") for i, h in enumerate(header)}
        rows.append((number, values))
    return rows, errors


def _fields(line: str) -> list[str] | None:
    """One line's fields, or None when it is not one CSV row."""
    try:
        return next(csv.reader([line], strict=True), [])
    except csv.Error:
        return None


def parse_cables_csv(text: str) -> CablePlan:
    """Read a NetBox cable import; extra columns are ignored, non-interface cables skipped.

    >>> plan = parse_cables_csv(
    ...     "side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name\\n"
    ...     "node1,dcim.interface,mlx5_0,leaf1,dcim.interface,swp1\\n")
    >>> plan.cables[0].a, plan.errors
    (Endpoint(device='node1', interface='mlx5_0'), [])
    """
    rows, errors = _rows(text, CABLE_COLUMNS, "cables.csv")
    plan = CablePlan(errors=errors)
    seen: dict[Endpoint, int] = {}
    for line, row in rows:
        if not any(row.values()):
            continue
        if row["side_a_type"] != INTERFACE_TYPE or row["side_b_type"] != INTERFACE_TYPE:
            plan.errors.append(
                f"cables.csv line {line}: not an interface-to-interface cable "
                f"({row['side_a_type']!r} / {row['side_b_type']!r}); skipped"
            )
            continue
        a = Endpoint(row["side_a_device"], row["side_a_name"])
        b = Endpoint(row["side_b_device"], row["side_b_name"])
        names = (a.device, a.interface, b.device, b.interface)
        if not all(names):
            plan.errors.append(f"cables.csv line {line}: empty device or interface name; skipped")
            continue
        if not all(n.isprintable() for n in names):
            plan.errors.append(
                f"cables.csv line {line}: a device or interface name holds control "
                "characters; skipped"
            )
            continue
        if a == b:
            plan.errors.append(
                f"cables.csv line {line}: cable from {a.device}:{a.interface} to itself"
            )
            continue
        clash = next((e for e in (a, b) if e in seen), None)
        if clash is not None:
            plan.errors.append(
                f"cables.csv line {line}: {clash.device}:{clash.interface} is already cabled "
                f"on line {seen[clash]}; skipped"
            )
            continue
        seen[a] = seen[b] = line
        plan.cables.append(Cable(a, b))
    return plan


def parse_hosts_csv(text: str) -> tuple[dict[str, Endpoint], list[str]]:
    """Map NIC addresses to (host, RDMA device) so a NCCL error naming a peer IP lands on the graph.

    >>> parse_hosts_csv("device,interface,ip\\nnode1,mlx5_0,10.0.0.1\\n")
    ({'10.0.0.1': Endpoint(device='node1', interface='mlx5_0')}, [])
    """
    rows, errors = _rows(text, HOSTS_COLUMNS, "hosts.csv")
    out: dict[str, Endpoint] = {}
    for line, row in rows:
        raw_ip = row["ip"].split("/")[0]
        try:
            ip = str(ipaddress.ip_address(raw_ip))
        except ValueError:
            errors.append(f"hosts.csv line {line}: {row['ip']!r} is not an IP address; skipped")
            continue
        if not row["device"] or not row["interface"]:
            errors.append(f"hosts.csv line {line}: empty device or interface; skipped")
            continue
        out[ip] = Endpoint(row["device"], row["interface"])
    return out, errors


def format_cables_csv(plan: CablePlan) -> str:
    """The plan as a NetBox cable bulk-import CSV (the inverse of `parse_cables_csv`).

    >>> plan = CablePlan([Cable(Endpoint("n1", "mlx5_0"), Endpoint("leaf1", "swp1"))])
    >>> parse_cables_csv(format_cables_csv(plan)).cables == plan.cables
    True
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CABLE_COLUMNS, "type", "status"])
    for cable in plan.cables:
        writer.writerow(
            [
                cable.a.device,
                INTERFACE_TYPE,
                cable.a.interface,
                cable.b.device,
                INTERFACE_TYPE,
                cable.b.interface,
                "mmf-om4",
                "connected",
            ]
        )
    return buf.getvalue()
