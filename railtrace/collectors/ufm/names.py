"""InfiniBand names (node GUID, port number) to railtrace's (device, interface), from a CSV.

UFM names a switch port by its node GUID and IB port number; the pipeline and `cables.csv`
name it by device and interface. The mapping file says which is which:

    node_guid,device,port_num,interface
    0x0002c90300f172a0,ib-leaf-01,,
    0x0002c90300f172a0,ib-leaf-01,1,sw1p1

A row without `port_num` names the device of a GUID; a row with one gives that port an
explicit interface name, and every other port is named by the interface template. GUIDs are
compared normalised (lower case, no `0x`, no leading zeros), because UFM writes the same GUID
both ways (`source="0x0002c9..."`, `node_guid="2c9..."`). A bad file is refused whole, every
problem listed with its line number: a switch named wrongly is worse than one not collected.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from railtrace.streams.telemetry.xpath import device_of

REQUIRED_COLUMNS = ("node_guid", "device")
PORT_COLUMNS = ("port_num", "interface")
_HEX = re.compile(r"[0-9a-f]{1,16}")
# Characters that would change the meaning of an xpath key value or of a gnmic `source`.
_NAME_FORBIDDEN = re.compile(r"[\[\]\s]")


class SwitchNamesError(ValueError):
    """The mapping file is unusable; the message lists every problem found in it."""


def normalise_guid(text: str) -> str:
    """A GUID as compared here: lower case, without `0x` and leading zeros.

    >>> normalise_guid("0x0002C90300F172A0"), normalise_guid("2c90300f172a0")
    ('2c90300f172a0', '2c90300f172a0')
    """
    guid = text.strip().lower().removeprefix("0x").lstrip("0") or "0"
    if not _HEX.fullmatch(guid):
        raise ValueError(f"not a 64-bit hex GUID: {text!r}")
    return guid


@dataclass(frozen=True, slots=True)
class SwitchNames:
    """GUID -> device, (GUID, port) -> interface, and the template for the ports not listed."""

    devices: dict[str, str]
    ports: dict[tuple[str, int], str]
    template: str

    def device(self, guid: str) -> str | None:
        """The device of a normalised GUID; None when the file does not name it."""
        return self.devices.get(guid)

    def interface(self, guid: str, port_num: int) -> str:
        return self.ports.get((guid, port_num)) or self.template.format(port_num=port_num)


def _name_problem(what: str, name: str) -> str | None:
    if not name:
        return f"empty {what}"
    if _NAME_FORBIDDEN.search(name):
        return f"{what} {name!r} contains whitespace or brackets"
    if what == "device" and device_of(name) != name:
        return f"device {name!r} would be read as host:port; use a name without a colon"
    return None


def parse_switches_csv(text: str, template: str, what: str = "switches.csv") -> SwitchNames:
    """Read the mapping (module docstring); SwitchNamesError lists every bad line.

    >>> names = parse_switches_csv(
    ...     "node_guid,device,port_num,interface\\n0x0002c90300f172a0,leaf1,,\\n"
    ...     "2c90300f172a0,leaf1,3,sw2p1\\n", "{port_num}")
    >>> names.device("2c90300f172a0"), names.interface("2c90300f172a0", 3), names.interface(
    ...     "2c90300f172a0", 4)
    ('leaf1', 'sw2p1', '4')
    """
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise SwitchNamesError(f"{what}: missing column(s) {', '.join(missing)}; header {header}")
    reader.fieldnames = header
    devices: dict[str, str] = {}
    ports: dict[tuple[str, int], str] = {}
    lines: dict[str, int] = {}  # where each GUID's device was first named
    errors: list[str] = []

    def bad(line: int, problem: str) -> None:
        errors.append(f"{what} line {line}: {problem}")

    try:
        for row in reader:
            line = reader.line_num
            values = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str)}
            if not any(values.values()):
                continue
            try:
                guid = normalise_guid(values["node_guid"])
            except ValueError as exc:
                bad(line, str(exc))
                continue
            device = values["device"]
            if problem := _name_problem("device", device):
                bad(line, problem)
                continue
            if devices.setdefault(guid, device) != device:
                bad(line, f"GUID {guid} is {device!r} here, {devices[guid]!r} on line "
                    f"{lines[guid]}")  # fmt: skip
                continue
            lines.setdefault(guid, line)
            port_text, interface = values.get("port_num", ""), values.get("interface", "")
            if not port_text and not interface:
                continue
            if not port_text.isdecimal() or not 1 <= int(port_text) <= 255:
                bad(line, f"port_num {port_text!r} is not an IB port number (1-255)")
                continue
            if problem := _name_problem("interface", interface):
                bad(line, problem)
                continue
            if ports.setdefault((guid, int(port_text)), interface) != interface:
                bad(line, f"GUID {guid} port {port_text} named twice")
    except csv.Error as exc:
        bad(reader.line_num, f"unreadable CSV ({exc})")
    errors += _collisions(devices, ports)
    if errors:
        raise SwitchNamesError("\n".join(errors))
    return SwitchNames(devices, ports, template)


def _collisions(devices: dict[str, str], ports: dict[tuple[str, int], str]) -> list[str]:
    """Names two ports would share: explicit rows naming one interface twice on a device, and
    GUIDs sharing a device (a director's ASICs) whose ports fall back to the template."""
    errors: list[str] = []
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    for (guid, port), interface in ports.items():
        first = seen.setdefault((devices[guid], interface), (guid, port))
        if first != (guid, port):
            errors.append(
                f"device {devices[guid]!r} interface {interface!r} is given to GUID {first[0]} "
                f"port {first[1]} and GUID {guid} port {port}"
            )
    by_device: dict[str, list[str]] = {}
    for guid, device in devices.items():
        by_device.setdefault(device, []).append(guid)
    for device, guids in sorted(by_device.items()):
        if len(guids) > 1:
            errors.append(
                f"device {device!r} is named by GUIDs {', '.join(sorted(guids))}: their port "
                "numbers would collide under one template; name each GUID its own device"
            )
    return errors


def load_switches(path: Path, template: str) -> SwitchNames:
    """Read the mapping file at `path` (OSError if it cannot be read)."""
    return parse_switches_csv(path.read_text(encoding="utf-8"), template, what=str(path))
