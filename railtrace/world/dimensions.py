"""What real clusters vary, and the draw of one world from it.

Every incident draws each dimension from its own stream of one seeded RNG, so a seed names a
world exactly, and fixing one dimension (say `routing="spray"`) leaves the others' draws as
they were. The space, with why each range:

- fabric: scalable units of 4-32 nodes; 2-16 spines per plane; 2 tiers, or 3 (pods of scalable
  units under super-spines) once there are four units or more; one 800G plane per GPU or two
  400G planes (each NIC's two ports on two leaves of two planes, as ConnectX-8 splits); leaf
  uplinks non-blocking (1:1) or oversubscribed 2:1.
- routing: `ecmp` (each flow's 5-tuple hashed at every switch; `polarised` when every switch
  uses the same hash, so a spine re-picks what the leaf picked), `spray` (adaptive routing,
  Spectrum-X: every packet of every flow over every uplink), `ib` (InfiniBand, the subnet
  manager's deterministic destination-based routes).
- switches: Cumulus (swpN), SONiC (EthernetN, 8 lanes a port), EOS (EthernetN/1) or NX-OS
  (Ethernet1/N) naming; gnmic json or event output; sampling every 1-60 s (5-60 s above
  FAST_SAMPLING_NODES); clocks up to a few
  seconds off; now and then one switch whose telemetry stops, one whose counters are cleared
  or that reboots; pre-FEC symbol and corrected-FEC counts on every healthy PAM4 link.
- traffic: jobs' bursty compute/communicate steps, other tenants' flows and storage and
  checkpoint traffic on shared uplinks.
- logs: Megatron, torchtitan, NeMo 2, DeepSpeed's throughput timer, the HF Trainer's tqdm
  bar (its renders kept on one line until its log dict's newline) or a trainer that prints no
  step line (Lightning's bar is not drawn yet); a report every 1-100 steps
  of 0.5-15 s; NCCL_DEBUG INFO, WARN or unset; stamps in UTC, in the site's local time with or
  without its offset, as journald or a shipper prints them; srun `--label` prefixes; shippers
  stamping up to a few seconds late.
- faults: link down, flap, frame errors at ratios 1e-8 to 1e-4, a port renegotiated at half
  speed, a NIC or GPU failing, a PFC storm, an application hang (no fabric cause), a checkpoint
  pause (no fault at all), two at once, or nothing; on host cables, leaf uplinks or spine
  links.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass
from typing import Any

#: Fault kinds and their shares of incidents.
FAULTS: dict[str, float] = {
    "link-down": 0.12,
    "flap": 0.08,
    "errors": 0.16,
    "speed-down": 0.06,
    "nic-down": 0.07,
    "gpu-xid": 0.08,
    "pfc-storm": 0.07,
    "app-hang": 0.07,
    "checkpoint": 0.07,
    "several": 0.08,
    "none": 0.06,
    "reset-only": 0.08,
}
#: Where a link fault strikes, by share (a host's cable, a leaf's uplink, a spine's uplink).
PLACES = {"host": 0.45, "uplink": 0.4, "spine": 0.15}
VENDORS = ("cumulus", "sonic", "eos", "nxos")
ROUTINGS = ("ecmp", "ecmp-polarised", "spray", "ib")
TRAINERS = ("megatron", "torchtitan", "nemo", "deepspeed", "hf", "silent")
STAMPS = ("utc-shipper", "local-naive", "local-offset", "journald")
NCCL_DEBUG = ("INFO", "WARN", "unset")
#: Sampling every 1 or 2 s is drawn only up to this size: a 288-node fabric sampled every second
#: writes some 20 million values in five minutes, too many to replay a thousand of.
FAST_SAMPLING_NODES = 64


@dataclass(frozen=True, slots=True)
class Dimensions:
    """One world's draw. `nodes` is the cluster's size; the fault's own draws (which job,
    which link, when) are the incident's, not a dimension."""

    nodes: int
    su_nodes: int
    planes: int
    spines: int
    tiers: int
    oversubscription: int
    routing: str
    vendor: str
    gnmic_format: str
    sample_s: int
    clock_skew_s: float
    trainer: str
    report_every: int
    step_s: float
    stamp: str
    srun_label: bool
    nccl_debug: str
    shipper_delay_s: float
    fault: str
    place: str
    error_ratio: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def buckets(self) -> dict[str, str]:
        """The dimensions the accuracy tables are cut by, each as a short label."""
        return {
            "routing": self.routing,
            "planes": f"{self.planes}x{800 // self.planes}G",
            "tiers": f"{self.tiers}-tier",
            "sampling": _bucket(self.sample_s, (1, 5, 15, 30, 60), "s"),
            "trainer": self.trainer,
            "cadence": _bucket(self.report_every, (1, 10, 50, 100), " steps"),
            "step": _bucket(self.step_s, (1, 4, 15), " s"),
            "stamps": self.stamp,
            "nccl_debug": self.nccl_debug,
            "vendor": self.vendor,
            "place": self.place if self.fault in LINK_FAULTS else "-",
        }


