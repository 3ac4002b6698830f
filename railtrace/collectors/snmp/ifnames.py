"""What the poller learns and the trap receiver needs: ifIndex -> ifName, address -> device.

A linkDown trap carries only an ifIndex; the pipeline keys interfaces by name, so traps are
named from the last poll of the same device. One shared object, filled by the poller.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType


class IfNameCache:
    """ifnames per device and device names per agent address, as last seen by the poller."""

    def __init__(self) -> None:
        self._ifnames: dict[str, Mapping[str, str]] = {}
        self._devices: dict[str, str] = {}

    def remember_ifnames(self, device: str, ifnames: Mapping[str, str]) -> None:
        """Replace the device's map: an ifIndex can be reused after a line card swap."""
        if ifnames:
            self._ifnames[device] = MappingProxyType(dict(ifnames))

    def ifnames(self, device: str) -> Mapping[str, str]:
        return self._ifnames.get(device, MappingProxyType({}))

    def remember_address(self, address: str, device: str) -> None:
        """A trap comes from an IP address; polls know which device that address is."""
        self._devices[address] = device

    def device_for(self, address: str) -> str | None:
        return self._devices.get(address)
