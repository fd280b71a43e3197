"""The catalog: GPUs, model presets, cloud offers, server parts and facility defaults.

Loaded from ``catalog.yaml`` (shipped inside the package) and validated with pydantic; every
figure from the world carries ``source`` and ``as_of``. A user overlay (``--catalog FILE``)
is merged on top: list entries override by ``id`` (field by field), facility values by key.

No ``from __future__ import annotations`` (issue 16): pydantic would compile every field's annotation
string at each start (see core/models.py).
"""

import math
import os
import sys
from collections import Counter
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpuwiz.core import cache, gcpause
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.hardware import PerfEntry
from gpuwiz.core.models import VisionArch
from gpuwiz.core.stacks import StackEntry
from gpuwiz.core.units import HOURS_PER_MONTH
from gpuwiz.core.yamlio import LineMap, parse, read_text
from gpuwiz.i18n import _

Segment = Literal["consumer", "workstation", "datacenter"]


# Physical ranges of catalog numbers (a check on overlays: a GPU of inf GiB, a PSU of 0 W or a
# subnormal NVLink bandwidth is a typo, not hardware). Inclusive (smallest, largest) per class and
# field; fields in _ZERO_OK may also be exactly 0 ("none"). Every number field of every entry must
# be finite and >= 0 in any case (allow_inf_nan=False + the check below).
_RANGES: dict[str, dict[str, tuple[float, float]]] = {
    "GPU": {
        "memory_gib": (1, 4096), "memory_bandwidth_gbps": (1, 1e5), "fp32_tflops": (0.01, 1e5),
        "tf32_tflops": (0.01, 1e5), "bf16_tflops": (0.01, 1e5), "fp16_tflops": (0.01, 1e5),
        "fp8_tflops": (0.01, 1e5), "tdp_w": (1, 10_000), "nvlink_gbps": (1, 1e5),
        "price_new_usd": (1, 1e7), "price_used_usd": (1, 1e7), "mig_max_instances": (1, 64),
    },
    "ModelPreset": {
        "params_b": (1e-6, 1e5), "layers": (1, 10_000), "hidden": (1, 1e6), "heads": (1, 1e5),
        "kv_heads": (1, 1e5), "ffn": (1, 1e7), "vocab": (1, 1e8), "seq_len": (1, 4_194_304),
        "experts": (1, 10_000), "top_k": (1, 10_000), "train_gflops_per_sample": (1e-6, 1e9),
        "act_gib_per_sample": (1e-6, 1e4), "resolution": (8, 16_384), "sample_kb": (1e-3, 1e9),
        "default_micro_batch": (1, 1e6),
    },
    "CloudInstance": {
        "gpu_count": (1, 100_000), "vcpus": (1, 1e5), "ram_gb": (1e-3, 1e7), "price_usd_per_hour": (1e-4, 1e6),
        "spot_usd_per_hour": (1e-4, 1e6), "reserved_1y_usd_per_hour": (1e-4, 1e6),
        "reserved_3y_usd_per_hour": (1e-4, 1e6), "network_gbps": (0.01, 1e5), "local_nvme_tb": (1e-3, 1e6),
        "frontend_gbps": (0.01, 1e5),
    },
    "CPU": {"cores": (1, 4096), "pcie_lanes": (1, 1024), "memory_channels": (1, 64), "max_memory_gb": (1, 1e6),
            "tdp_w": (1, 5000), "price_usd": (1, 1e7)},
    "Chassis": {"max_gpus": (1, 1024), "psu_w": (100, 1e6), "price_usd": (0, 1e8), "rack_units": (1, 60)},
    "Dimm": {"capacity_gb": (1, 4096), "price_usd": (0.01, 1e6)},
    "StorageTier": {"capacity_tb": (1e-3, 1e6), "read_gbps": (1e-3, 1e5), "price_usd": (0, 1e8),
                    "usd_per_tb_month": (0, 1e5)},
    "NetworkOption": {"gbps": (0.01, 1e5), "nic_price_usd": (0, 1e6), "switch_port_usd": (0, 1e6)},
}
_ZERO_OK = {"nvlink_gbps", "network_gbps", "local_nvme_tb"}
_MAX_NUMBER = 1e12  # any other number field

