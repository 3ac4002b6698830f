"""Which NIC a RoCE GID belongs to: what turns NCCL's `localGid` / `remoteGids` into a host's NIC.

On RoCE, NCCL's completion errors name the peer by its socket address, often the bootstrap
interface rather than the RDMA NIC; the GIDs are the only per-NIC identity the line carries.
Two sources map them, both optional:

- `hosts.csv`: a RoCE v2 GID is an address of the NIC's netdev, the IPv6 one as it is or an
  IPv4 one as `::ffff:a.b.c.d`; so every NIC address the file lists maps its GID already.
- `show_gids` (MLNX_OFED / DOCA) output of a host, one file per host: every GID of every NIC,
  including the link-local ones (RoCE v1, or v2 without an address) no address file holds.

A GID in both resolves by its host's `show_gids` table. A GID neither knows maps to nothing:
the record keeps it as printed, and nothing is invented. Pure: text in, tables out.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from railtrace.topology.ends import Endpoint

#: A show_gids row: DEV PORT INDEX GID [IPv4] VER NETDEV.
_MIN_FIELDS = 5


def gid_key(text: str) -> str | None:
    """A GID in one spelling (IPv6's full form), or None for text that is no GID.

    >>> gid_key("::ffff:172.19.0.60") == gid_key("0000:0000:0000:0000:0000:ffff:ac13:003c")
    True
    >>> gid_key("mlx5_0") is None
    True
    """
    try:
        return ipaddress.IPv6Address(text.strip().strip("[]")).exploded
    except ValueError:
        return None


def address_of_gid(gid: str) -> str | None:
    """The address a RoCE v2 GID stands for, spelled as hosts.csv keys are read.

    >>> address_of_gid("::ffff:10.0.0.1"), address_of_gid("fd00:1148::3:ff22")
    ('10.0.0.1', 'fd00:1148::3:ff22')
    """
    key = gid_key(gid)
    if key is None:
        return None
    address = ipaddress.IPv6Address(key)
    return str(address.ipv4_mapped or address)


def parse_show_gids(text: str) -> tuple[dict[str, str], list[str]]:
    """GID (as `gid_key` spells it) -> RDMA device, from one host's `show_gids` output; and
    what was skipped, and why. A GID the table gives two devices is left out: it cannot say
    which NIC a line meant.

    >>> parse_show_gids("DEV PORT INDEX GID IPv4 VER DEV\\n"
    ...                 "mlx5_2 1 3 0000:0000:0000:0000:0000:ffff:0a00:0001 10.0.0.1 v2 eth2\\n")
    ({'0000:0000:0000:0000:0000:ffff:0a00:0001': 'mlx5_2'}, [])
    """
    found: dict[str, str] = {}
    clashes: set[str] = set()
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] in ("DEV", "---") or fields[0].startswith("n_gids_found"):
            continue
        key = gid_key(fields[3]) if len(fields) >= _MIN_FIELDS else None
        if key is None or not (fields[1].isdigit() and fields[2].isdigit()):
            errors.append(f"line {number}: not a show_gids row (DEV PORT INDEX GID ...); skipped")
            continue
        if found.setdefault(key, fields[0]) != fields[0]:
            clashes.add(key)
    for key in sorted(clashes):
        errors.append(f"GID {key} is listed for {found.pop(key)} and another device; left out")
    return found, errors


def gid_table(tables: Mapping[str, str]) -> tuple[dict[str, Endpoint], list[str]]:
    """GID -> (host, NIC) from each host's `show_gids` output (`tables`: host -> text); and
    what was skipped, and why. A GID two hosts claim is left out, as within one table.
    """
    out: dict[str, Endpoint] = {}
    clashes: set[str] = set()
    errors: list[str] = []
    for host in sorted(tables):
        found, bad = parse_show_gids(tables[host])
        errors += [f"gids/{host}.txt: {reason}" for reason in bad]
        for key, nic in found.items():
            if out.setdefault(key, Endpoint(host, nic)) != Endpoint(host, nic):
                clashes.add(key)
    for key in sorted(clashes):
        first = out.pop(key)
        errors.append(
            f"GID {key} is listed for {first.device}:{first.interface} and another host; left out"
        )
    return out, errors
