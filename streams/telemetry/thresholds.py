"""Where link health draws its lines: every threshold, window and floor `LinkHealth` judges by,
one typed section of the attribution profile (`attribution.health`), each with why it is
what it is."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Thresholds(BaseModel):
    """When a link is anomalous: the `attribution.health` section of the settings. The
    defaults suit a 100-400G RoCE/Ethernet rail fabric. (SPEED_DOWN has no threshold: any
    speed below the highest the port negotiated.)"""

    model_config = ConfigDict(frozen=True, extra="forbid")

    flap_changes: int = Field(
        default=3,
        ge=2,
        description="Oper-status changes (or carrier-transitions increments) within "
        "flap_window_s that make a FLAP.",
    )
    flap_window_s: float = Field(default=60.0, gt=0, description="See flap_changes.")
    error_rate_per_s: float = Field(
        default=1.0,
        ge=0,
        description="In/out errors or FCS errors (frames lost) need at least this many a "
        "second for an ERROR_BURST, so a few errors on a nearly idle link (a large share of "
        "few frames) do not fire. A link whose traffic is not known yet is judged on this "
        "alone.",
    )
    error_ratio_min: float = Field(
        default=1e-7,
        gt=0,
        description="...and, on a link whose traffic is known, errors per frame it carries of at "
        "least this: about three times the frame error ratio 802.3's worst allowed bit error "
        "ratio (1e-12) gives 4 KB frames, so a count that only rose with the traffic is none.",
    )
    error_ratio_rise: float = Field(
        default=10.0,
        gt=1,
        description="...and at least this many times the link's own error ratio, once "
        "error_baseline_samples samples have taught it: a link that always loses a few frames "
        "in a hundred million is that link's normal.",
    )
    error_baseline_samples: int = Field(
        default=6,
        ge=1,
        description="Samples of a link's error ratio below the bar before its own level is "
        "trusted; until then only error_ratio_min applies.",
    )
    error_baseline_alpha: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="Smoothing of a link's own error ratio: an EWMA that learns only from "
        "samples that were no burst.",
    )
    frame_bytes: float = Field(
        default=4200.0,
        gt=0,
        description="Bytes per frame to count a link's frames from its octets: RoCE's 4096-byte "
        "MTU with its headers (smaller frames make the ratio seem higher, never lower).",
    )
    symbol_error_rise: float = Field(
        default=100.0,
        gt=1,
        description="Pre-FEC errors (symbol errors, corrected codewords or bits, each series "
        "on its own) make an ERROR_BURST only at this many times the link's own level: a "
        "healthy 200/400/800G PAM4 link shows them all the time (the FEC corrects them), "
        "so their count says nothing; a hundredfold rise says the link is degrading before "
        "frames are lost.",
    )
    symbol_error_floor_per_s: float = Field(
        default=1000.0,
        ge=0,
        description="...and at least this many a second, so a link whose own level is nearly "
        "zero (NRZ, or a very clean optic) does not fire on a few.",
    )
    symbol_baseline_samples: int = Field(
        default=6,
        ge=1,
        description="Samples of a link's pre-FEC errors before its level is trusted; none fire "
        "before.",
    )
    symbol_baseline_alpha: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="Smoothing of a link's pre-FEC error level: an EWMA that learns only from "
        "samples below a tenth of the rise (symbol_error_rise / 10 times the level, and the "
        "floor), so a link degrading step by step does not teach it that degraded is normal.",
    )
    fec_uncorrectable_per_s: float = Field(
        default=0.0,
        ge=0,
        description="FEC_UNCORRECTABLE when above this: any uncorrectable codeword is a "
        "corrupted frame.",
    )
    pfc_pause_per_s: float = Field(
        default=5000.0,
        gt=0,
        description="PFC pause frames per second, summed over priorities, for a PFC_STORM: a "
        "sustained rate at which a lossless class spends much of its time paused.",
    )
    rx_power_low_dbm: float = Field(
        default=-10.0,
        description="RX_POWER_LOW at or below this: the edge of what short-reach optics "
        "receive reliably; tune it per optic type.",
    )
    traffic_drop_fraction: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="TRAFFIC_DROP when in/out octets fall below this fraction of their EWMA "
        "baseline...",
    )
    traffic_min_baseline_bytes_per_s: float = Field(
        default=1e8,
        ge=0,
        description="...and that baseline was at least this: a busy link went quiet.",
    )
    traffic_ewma_alpha: float = Field(
        default=0.2, gt=0, le=1, description="The traffic baseline's smoothing."
    )
    traffic_warmup_samples: int = Field(
        default=3, ge=1, description="Samples the traffic baseline needs before it is trusted."
    )
    rearm_quiet_s: float = Field(
        default=60.0,
        ge=0,
        description="How long a condition must be seen clear before it can fire again.",
    )