# facility values: (smallest, largest), inclusive
FACILITY_RANGES: dict[str, tuple[float, float]] = {
    "pue": (1.0, 3.0), "pue_office": (1.0, 3.0), "electricity_usd_per_kwh": (0.0, 10.0),
    "colo_usd_per_kw_month": (0.0, 10_000.0), "office_space_usd_per_gpu_year": (0.0, 1e6),
    "maintenance_frac_per_year": (0.0, 1.0), "staff_usd_per_year": (0.0, 1e8), "staff_nodes_per_fte": (0.01, 1e6),
    "depreciation_years": (0.1, 30.0), "residual_value_frac": (0.0, 1.0), "utilization": (0.01, 1.0),
    "spot_overhead_frac": (0.0, 2.0), "goodput": (0.01, 1.0), "reserved_1y_discount": (0.0, 0.99),
    "reserved_3y_discount": (0.0, 0.99), "server_overhead_frac": (0.0, 10.0),
    "cloud_storage_usd_per_tb_month": (0.0, 1e5), "office_circuit_w": (100.0, 1e6),
    # a negative setup time or price made a rented run's cost negative (the ranking then had no floor)
    "psu_usd_per_w": (0.0, 100.0), "egress_usd_per_gb": (0.0, 100.0), "cloud_setup_hours": (0.0, 1000.0),
}


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-_]*$", max_length=200)
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=4)
    notes: list[str] = Field(default_factory=list)

    @field_validator("*", mode="after")
    @classmethod
    def _physical(cls, value: Any, info: ValidationInfo) -> Any:
        """Physical ranges (see _RANGES): finite, never negative, and inside the field's range."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value
        name = info.field_name or ""
        if not math.isfinite(value):  # ints cannot be inf; floats are refused earlier (allow_inf_nan)
            raise ValueError("must be a finite number")
        lo, hi = _RANGES.get(cls.__name__, {}).get(name, (0.0, _MAX_NUMBER))
        if value == 0 and name in _ZERO_OK:
            return value
        if not lo <= value <= hi:
            zero = " (or 0 for none)" if name in _ZERO_OK else ""
            raise ValueError(f"must be between {lo:g} and {hi:g}{zero}, got {value:g}")
        return value


# ISO 8601 date, month or year: when a figure was true (``observed``) or read (``retrieved``).
DATE_PATTERN = r"^\d{4}(-\d{2}(-\d{2})?)?$"
# Each price field and the field that says when that price was true (``observed``: ISO date, month
# or year). The loader refuses a price without its date; ``as_of`` stays the date an entry was read.
PRICE_DATES = {
    "price_new_usd": "price_new_observed", "price_used_usd": "price_used_observed", "price_usd": "observed",
    "usd_per_tb_month": "observed", "nic_price_usd": "observed", "switch_port_usd": "observed",
    "price_per_hour": "observed", "spot_per_hour": "observed", "reserved_1y_per_hour": "observed",  # cloud offers
    "reserved_3y_per_hour": "observed", "monthly_per_month": "observed",
}


def _require_observed(entry: BaseModel) -> None:
    for price, date in PRICE_DATES.items():
        if getattr(entry, price, None) is not None and getattr(entry, date, None) is None:
            raise ValueError(_("{price} has no {date} (the date the price was true, YYYY-MM-DD, YYYY-MM or YYYY)")
                             .format(price=price, date=date))


class _Priced(_Entry):
    """An entry with a price: each price carries the date it was true (PRICE_DATES)."""

    observed: str | None = Field(None, pattern=DATE_PATTERN)

    @model_validator(mode="after")
    def _dated(self) -> Self:
        _require_observed(self)
        return self


class GPU(_Entry):
    name: str
    vendor: Literal["nvidia", "amd", "intel", "huawei"]
    architecture: str  # e.g. "hopper", "ampere", "ada", "blackwell", "volta", "turing", "cdna3", "gaudi3"
    release_year: int = Field(ge=2010, le=2035)
    segment: Segment
    form_factor: Literal["pcie", "sxm", "oam", "nvl"]
    cooling: Literal["open-air", "blower", "passive", "liquid"]
    sold_as_board: int = Field(1, ge=1)  # GPUs per board sold as one unit (A16: 4)
    memory_gib: float = Field(gt=0)  # vendor capacity figure (HBM/GDDR capacities are binary)
    memory_bandwidth_gbps: float = Field(gt=0)  # GB/s
    fp32_tflops: float = Field(gt=0)  # dense, no sparsity
    tf32_tflops: float | None = Field(None, gt=0)
    bf16_tflops: float | None = Field(None, gt=0)  # dense tensor, fp32 accumulate
    fp16_tflops: float | None = Field(None, gt=0)
    fp8_tflops: float | None = Field(None, gt=0)
    tdp_w: float = Field(gt=0)
    pcie_gen: int = Field(ge=3, le=6)
    nvlink_gbps: float = Field(0.0, ge=0)  # per-GPU total bidirectional; 0 = none (P2P over PCIe only)
    nvlink_multi_gpu: bool = False  # NVSwitch / all-to-all fabric across > 2 GPUs
    p2p: bool = True  # GPU peer-to-peer over PCIe (GeForce 40/50 series: False)
    max_per_node: int = Field(8, ge=1, le=72)  # how many fit a standard chassis of its kind
    slot_width: int = Field(2, ge=1, le=4)  # PCIe cards: slots occupied
    mig_max_instances: int | None = None
    ecc: bool = True
    compute_capability: str | None = None
    min_cuda: str | None = None
    rocm_gfx_target: str | None = None
    price_new_usd: float | None = Field(None, gt=0)
    price_used_usd: float | None = Field(None, gt=0)
    price_new_observed: str | None = Field(None, pattern=DATE_PATTERN)  # when price_new_usd was true
    price_used_observed: str | None = Field(None, pattern=DATE_PATTERN)  # when price_used_usd was true
    # False: no longer made or sold new (price_new_usd stays as its last list price, for reference): bought,
    # it is a used unit at price_used_usd, or it cannot be bought where the catalog has no used price
    sold_new: bool = True
    export_restricted: bool = False  # US export controls: not sold into CN/HK/MO
    markets: list[str] | None = Field(None, min_length=1)  # ISO countries where sold new; None = worldwide
    mining_era: bool = False  # consumer card sold 2017-2022 (used units may be ex-mining)
    datacenter_licence_ok: bool = True  # GeForce EULA forbids data-centre deployment

    @model_validator(mode="after")
    def _dated(self) -> Self:
        _require_observed(self)
        return self

    def peak_tflops(self, precision: str) -> float:
        """Dense peak for a training precision, falling back to the next-best supported rate."""
        order = {
            "fp8": ("fp8_tflops", "bf16_tflops", "fp16_tflops", "fp32_tflops"),
            "bf16": ("bf16_tflops", "fp16_tflops", "fp32_tflops"),
            "fp16": ("fp16_tflops", "bf16_tflops", "fp32_tflops"),
            "tf32": ("tf32_tflops", "fp32_tflops"),
            "fp32": ("fp32_tflops",),
        }[precision]
        for attr in order:
            v = getattr(self, attr)
            if v:
                return float(v)
        return float(self.fp32_tflops)

    def supports(self, precision: str) -> bool:
        return {
            "fp8": self.fp8_tflops, "bf16": self.bf16_tflops, "fp16": self.fp16_tflops or self.bf16_tflops,
            "tf32": self.tf32_tflops, "fp32": self.fp32_tflops,
        }[precision] is not None

    @property
    def buy_new_usd(self) -> float | None:
        """What one costs bought new today: None where it is not sold new (``sold_new``) or has no price."""
        return self.price_new_usd if self.sold_new else None


class ModelPreset(_Entry):
    name: str
    family: Literal["decoder", "encoder", "encoder-decoder", "cnn", "vit", "diffusion", "speech", "moe"]
    modality: Literal["text", "image", "audio"] = "text"
    params_b: float = Field(gt=0)  # published parameter count, billions
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn: int | None = None
    vocab: int | None = None
    seq_len: int | None = None  # default training sequence length (tokens; audio frames for speech)
    experts: int | None = None
    top_k: int | None = None
    mlp: Literal["swiglu", "geglu", "gelu"] = "gelu"
    tied_embeddings: bool = False
    norm: Literal["rms", "layer"] = "layer"
    # Architecture details (same meaning as the ModelSpec keys, docs/LIMITS.md "Architecture")
    params_active_b: float | None = Field(None, gt=0)  # published active parameters per token (MoE), billions
    head_dim: int | None = Field(None, ge=1)
    bias: bool | None = None
    attention_bias: bool | None = None
    qkv_bias: bool | None = None
    mlp_bias: bool | None = None
    qk_norm: bool | None = None
    moe_ffn: int | None = Field(None, ge=1)
    shared_experts: int | None = Field(None, ge=0)
    shared_expert_ffn: int | None = Field(None, ge=1)
    shared_expert_gate: bool | None = None
    first_k_dense: int | None = Field(None, ge=0)
    moe_layer_freq: int | None = Field(None, ge=1)
    router_bias: bool | None = None
    q_lora_rank: int | None = Field(None, ge=1)
    kv_lora_rank: int | None = Field(None, ge=1)
    qk_nope_head_dim: int | None = Field(None, ge=1)
    qk_rope_head_dim: int | None = Field(None, ge=1)
    v_head_dim: int | None = Field(None, ge=1)
    attention_sinks: bool | None = None
    mtp_layers: int | None = Field(None, ge=0)
    sliding_window: int | None = Field(None, ge=1)
    sliding_layers: int | None = Field(None, ge=0)
    # Non-token models: published per-sample figures the estimator needs, at `resolution`
    train_gflops_per_sample: float | None = Field(None, gt=0)  # fwd+bwd, = 3 x forward
    act_gib_per_sample: float | None = Field(None, gt=0)  # activation memory / sample, mixed precision
    # where train_gflops_per_sample comes from: a published count ("published": a paper's or library's
    # MACs), or ours, counted from the architecture where none is published ("estimate"); the answer says which
    per_sample_basis: Literal["published", "estimate"] = "published"
    resolution: int | None = None  # image side in pixels at which the figures hold
    vision: VisionArch | None = None  # layer list of a vision model (core.memory counts its activations)
    sample_kb: float | None = None  # typical stored sample size (dataset planning)
    default_micro_batch: int | None = None


Tier = Literal["hyperscaler", "neocloud", "marketplace-secure", "marketplace-community"]
_LEGACY_PRICE_KEYS = {
    "price_usd_per_hour": "price_per_hour", "spot_usd_per_hour": "spot_per_hour",
    "reserved_1y_usd_per_hour": "reserved_1y_per_hour", "reserved_3y_usd_per_hour": "reserved_3y_per_hour",
}
MAX_PRICE_PER_HOUR = 1e7  # any currency; a whole NVL72 rack is ~10^3 USD/h


def normalise_cloud_entry(entry: Any) -> Any:
    """Accept the v1 keys of a cloud offer (``price_usd_per_hour`` ..., ``as_of``): USD prices,
    ``as_of`` as the date the price was observed. Applied to overlay entries before merging, so an
    overlay written for v1 still overrides a built-in entry stored in the new form."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    legacy = [k for k in _LEGACY_PRICE_KEYS if k in out]
    for old in legacy:
        out[_LEGACY_PRICE_KEYS[old]] = out.pop(old)
    if legacy:
        out.setdefault("currency", "USD")
    if "as_of" in out:
        out.setdefault("observed", out["as_of"])
        out.setdefault("retrieved", out["as_of"])
        del out["as_of"]
    return out