#: The dimensions the accuracy tables are cut by (`Dimensions.buckets`), in print order.
DIMENSION_NAMES = (
    "place",
    "routing",
    "planes",
    "tiers",
    "vendor",
    "sampling",
    "trainer",
    "cadence",
    "step",
    "stamps",
    "nccl_debug",
)
#: Faults that strike a link (and so have a place).
LINK_FAULTS = frozenset({"link-down", "flap", "errors", "speed-down", "pfc-storm", "nic-down"})


def _bucket(value: float, edges: tuple[float, ...], unit: str) -> str:
    """`value` as the range of `edges` it falls in: "<=1s", "2-5s", ..."""
    low = None
    for edge in edges:
        if value <= edge:
            if low is None:
                return f"<={edge:g}{unit}"
            return f"{low:g}-{edge:g}{unit}"
        low = edge
    return f">{edges[-1]:g}{unit}"


def _weighted(rng: random.Random, shares: dict[str, float]) -> str:
    return rng.choices(list(shares), weights=list(shares.values()))[0]


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _su_nodes(rng: random.Random, nodes: int | None) -> tuple[int, int]:
    """(nodes per scalable unit, nodes): a given size keeps the units that divide it."""
    sizes = (4, 8, 16, 32)
    if nodes is None:
        su = rng.choice(sizes)
        units = max(rng.randint(1, max(1, min(8, 128 // su))), -(-8 // su))
        return su, su * units
    fits = [s for s in sizes if nodes % s == 0] or [nodes]
    return rng.choice(fits), nodes


def draw(seed: int, nodes: int | None = None, **fixed: Any) -> Dimensions:
    """The world of `seed` (`nodes` None: a random size); `fixed` pins dimensions by name."""
    streams = {name: random.Random(f"{seed}-{name}") for name in Dimensions.__slots__}
    su, n = _su_nodes(streams["su_nodes"], nodes)
    if n % su:
        su = n  # a size no unit divides is one unit
    units = n // su
    planes = streams["planes"].choice((1, 1, 2))
    over = streams["oversubscription"].choice((1, 1, 1, 2))
    uplinks = max(1, su // over)
    spines = streams["spines"].choice([s for s in (2, 4, 8, 16) if s <= uplinks] or [1])
    tiers = 3 if units >= 4 and streams["tiers"].random() < 0.4 else 2
    fault = _weighted(streams["fault"], FAULTS)
    drawn = Dimensions(
        nodes=n,
        su_nodes=su,
        planes=planes,
        spines=spines,
        tiers=tiers,
        oversubscription=over,
        routing=streams["routing"].choice(ROUTINGS),
        vendor=streams["vendor"].choice(VENDORS),
        gnmic_format=streams["gnmic_format"].choice(("json", "event")),
        sample_s=streams["sample_s"].choice(
            (1, 2, 5, 10, 10, 10, 15, 30, 60)
            if n <= FAST_SAMPLING_NODES
            else (5, 10, 10, 15, 30, 60)
        ),
        clock_skew_s=round(streams["clock_skew_s"].uniform(0, 4), 3),
        trainer=streams["trainer"].choice(TRAINERS),
        report_every=streams["report_every"].choice((1, 5, 10, 10, 20, 50, 100)),
        step_s=round(_log_uniform(streams["step_s"], 0.5, 15), 3),
        stamp=streams["stamp"].choice(STAMPS),
        srun_label=streams["srun_label"].random() < 0.5,
        nccl_debug=streams["nccl_debug"].choice(NCCL_DEBUG),
        shipper_delay_s=round(streams["shipper_delay_s"].uniform(0, 3), 3),
        fault=fault,
        place=_weighted(streams["place"], PLACES),
        error_ratio=_log_uniform(streams["error_ratio"], 1e-8, 1e-4),
    )
    if fixed:
        unknown = set(fixed) - set(Dimensions.__slots__)
        if unknown:
            raise ValueError(f"no such dimension: {', '.join(sorted(unknown))}")
        values = drawn.as_json() | fixed
        drawn = Dimensions(**values)
    return drawn