class CloudInstance(BaseModel):
    """One rentable offer: where it is (country, region), who runs it (tier), what it costs in the
    currency it is sold in, and when that price was true (``observed``) and read (``retrieved``).
    The engine reads the ``*_usd_per_hour`` properties; the catalog fills the USD rate at load."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)  # no NaN/inf prices
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-_]*$")
    source: str = Field(min_length=1)
    observed: str = Field(pattern=DATE_PATTERN)
    retrieved: str = Field(pattern=DATE_PATTERN)
    notes: list[str] = Field(default_factory=list)
    provider: str
    instance_type: str
    gpu: str  # catalog GPU id
    gpu_count: int = Field(ge=1, le=100_000)
    vcpus: int | None = Field(None, ge=1)
    ram_gb: float | None = Field(None, gt=0)
    region: str = ""
    country: str = Field(pattern=r"^[A-Z]{2}$")  # ISO 3166-1 alpha-2 of the data centre; required
    tier: Tier
    currency: str = Field(pattern=r"^[A-Z]{3}$")  # ISO 4217 of the prices below
    price_per_hour: float = Field(gt=0, lt=MAX_PRICE_PER_HOUR)  # whole instance, on demand
    spot_per_hour: float | None = Field(None, gt=0, lt=MAX_PRICE_PER_HOUR)
    reserved_1y_per_hour: float | None = Field(None, gt=0, lt=MAX_PRICE_PER_HOUR)
    reserved_3y_per_hour: float | None = Field(None, gt=0, lt=MAX_PRICE_PER_HOUR)
    monthly_per_month: float | None = Field(None, gt=0, lt=MAX_PRICE_PER_HOUR * 744)  # monthly subscription
    interconnect: Literal["nvlink", "pcie", "xgmi", "hccs", "none"] = "pcie"
    network_gbps: float | None = Field(None, gt=0)  # inter-node
    rdma: bool = False
    # The front-end / storage network the dataset arrives over (staging), where it differs from the
    # inter-node figure above (an RDMA compute fabric: 3.2 Tb/s of InfiniBand is not how data arrives).
    frontend_gbps: float | None = Field(None, gt=0)
    local_nvme_tb: float | None = Field(None, ge=0)
    _usd_rate: float = PrivateAttr(default=1.0)  # USD per unit of ``currency``; set by the catalog

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return normalise_cloud_entry(data)

    @property
    def usd_rate(self) -> float:
        return self._usd_rate

    @property
    def price_usd_per_hour(self) -> float:
        return self.price_per_hour * self._usd_rate

    @property
    def spot_usd_per_hour(self) -> float | None:
        return self.spot_per_hour * self._usd_rate if self.spot_per_hour is not None else None

    @property
    def reserved_1y_usd_per_hour(self) -> float | None:
        """The 1-year rate, or a monthly subscription's hourly equivalent where only that is published."""
        if self.reserved_1y_per_hour is not None:
            return self.reserved_1y_per_hour * self._usd_rate
        if self.monthly_per_month is not None:
            return self.monthly_per_month / HOURS_PER_MONTH * self._usd_rate
        return None

    @property
    def reserved_3y_usd_per_hour(self) -> float | None:
        return self.reserved_3y_per_hour * self._usd_rate if self.reserved_3y_per_hour is not None else None


class CPU(_Priced):
    name: str
    vendor: Literal["amd", "intel", "ampere", "nvidia"]
    segment: Literal["desktop", "workstation", "server"]
    cores: int = Field(ge=1)
    pcie_lanes: int = Field(ge=1)  # usable lanes per socket (per system for desktop parts)
    pcie_gen: int = Field(ge=3, le=6)
    memory_channels: int = Field(ge=1)
    memory_mts: int = Field(ge=1000)  # DDR speed the memory controller runs (MT/s, 1 DIMM per channel)
    max_memory_gb: float = Field(gt=0)  # per socket
    max_sockets: int = Field(1, ge=1, le=8)
    tdp_w: float = Field(gt=0)
    price_usd: float = Field(gt=0)


class Chassis(_Priced):
    name: str
    kind: Literal["desktop", "workstation", "server", "hgx"]
    max_gpus: int = Field(ge=1)
    gpu_form: Literal["pcie", "sxm", "oam"]
    max_slot_width: int = Field(2, ge=1, le=4)  # widest PCIe card it takes at max_gpus
    cpu_segment: Literal["desktop", "workstation", "server"]
    cpu_vendor: Literal["amd", "intel"] | None = None  # the board's socket takes this vendor's CPUs; None = either
    sockets: int = Field(1, ge=1, le=8)
    psu_w: float = Field(gt=0)
    rack_units: int | None = None  # None: tower
    price_usd: float = Field(ge=0)  # chassis + board + PSUs, without GPUs, CPUs, RAM, drives
    cools: list[Literal["open-air", "blower", "passive", "liquid"]]  # GPU coolers its airflow handles
    only_gpus: list[str] | None = None  # GPU ids of the baseboards sold for it (HGX); None = any of its form
    lean: bool = False  # the small-budget tier: no bulk HDD, no ingest NIC
    sold_new: bool = True  # False: sold used or refurbished only, with no price in the catalog: builds skip it
    # the GPUs and NICs sit behind PCIe switches (an x16 uplink to the CPUs per two GPUs, as on an HGX board), not
    # each on CPU lanes of its own
    pcie_switches: bool = False


class Dimm(_Priced):
    name: str
    capacity_gb: int = Field(gt=0)
    mts: int = Field(ge=1000)  # rated speed (MT/s); it runs at the CPU's memory_mts when that is lower
    kind: Literal["ddr5-rdimm", "ddr5-udimm", "ddr4-rdimm", "ddr4-udimm"]
    price_usd: float = Field(gt=0)


class SoftwareStack(_Entry):
    """Driver, CUDA and PyTorch wheel that work together on one NVIDIA architecture (id = architecture)."""

    driver: str
    cuda: str
    torch: str


class TrainingExcluded(_Entry):
    """A GPU (id) the recommender never picks for training by itself, and why."""

    reason: str


class Platforms(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    cpus: list[CPU]
    chassis: list[Chassis]
    memory: list[Dimm]
    software: list[SoftwareStack] = Field(default_factory=list)
    training_excluded: list[TrainingExcluded] = Field(default_factory=list)


class StorageTier(_Priced):
    name: str
    kind: Literal["nvme", "nvme-raid0", "sata-ssd", "hdd", "parallel-fs", "nas", "object"]
    capacity_tb: float | None = Field(None, gt=0)  # per unit (drive / node); None for services
    read_gbps: float = Field(gt=0)  # GB/s sequential read per unit
    price_usd: float | None = Field(None, ge=0)  # per unit
    usd_per_tb_month: float | None = Field(None, ge=0)  # services (cloud / object storage)
    form: Literal["m.2", "u.2", "e1.s"] | None = None  # drive form factor: M.2 for desks, U.2 / E1.S for servers


class NetworkOption(_Priced):
    name: str
    kind: Literal["ethernet", "roce", "infiniband"]
    gbps: float = Field(gt=0)  # per port
    rdma: bool
    nic_price_usd: float = Field(ge=0)
    switch_port_usd: float = Field(0.0, ge=0)  # switch cost per port (switch price / ports)
    switch_radix: int = Field(64, ge=2)  # ports per switch (leaf/spine building block)


class FacilityValue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    value: float
    unit: str
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=4)
    observed: str | None = Field(None, pattern=DATE_PATTERN)  # when a money value (unit in USD) was true
    note: str = ""


class FxRate(BaseModel):
    """An exchange rate: USD per one unit of the currency, on a date."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    usd_per_unit: float = Field(gt=0, lt=10_000)
    source: str = Field(min_length=1)
    observed: str = Field(pattern=DATE_PATTERN)
    note: str = ""


class OfficeCircuit(BaseModel):
    """One ordinary office / desk branch circuit in a country: its mains voltage, its breaker (or
    socket) rating, and the fraction of that a continuous load may draw (the 80 % rule)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    volts: float = Field(ge=90, le=260)
    amps: float = Field(ge=1, le=100)
    continuous_frac: float = Field(0.8, gt=0, le=1.0)
    source: str = Field(min_length=1)
    observed: str = Field(pattern=DATE_PATTERN)

    @property
    def continuous_w(self) -> float:
        return self.volts * self.amps * self.continuous_frac


class CountryEconomics(BaseModel):
    """What owning hardware costs in one country, in its currency (``currency``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    electricity_per_kwh: float = Field(ge=0, le=10_000)  # business / industrial tariff
    pue: float | None = Field(None, ge=1.0, le=3.0)  # typical colocation PUE there
    colo_per_kw_month: float | None = Field(None, ge=0, le=1e8)
    staff_per_year: float = Field(ge=0, le=1e12)  # fully loaded sysadmin / MLOps engineer
    vat_rate: float = Field(ge=0, le=0.5)  # VAT / GST / consumption tax on hardware
    gpu_import_duty: float = Field(0.0, ge=0, le=1.0)  # duty on GPUs / servers (HS 8471/8473)
    office_circuit: OfficeCircuit | None = None  # None: facility office_circuit_w (15 A / 120 V)
    source: str = Field(min_length=1)
    observed: str = Field(pattern=DATE_PATTERN)
    notes: list[str] = Field(default_factory=list)


class ExportRule(BaseModel):
    """One export-control fact: buying (shipping) hardware to a country, or using it remotely from
    there, is prohibited / needs a licence / is not controlled."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-_]*$")
    kind: Literal["hardware-purchase", "remote-access"]
    authority: str = Field(min_length=1)
    destinations: list[str] = Field(min_length=1)
    applies_to: Literal["export-restricted-gpus", "all-gpus"] = "export-restricted-gpus"
    effect: Literal["prohibited", "license-required", "not-controlled"]
    summary: str = Field(min_length=1)
    source: str = Field(min_length=1)
    observed: str = Field(pattern=DATE_PATTERN)


FACILITY_KEYS = (
    "pue",  # power usage effectiveness of a data centre / colocation site
    "pue_office",  # an office or server closet (no economiser; mostly split AC)
    "electricity_usd_per_kwh",  # default when the user gives none
    "colo_usd_per_kw_month",  # colocation rent per kW of IT load
    "office_space_usd_per_gpu_year",  # desk / server-room space, cooling excluded
    "maintenance_frac_per_year",  # support contract / repairs as a fraction of capex
    "staff_usd_per_year",  # fully loaded sysadmin / MLOps engineer
    "staff_nodes_per_fte",  # nodes one engineer can run
    "depreciation_years",  # straight-line amortisation period
    "residual_value_frac",  # resale value at the end of depreciation_years
    "utilization",  # expected busy fraction of owned GPUs
    "spot_overhead_frac",  # extra compute for checkpoint-and-restart on spot
    "goodput",  # fraction of wall time doing useful training at scale (failures, restarts)
    "reserved_1y_discount",  # typical 1-year commitment discount vs on-demand
    "reserved_3y_discount",
    "server_overhead_frac",  # non-GPU share of a GPU server's price, when no chassis priced
    "cloud_storage_usd_per_tb_month",
    "office_circuit_w",  # continuous load of one office circuit (15 A/120 V at 80%) where the country has none
    "psu_usd_per_w",  # price of PSU capacity beyond what a chassis ships with
    "egress_usd_per_gb",  # cloud data transfer out
    "cloud_setup_hours",  # provisioning + image pull before a rented run trains
)


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    version: int = 1
    as_of: str
    gpus: list[GPU]
    models: list[ModelPreset]
    cloud_instances: list[CloudInstance]
    platforms: Platforms
    storage: list[StorageTier]
    network: list[NetworkOption]
    facility: dict[str, FacilityValue]
    export_controlled_countries: list[str] = Field(default_factory=lambda: ["CN", "HK", "MO"])
    # issue 11: achieved hardware rates by architecture / GPU (core.hardware) and software stacks (core.stacks)
    perf: list[PerfEntry] = Field(default_factory=list)
    stacks: list[StackEntry] = Field(default_factory=list)
    fx: dict[str, FxRate] = Field(default_factory=dict)  # ISO 4217 -> USD per unit
    economics: dict[str, CountryEconomics] = Field(default_factory=dict)  # ISO 3166 alpha-2
    export_rules: list[ExportRule] = Field(default_factory=list)

    # ---- lookups -------------------------------------------------------------------------------
    def gpu(self, gid: str) -> GPU:
        for g in self.gpus:
            if g.id == gid:
                return g
        raise GpuwizError(f"unknown GPU id {gid!r}{did_you_mean(gid, [g.id for g in self.gpus])}")

    def model(self, mid: str) -> ModelPreset:
        for m in self.models:
            if m.id == mid:
                return m
        raise GpuwizError(f"unknown model preset {mid!r}{did_you_mean(mid, [m.id for m in self.models])}")

    def fac(self, key: str) -> float:
        return self.facility[key].value

    def gpu_map(self) -> dict[str, GPU]:
        return {g.id: g for g in self.gpus}

    @cached_property
    def perf_map(self) -> dict[str, PerfEntry]:
        return {p.id: p for p in self.perf}

    @cached_property
    def stack_map(self) -> dict[str, StackEntry]:
        return {s.id: s for s in self.stacks}

    @cached_property
    def derived(self) -> dict[tuple[object, ...], Any]:
        """Memo of values derived from this (immutable) catalog alone, e.g. a GPU's achieved rates."""
        return {}


def did_you_mean(word: str, choices: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(str(word).lower(), choices, n=3, cutoff=0.5)
    if not close:
        norm = str(word).lower().replace(" ", "-").replace("_", "-")
        close = [c for c in choices if norm in c or c in norm][:3]
    return _(" (did you mean {names}?)").format(names=", ".join(close)) if close else ""


# ---- loading -------------------------------------------------------------------------------------

_LISTS = ("gpus", "models", "cloud_instances", "storage", "network", "perf", "stacks")
_PLATFORM_LISTS = ("cpus", "chassis", "memory", "software", "training_excluded")


def _merge_by_id(base: list[Any], over: list[Any]) -> list[Any]:
    out = [dict(e) for e in base]
    index = {e.get("id"): i for i, e in enumerate(out) if isinstance(e, dict) and isinstance(e.get("id"), str)}
    for e in over:
        # an id that is not a string (a list, a mapping) is appended as is and refused by validation
        if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"] in index:
            out[index[e["id"]]] = _redate({**out[index[e["id"]]], **e}, e)
        else:
            out.append(_redate(e, e) if isinstance(e, dict) else e)
    return out


def _redate(merged: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """An overlay's price never keeps the built-in entry's date: a price it sets without its
    ``observed`` key takes the overlay entry's ``as_of`` (the v1 meaning, as for cloud offers), else
    it has no date and validation refuses it."""
    for price, date in PRICE_DATES.items():
        if price in over and date not in over:
            merged.pop(date, None)
            if "as_of" in over and over[price] is not None:
                merged[date] = over["as_of"]
    return merged


def merge_overlay(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if key == "cloud_instances" and isinstance(value, list):
            value = [normalise_cloud_entry(e) for e in value]
        if key in ("fx", "economics") and isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = {**base[key], **value}
            continue
        if key in _LISTS and isinstance(value, list) and isinstance(base.get(key), list):
            merged[key] = _merge_by_id(base[key], value)
        elif key == "platforms" and isinstance(value, dict) and isinstance(base.get(key), dict):
            plat = dict(base[key])
            for pk, pv in value.items():
                if pk in _PLATFORM_LISTS and isinstance(pv, list) and isinstance(plat.get(pk), list):
                    plat[pk] = _merge_by_id(plat[pk], pv)
                else:
                    plat[pk] = pv
            merged[key] = plat
        elif key == "facility" and isinstance(value, dict) and isinstance(base.get(key), dict):
            fac = dict(base[key])
            for fk, fv in value.items():
                fac[fk] = {**fac[fk], **fv} if isinstance(fv, dict) and isinstance(fac.get(fk), dict) else fv
                if isinstance(fv, dict) and "value" in fv and "observed" not in fv and isinstance(fac[fk], dict):
                    fac[fk].pop("observed", None)  # a new value is not as old as the built-in one
                    if "as_of" in fv:
                        fac[fk]["observed"] = fv["as_of"]
            merged[key] = fac
        else:
            merged[key] = value
    return merged


def _entry_label(data: Any, loc: tuple[Any, ...]) -> str:
    """`gpus[3] (h100-sxm).tdp_w` style label for a validation location."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            try:
                node = node[part]
                if isinstance(node, dict) and "id" in node:
                    label = str(node["id"])
                    out += f" ({label if len(label) <= 40 else label[:37] + '...'})"
            except (IndexError, KeyError, TypeError):
                node = None
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _overlay_loc(merged: Any, over: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Translate a location in the merged catalog into the overlay's own list indexes (by id),
    so that errors point at the overlay's line, not at the built-in entry's position."""
    prefix: tuple[Any, ...] = ()
    node_m, node_o = merged, over
    for i, part in enumerate(loc):
        if isinstance(part, int):
            try:
                eid = node_m[part].get("id")
                idx = next(j for j, e in enumerate(node_o) if isinstance(e, dict) and e.get("id") == eid)
            except (AttributeError, IndexError, KeyError, TypeError, StopIteration):
                return loc
            prefix += (idx,)
            node_m, node_o = node_m[part], node_o[idx]
        else:
            if isinstance(node_o, dict) and part not in node_o:  # written with its v1 name?
                part = next((old for old, new in _LEGACY_PRICE_KEYS.items() if new == part and old in node_o), part)
            if not isinstance(node_o, dict) or part not in node_o:
                return prefix + tuple(loc[i:])  # the overlay did not set it: nearest line it has
            prefix += (part,)
            node_m = node_m.get(part) if isinstance(node_m, dict) else None
            node_o = node_o[part]
    return prefix


def validate_catalog(data: Any, name: str, lines: LineMap | None = None, over: Any = None) -> Catalog:
    if not isinstance(data, dict):
        raise GpuwizError(f"{name}: a catalog must be a YAML mapping with gpus, models, ... sections")
    try:
        cat = Catalog.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:20]:
            loc = tuple(err["loc"])
            oloc = _overlay_loc(data, over, loc) if over is not None else loc
            line = lines.line(oloc) if lines else None
            where = f"{name}:{line}" if line else name
            if oloc and oloc[-1] in _LEGACY_PRICE_KEYS and loc and loc[-1] == _LEGACY_PRICE_KEYS[oloc[-1]]:
                loc = (*loc[:-1], oloc[-1])  # name the key as the overlay wrote it (a v1 price key)
            problems.append(f"{where}: {_entry_label(data, loc)}: {err['msg'].removeprefix('Value error, ')}")
        raise GpuwizError(problems[0], problems=problems) from None
    missing = [k for k in FACILITY_KEYS if k not in cat.facility]
    if missing:
        raise GpuwizError(f"{name}: facility: missing value(s) {', '.join(missing)}")
    bad = []
    for key, (lo, hi) in FACILITY_RANGES.items():
        fv = cat.facility.get(key)
        if fv is not None and not lo <= fv.value <= hi:
            loc = ("facility", key, "value")
            line = lines.line(_overlay_loc(data, over, loc) if over is not None else loc) if lines else None
            bad.append(f"{name}:{line}: " if line else f"{name}: ")
            bad[-1] += f"facility.{key}.value: must be between {lo:g} and {hi:g} ({fv.unit}), got {fv.value:g}"
    if bad:
        raise GpuwizError(bad[0], problems=bad)
    for key, fv in cat.facility.items():  # a money value (unit in USD) is a price: it carries its date
        if "USD" in fv.unit and fv.observed is None:
            loc = ("facility", key)
            line = lines.line(_overlay_loc(data, over, loc) if over is not None else loc) if lines else None
            raise GpuwizError((f"{name}:{line}: " if line else f"{name}: ") + _(
                "facility.{key}: a value in {unit} has no observed (the date the price was true, YYYY-MM-DD, "
                "YYYY-MM or YYYY)").format(key=key, unit=fv.unit))
    _check_refs(cat, name)
    _apply_fx(cat, name)
    return cat


def _apply_fx(cat: Catalog, name: str) -> None:
    """Give every cloud offer its USD rate; a currency without a rate is an error."""
    for inst in cat.cloud_instances:
        code = inst.currency
        if code == "USD":
            continue
        fx = cat.fx.get(code)
        if fx is None:
            raise GpuwizError(f"{name}: cloud_instances ({inst.id}).currency: no fx rate for {code!r} "
                              f"(add fx: {{{code}: {{usd_per_unit: ..., source: ..., observed: ...}}}})")
        inst._usd_rate = fx.usd_per_unit
    for country, row in cat.economics.items():
        if row.currency != "USD" and row.currency not in cat.fx:
            raise GpuwizError(f"{name}: economics.{country}.currency: no fx rate for {row.currency!r}")


def _check_refs(cat: Catalog, name: str) -> None:
    for section in ("gpus", "models", "cloud_instances", "storage", "network"):
        counts = Counter(e.id for e in getattr(cat, section))  # linear, even for a huge overlay
        dupes = sorted(i for i, n in counts.items() if n > 1)
        if dupes:
            raise GpuwizError(f"{name}: {section}: duplicate id(s) {', '.join(dupes)}")
    gpu_ids = {g.id for g in cat.gpus}
    for inst in cat.cloud_instances:
        if inst.gpu not in gpu_ids:
            raise GpuwizError(
                f"{name}: cloud_instances ({inst.id}).gpu: unknown GPU id {inst.gpu!r}"
                f"{did_you_mean(inst.gpu, sorted(gpu_ids))}"
            )
    refs = [(f"platforms.chassis ({ch.id}).only_gpus", g) for ch in cat.platforms.chassis for g in ch.only_gpus or []]
    refs += [(f"platforms.training_excluded ({e.id})", e.id) for e in cat.platforms.training_excluded]
    for where, g in refs:
        if g not in gpu_ids:
            raise GpuwizError(f"{name}: {where}: unknown GPU id {g!r}{did_you_mean(g, sorted(gpu_ids))}")


def _builtin_text() -> str:
    return _builtin_bytes().decode("utf-8")


def _builtin_path() -> Path:
    return Path(__file__).parent.parent / "catalog.yaml"


@lru_cache(maxsize=1)
def _builtin_bytes() -> bytes:
    try:  # a plain file beside the package (pip, editable installs): no importlib.resources import
        return _builtin_path().read_bytes()
    except FileNotFoundError:  # pragma: no cover - zipped installs
        from importlib import resources

        return resources.files("gpuwiz").joinpath("catalog.yaml").read_bytes()


@lru_cache(maxsize=1)
def _builtin_raw() -> tuple[Any, LineMap]:
    return parse(_builtin_text(), "catalog.yaml")


# Every module that defines a class of the catalog's schema (tests/core/test_catalog_cache.py checks this
# list against a walk of the schema, which would cost ~0.4 ms per start).
SCHEMA_MODULES = ("gpuwiz.core.catalog", "gpuwiz.core.hardware", "gpuwiz.core.models", "gpuwiz.core.stacks")


@lru_cache(maxsize=1)
def _builtin_digest() -> str:
    """Digest of everything but the overlay that decides what a validated catalog is: the built-in
    catalog text, the source of the schema's modules and of the YAML reader (the schema and the merge
    rules), and the gpuwiz and pydantic versions. A change to any of them invalidates every cached catalog."""
    import pydantic_core

    from gpuwiz import __version__
    from gpuwiz.core import yamlio

    # a schema edit anywhere invalidates the cache (the cache's objects are restored without validation)
    modules = sorted({sys.modules[m].__file__ or "" for m in SCHEMA_MODULES} | {yamlio.__file__})
    versions = (__version__.encode(), pydantic_core.__version__.encode())
    try:
        stamp = file_stamp([str(_builtin_path()), *modules])
    except OSError:  # a zipped install: no files to stat
        stamp = None
    if stamp is not None:  # the files are what they were when the stamp was taken: no need to read them
        return cache.digest(b"gpuwiz-catalog-stamp", *versions, stamp)
    sources = [Path(m).read_bytes() for m in modules]
    return cache.digest(b"gpuwiz-catalog", *versions, _builtin_bytes(), *sources)


# A file changed less than this long ago is keyed by its content, not its stamp (see file_stamp).
STAMP_SETTLE_NS = 2_000_000_000


def file_stamp(paths: list[str]) -> bytes | None:
    """What tells these files' contents apart without reading them (-0.5 ms of a start): path, device,
    inode, size, modification and status-change time of each. Every write to a file (and every utime that
    sets its mtime back) moves its change time to the present, which no user can set back, so an edited
    file never keeps its stamp -- except within one tick of the kernel's coarse file clock (a few ms): a
    file changed less than STAMP_SETTLE_NS ago could still be edited under the same stamp, so then the
    answer is None and the caller hashes the contents, as git does with its racily clean files. None on
    Windows too, where st_ctime is the creation time."""
    if os.name == "nt":
        return None
    import time

    now = time.time_ns()
    parts = []
    for path in paths:
        st = os.stat(path)
        if now - st.st_ctime_ns < STAMP_SETTLE_NS or now - st.st_mtime_ns < STAMP_SETTLE_NS:
            return None
        parts.append(f"{path}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}")
    return "\n".join(parts).encode("utf-8", "surrogateescape")


def _cache_key(overlay_text: str | None) -> str | None:
    """Content key of the built-in catalog plus overlay; None when the sources cannot be read."""
    try:
        base = _builtin_digest()
    except OSError:
        return None
    return cache.digest(base.encode("ascii"), b"-" if overlay_text is None else b"+" + overlay_text.encode("utf-8"))


def _validated(overlay: str | None, overlay_text: str | None) -> Catalog:
    data, lines = _builtin_raw()
    if overlay is None or overlay_text is None:
        return validate_catalog(data, "catalog.yaml", lines)
    over, over_lines = parse(overlay_text, overlay)
    if not isinstance(over, dict):
        raise GpuwizError(f"{overlay}: a catalog overlay must be a YAML mapping (gpus:, cloud_instances:, ...)")
    unknown = [k for k in over if k not in Catalog.model_fields]
    if unknown:
        line = over_lines.line((unknown[0],))
        raise GpuwizError(f"{overlay}:{line}: {unknown[0]}: unknown catalog section")
    merged = merge_overlay(data, over)
    # Errors in merged entries are reported against the overlay when the overlay set that field.
    return validate_catalog(merged, overlay, over_lines, over)


@lru_cache(maxsize=8)
def _load_cached(key: str | None, overlay: str | None, overlay_text: str | None) -> Catalog:
    """In-process cache by content key; then the on-disk cache (core/cache.py); then YAML + validation.
    A cache entry is the validated catalog in marshal form (below): loading it builds the same objects
    validation built, without validating again; anything that does not match its digest or the schema
    is rebuilt from the YAML and rewritten."""
    if key is None:
        return _validated(overlay, overlay_text)
    payload = cache.read_bytes("catalog", key)
    if payload is not None:
        # ~15k new objects, none of them garbage: the collector's passes would be a third of the load (and the
        # objects go to the oldest generation unvisited as the pause ends: core.gcpause)
        with gcpause.paused():
            try:
                return _from_cache(payload)
            except (ValueError, TypeError, EOFError, LookupError, AttributeError):  # not a catalog of this schema
                pass
    cat = _validated(overlay, overlay_text)
    try:
        blob = _to_cache(cat)
    except (ValueError, TypeError):  # a value marshal cannot hold: no cache entry, the answer is the same
        return cat
    cache.write_bytes("catalog", key, blob)
    return cat


# ---- the cache's fast path: the validated objects, restored without validating ----------------------
#
# A cache entry is a payload this code wrote itself from a catalog it had just validated, filed under the
# digest of the catalog text, the overlay and the schema's source (``_builtin_digest``), with a checksum of
# its own (core/cache.py). Validating it again would only re-check what was checked, and building the
# catalog's pydantic schemas (``defer_build``) would cost more than the whole load. So the payload is each
# model object's state as pydantic keeps it -- its field values (``__dict__``), which fields the YAML set
# (``model_fields_set``: hardware._merge reads it) and its private attributes (an offer's USD rate) --
# and loading it makes the same objects directly (what ``model_construct`` does, without its per-field
# work). The state is marshalled: plain values (str, int, float, bool, None, lists and dicts of them)
# keep their exact types (80 stays an int, 80.0 a float). A model object is the tuple
# ``(class number, its __dict__, fields set, private values)``: the ``__dict__`` is marshalled as the
# dict it is (field names in field order, each name one shared string), so loading takes the dict
# marshal built as the object's ``__dict__`` instead of building it again in Python (format 1 kept the
# values as a tuple and zipped it with the names: that walk was ~1.0 ms of a first load's ~2.5 ms).
# Entries of a frozen class that set the same fields share one ``model_fields_set`` set (110 sets for
# the 386 entries of the built-in catalog, not 386: the sets were 0.4 of the 1 MB a hit allocated, and
# on a VM every new page is a ~3 us fault). Sharing is safe only because pydantic changes an object's
# fields set in place on assignment alone, which a frozen model refuses; ``model_copy`` copies it
# first. An entry of a class that is not frozen gets its own copy.
# The payload names its classes with their field names and, per class, the fields that can hold
# models, so loading walks only those. Its shape is still checked (the class names and field names,
# each object's number of values): a payload that is not this schema's falls back to the YAML.

_PAYLOAD_FORMAT = "gpuwiz-catalog-marshal 2"


def _nested_fields(cls: type[BaseModel]) -> list[int]:
    """Positions (in field order) of the fields of ``cls`` whose annotation can hold a model."""
    out = []
    for i, f in enumerate(cls.model_fields.values()):
        stack = [f.annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                out.append(i)
                break
            stack.extend(get_args(t))
    return out


def _to_cache(cat: Catalog) -> bytes:
    """The marshal payload of a validated catalog (see above)."""
    import marshal

    classes: dict[type[BaseModel], int] = {}
    strings: dict[str, str] = {}  # one object per distinct string: marshal writes a repeat as a reference
    fields_sets: dict[frozenset[str], set[str]] = {}  # one set per distinct fields set (see above)

    def enc(v: Any) -> Any:
        if isinstance(v, BaseModel):
            cls = type(v)
            num = classes.setdefault(cls, len(classes))
            state = v.__dict__
            values = {strings.setdefault(name, name): enc(state[name]) for name in cls.model_fields}
            set_names = {strings.setdefault(name, name) for name in v.model_fields_set}
            fields_set = fields_sets.setdefault(frozenset(set_names), set_names)
            private = v.__pydantic_private__
            return (num, values, fields_set, None if private is None else enc(dict(private)))
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, dict):
            if not all(type(k) is str for k in v):
                raise TypeError("a mapping with a key that is not a string")
            return {strings.setdefault(k, k): enc(x) for k, x in v.items()}
        if type(v) is str:
            return strings.setdefault(v, v)
        if v is None or type(v) in (int, float, bool):
            return v
        raise TypeError(f"no cache form for a {type(v).__name__}")  # a tuple would read as a model

    tree = enc(cat)
    names = [(c.__module__, c.__qualname__, tuple(c.model_fields), _nested_fields(c)) for c in classes]
    return marshal.dumps((_PAYLOAD_FORMAT, names, tree), 4)


def _from_cache(payload: bytes | memoryview) -> Catalog:
    """The catalog from a cache payload (see above). Raises ValueError / TypeError (or EOFError,
    LookupError, AttributeError from a payload of another shape) when it is not this schema's catalog;
    the caller then rebuilds from the YAML."""
    import marshal

    fmt, names, tree = marshal.loads(payload)
    if fmt != _PAYLOAD_FORMAT:
        raise ValueError("another payload format")
    classes: list[tuple[type[BaseModel], Any, int, tuple[str, ...], bool]] = []
    for module, qualname, fields, nested in names:
        cls = sys.modules[module].__dict__[qualname]  # every schema module is imported by this one
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or fields != tuple(cls.model_fields):
            raise TypeError(f"{module}.{qualname} is not a model of the catalog's schema")
        shared = cls.model_config.get("frozen") is True  # may share its fields set (see above)
        classes.append((cls, cls.__new__, len(fields), tuple(fields[i] for i in nested), shared))
    # pydantic's slots, set through their descriptors (what object.__setattr__ reaches, without its lookup)
    slots = BaseModel.__dict__
    set_dict = slots["__dict__"].__set__
    set_fields = slots["__pydantic_fields_set__"].__set__
    set_extra = slots["__pydantic_extra__"].__set__
    set_private = slots["__pydantic_private__"].__set__

    def dec(v: Any) -> Any:
        if type(v) is tuple:
            cls, new, size, nested, shared = classes[v[0]]
            values, fields_set, private = v[1], v[2], v[3]
            if (type(values) is not dict or len(values) != size or type(fields_set) is not set
                    or (private is not None and type(private) is not dict)):
                raise TypeError(f"not the state of a {cls.__name__}")
            for name in nested:
                values[name] = dec(values[name])
            obj = new(cls)
            set_dict(obj, values)
            set_fields(obj, fields_set if shared else set(fields_set))
            set_extra(obj, None)
            set_private(obj, private)
            return obj
        if type(v) is list:
            return [dec(x) for x in v]
        if type(v) is dict:
            return {k: dec(x) for k, x in v.items()}
        return v

    cat = dec(tree)
    if type(cat) is not Catalog:
        raise TypeError("not a catalog")
    return cat


def load_catalog(overlay: str | os.PathLike[str] | None = None) -> Catalog:
    """The built-in catalog, optionally with a user overlay merged on top.

    Cached in-process and on disk, both keyed by content (built-in catalog, overlay text, schema
    source, versions), so an edited overlay is always re-read and never served stale."""
    if overlay is None:
        return _load_cached(_cache_key(None), None, None)
    path = os.fspath(overlay)
    text = read_text(path)
    return _load_cached(_cache_key(text), path, text)
