"""Size the server around the GPUs: CPU, host RAM, storage, network, power/heat/site, software.

``size_system(req, cat, gpu, gpus_per_node, nodes, workload)`` returns a :class:`Build` with a bill
of materials and its capex. Pure and deterministic; part choices come from the catalog's
``platforms``, ``storage`` and ``network`` sections, falling back to generic parts (marked as such
in the BOM note) when a section has nothing that fits.

Sources for the rules (see ../shared/research/tco_and_pitfalls.md):
- CPU cores: ml-engineering ``compute/cpu/README.md`` -- cores = GPUs x (workers + 1) + 4, with 2
  DataLoader workers per GPU for language models and 4 for image / audio decode (§B7).
- PCIe lanes: x16 per data-centre GPU (x8 acceptable for consumer cards), x4 per NVMe, x16 per NIC
  (io.net docs citing Intel ARK, §B4); HGX baseboards put 2 GPUs + 2 NICs behind each PCIe switch
  with one x16 uplink (NVIDIA DGX H100 architecture).
- Host RAM: >= total VRAM, 2x recommended, more with CPU offload (ml-engineering
  ``compute/cpu-memory``; DGX / AWS p4d / p5 reference systems ship 2-3.6x, §B8).
- Storage: full checkpoint ~14 B/param for mixed-precision AdamW; keep the 2 latest locally plus an
  off-site copy; keep 20 % free ("80 % is the new 100 %"); small files (< 64 KB) read ~2.7x slower
  (ml-engineering ``storage/README.md`` and ``training/fault-tolerance``, §B9, §B15).
- Power: Epoch AI ``chip_to_server_power()`` (8-GPU HGX node = 1.82 x GPU TDP, DGX H100 10.2 kW) and
  ``server_TDP_fraction()`` = 0.75 during training; PSU at >= 1.25x load, 1.4x for 450-600 W consumer
  cards (transients); one office circuit carries 80 % of its rating continuously: the country's mains
  from the catalog (``office_circuit``: 15 A/120 V = 1,440 W in the US, 16 A/230 V = 2,944 W in DE,
  15 A/100 V = 1,200 W in JP), facility ``office_circuit_w`` elsewhere (§B5).
- Software: CUDA >= 11.8 for Hopper, >= 12.8 for Blackwell; driver branches from the NVIDIA MIG
  user guide; PyTorch ROCm wheels are Linux only (§B11, §B12).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from gpuwiz.core import memo
from gpuwiz.core.catalog import CPU, GPU, Catalog, Chassis, Dimm, NetworkOption, StorageTier
from gpuwiz.core.models import USED_TIER, BomLine, Build, Estimate, RentedInstance, Requirements
from gpuwiz.core.units import GB_PER_GIB
from gpuwiz.i18n import _

# Epoch AI training-cost-trends: server power / (n x chip TDP) = (10.2/8)/0.7 for H100 HGX.
CHIP_TO_SERVER_HGX = 1.82
TRAIN_LOAD_FRAC = 0.75  # Epoch server_TDP_fraction(): servers draw ~75 % of max while training
PSU_MARGIN = 1.25  # PSU rating >= 1.25x worst-case load (Puget / thefpsreview 2020)
PSU_MARGIN_TRANSIENT = 1.4  # 4090/5090-class cards spike far above TGP (clankerbuilder 2026 [weak])
STD_PSU_W = (850, 1000, 1200, 1300, 1600, 2000, 2400, 2800, 3200, 4000, 5000, 6000, 8000, 10000, 12000,
             16000, 20000)

CKPT_BYTES_PER_PARAM = {"adamw": 14.0, "adamw-8bit": 8.0, "sgd": 10.0}  # bf16 w + fp32 master + states
KEEP_LOCAL_CKPTS = 3  # the 2 latest (the last may be corrupt) + the one being written
BULK_CKPT_HISTORY = 10  # checkpoints archived on the bulk tier
FREE_SPACE = 1.25  # keep 20 % free

TEXT_SEQ_DEFAULT = 512  # tokens per text sample when neither the config nor the preset says (BERT-class)
MODALITY = {"cnn": "image", "vit": "image", "diffusion": "image", "speech": "audio"}


@dataclass(frozen=True)
class Workload:
    """What the sizing rules need from the requirements and the estimate."""

    modality: str  # text | image | audio
    params_total: float
    params_trainable: float
    method: str
    optimizer: str
    dataset_gb: float  # one copy of the training data on disk
    sample_kb: float | None
    samples_per_s_per_gpu: float | None
    tokens_per_s_per_gpu: float | None
    offload: str = "none"
    host_ram_gib: float = 0.0  # pinned host memory CPU offload needs, per node
    framework: str = "PyTorch DDP"
    zero_stage: int = 0
    tp: int = 1
    pp: int = 1
    model_parallel: bool = False  # tensor, pipeline, context or expert parallelism

    @property
    def checkpoint_gb(self) -> float:
        """One resumable training checkpoint (weights + master + optimizer states)."""
        bpp = CKPT_BYTES_PER_PARAM.get(self.optimizer, 14.0)
        if self.method in ("lora", "qlora"):
            return self.params_trainable * bpp / 1e9  # adapters + their optimizer state only
        return self.params_total * bpp / 1e9

    @property
    def base_weights_gb(self) -> float:
        """Frozen base model kept on disk once (LoRA / QLoRA)."""
        if self.method in ("lora", "qlora"):
            return self.params_total * 2 / 1e9
        return 0.0


@dataclass(frozen=True, slots=True)
class PlanFacts:
    """What the sizing reads of an estimate (``workload_from``): the model's family and parameters, the speed
    per GPU and the plan's offload and layout. ``of`` takes them from a full Estimate; the recommender also
    makes them from the estimator's fast path (no full Estimate) for a build it only sizes."""

    family: str
    params_total: float
    params_trainable: float
    tokens_per_s_per_gpu: float | None
    samples_per_s_per_gpu: float | None
    offload: str
    host_ram_gib: float
    framework: str
    zero_stage: int
    tp: int
    pp: int
    model_parallel: bool  # tensor, pipeline, context or expert parallelism (Shape.model_parallel)

    @staticmethod
    def of(est: Estimate) -> PlanFacts:
        p = est.plan
        return PlanFacts(est.model.family, est.model.params_total, est.model.params_trainable,
                         est.throughput.tokens_per_s_per_gpu, est.throughput.samples_per_s_per_gpu, p.offload,
                         est.memory.host_ram_gib, p.framework, p.zero_stage, p.tp, p.pp,
                         p.tp > 1 or p.pp > 1 or p.cp > 1 or p.ep > 1)


def workload_from(req: Requirements, cat: Catalog, est: Estimate | PlanFacts | None) -> Workload:
    """Collect the sizing inputs; dataset size from data.dataset_gb, else tokens / samples."""
    f = PlanFacts.of(est) if isinstance(est, Estimate) else est
    family = f.family if f else (req.model.family or "decoder")
    modality = MODALITY.get(family, "text")
    sample_kb = req.data.sample_kb
    preset = next((m for m in cat.models if m.id == req.model.preset), None) if req.model.preset else None
    if preset is not None:  # an unknown preset is the estimator's error to report
        modality = preset.modality if preset.modality != "text" else modality
        sample_kb = sample_kb or preset.sample_kb
    if req.data.dataset_gb:
        dataset_gb = float(req.data.dataset_gb)
    elif req.data.tokens:
        dataset_gb = req.data.tokens * 4 / 1e9  # raw text ~4 bytes per token (~4 chars/token)
    elif req.data.samples and modality == "text" and not sample_kb:
        # A text sample is a sequence of tokens (~4 bytes of raw text each), not a 110 KB image: 20M
        # BERT sequences are ~40 GB, not 2.2 TB to stage and store.
        seq = req.model.seq_len or (preset.seq_len if preset is not None else None) or TEXT_SEQ_DEFAULT
        dataset_gb = req.data.samples * seq * 4 / 1e9
    elif req.data.samples:
        dataset_gb = req.data.samples * (sample_kb or 110.0) / 1e6
    else:
        dataset_gb = 100.0
    params_total = f.params_total if f else (req.model.params_b or 1.0) * 1e9
    trainable = f.params_trainable if f else params_total
    return Workload(
        modality=modality,
        params_total=params_total,
        params_trainable=trainable,
        method=req.training.method,
        optimizer=req.training.optimizer,
        dataset_gb=dataset_gb,
        sample_kb=sample_kb,
        samples_per_s_per_gpu=f.samples_per_s_per_gpu if f else None,
        tokens_per_s_per_gpu=f.tokens_per_s_per_gpu if f else None,
        offload=f.offload if f else "none",
        host_ram_gib=f.host_ram_gib if f else 0.0,
        framework=f.framework if f else "PyTorch DDP",
        zero_stage=f.zero_stage if f else 0,
        tp=f.tp if f else 1,
        pp=f.pp if f else 1,
        model_parallel=f.model_parallel if f else False,
    )


# ---- rules ---------------------------------------------------------------------------------------


# Data-centre nodes (HGX / 8-GPU servers, clusters) carry ~12-16 cores per GPU for data loading,
# NCCL proxy threads, async checkpoint writes and monitoring: DGX A100 2 x 64 (16/GPU), DGX H100 /
# B200 2 x 56 (14/GPU), AWS p5 96 cores (12/GPU) -- NVIDIA DGX user guides, AWS p5 instance page.
DC_CORES_PER_GPU = 12
# The slowest GPU those reference systems carry (DGX A100): a single PCIe server of slower data-centre cards
# (A10, L4, A30, H20 PCIe ...) feeds proportionally less work per GPU, and its floor scales by the card's dense
# 16-bit rate against this one's (a judgement: the host's share of a step -- input pipeline, launches,
# checkpoint writes -- follows the rate the GPU consumes work at). HGX boards and clusters keep the full floor:
# their NICs and NCCL proxy threads do not shrink with the GPU.
DC_REFERENCE_GPU = "a100-80gb-sxm"


def cores_needed(gpus_per_node: int, modality: str, datacenter: bool = False, rate: float = 1.0) -> int:
    """ml-engineering compute/cpu: 1 core per training process + 1 per DataLoader worker + 4 for the OS;
    data-centre nodes at least DC_CORES_PER_GPU per GPU (reference systems), times ``rate`` (at most 1: the
    GPU's dense 16-bit rate over DC_REFERENCE_GPU's, for a single PCIe server)."""
    workers = 2 if modality == "text" else 4
    rule = gpus_per_node * (workers + 1) + 4
    if not datacenter:
        return rule
    return max(rule, math.ceil(DC_CORES_PER_GPU * min(1.0, rate) * gpus_per_node - 1e-9))


def dc_rate(cat: Catalog, gpu: GPU) -> float:
    """``cores_needed``'s ``rate`` for a single PCIe server of ``gpu``: its dense bf16 (else fp16) rate over
    DC_REFERENCE_GPU's (1.0 when either is unknown)."""
    ref = next((g for g in cat.gpus if g.id == DC_REFERENCE_GPU), None)
    mine = gpu.bf16_tflops or gpu.fp16_tflops
    theirs = (ref.bf16_tflops or ref.fp16_tflops) if ref is not None else None
    return mine / theirs if mine and theirs else 1.0


def lanes_per_gpu(gpu: GPU, gpus_per_node: int = 1) -> int:
    """x8 per card is fine for two consumer cards on a desktop board (x8/x8 bifurcation); past two,
    consumer cards have no P2P/NVLink, so every all-reduce crosses PCIe through host memory and each
    card wants its full x16 (a Threadripper PRO / Xeon W / EPYC platform)."""
    return 8 if gpu.segment == "consumer" and gpus_per_node <= 2 else 16


def lanes_needed(gpu: GPU, gpus_per_node: int, nvme: int, nics: int, switched: bool) -> int:
    """CPU lanes the node needs; ``switched``: its GPUs and NICs sit behind PCIe switches (an HGX baseboard, or a
    PCIe server built with switches: Chassis.pcie_switches)."""
    if switched:
        # GPUs and NICs sit behind PCIe switches on the baseboard, one x16 uplink per 2 GPUs.
        return 16 * math.ceil(gpus_per_node / 2) + 4 * nvme + 16
    # Single-node ingest NICs hang off the chipset; cluster NICs want their own x16.
    return lanes_per_gpu(gpu, gpus_per_node) * gpus_per_node + 4 * nvme + 16 * nics


def ram_target_gb(vram_gb: float, host_ram_gib: float, offload: str) -> tuple[float, float]:
    """(floor, recommended) host RAM in GB: >= total VRAM, 2x recommended, +offload buffers."""
    floor = vram_gb
    # 2x VRAM, but 8-GPU HGX reference systems stop at ~2 TB (DGX H100 2 TB for 640 GB; DGX B200 2 TB
    # for 1,440 GB): past 1 TB of VRAM, VRAM + 512 GB is enough without offload.
    rec = 2.0 * vram_gb if vram_gb <= 1024 else max(vram_gb + 512.0, 2048.0)
    if offload != "none":
        rec = max(rec, 3.0 * vram_gb, vram_gb + host_ram_gib * GB_PER_GIB * 1.25)
        floor = max(floor, host_ram_gib * GB_PER_GIB + 0.5 * vram_gb)
    return floor, max(rec, 32.0)


# ---- part choice ---------------------------------------------------------------------------------


CHASSIS_ORDER = {"desktop": 0, "workstation": 1, "server": 2, "hgx": 3}
TOWER_KINDS = ("desktop", "workstation")


def chassis_fits(ch: Chassis, gpu: GPU, gpus_per_node: int, site: str, slot_strict: bool = True) -> bool:
    """The one rule for whether a chassis takes ``gpus_per_node`` of these GPUs at this site: the
    form (NVL cards are PCIe), the count, the cooler (a tower cannot cool passive cards; they need a
    server's front-to-back airflow), the baseboards sold for it (HGX B200 is an 8-GPU board only;
    HGX H100/H200 come as 4- or 8-GPU boards: ``only_gpus`` and ``max_gpus``), the board a GPU is
    sold on (an A16 is one board of 4), the slot width and the site (a desk takes towers only)."""
    form = {"nvl": "pcie"}.get(gpu.form_factor, gpu.form_factor)
    if ch.gpu_form != form or ch.max_gpus < gpus_per_node or gpu.cooling not in ch.cools:
        return False
    if ch.only_gpus is not None and gpu.id not in ch.only_gpus:
        return False
    if ch.kind == "hgx" and gpus_per_node != ch.max_gpus:
        return False  # baseboards are sold whole
    if gpus_per_node % gpu.sold_as_board:
        return False
    if site == "desk" and ch.kind not in TOWER_KINDS:
        return False
    if slot_strict and packed_open_air(ch, gpu, gpus_per_node):
        return False
    return not (slot_strict and form == "pcie" and ch.max_slot_width < gpu.slot_width)


def packed_open_air(ch: Chassis, gpu: GPU, gpus_per_node: int) -> bool:
    """The one cooling rule for open-air cards: three or more open-air coolers slot to slot (no gap:
    the chassis' widest card is this card's width) recirculate each other's heat (Puget Systems); a
    GPU chassis with a gap between the cards (90 mm pitch) cools them. Such a box takes blower or
    liquid-cooled variants of the card instead."""
    return (gpu.cooling == "open-air" and gpus_per_node > 2 and ch.gpu_form == "pcie"
            and ch.max_slot_width <= gpu.slot_width)


def chassis_options(cat: Catalog, gpu: GPU, gpus_per_node: int, site: str, lean: bool = False) -> list[Chassis]:
    """Chassis that take the GPUs, best first: the smallest kind of box (for up to 2 GPUs; past that
    any kind that takes them), then price. Lean chassis only on the lean tier. When no chassis takes
    cards this wide, the boxes that take narrower (2-slot blower) variants of an open-air card."""
    return list(memo.cached(cat, "chassis_options", (gpu.id, gpus_per_node, site, lean),
                            lambda: tuple(_chassis_options(cat, gpu, gpus_per_node, site, lean)), catalog_only=True))


def _chassis_options(cat: Catalog, gpu: GPU, gpus_per_node: int, site: str, lean: bool) -> list[Chassis]:
    pool = [c for c in cat.platforms.chassis if (lean or not c.lean) and c.sold_new]
    fits = [c for c in pool if chassis_fits(c, gpu, gpus_per_node, site)]
    if not fits and gpu.cooling == "open-air":  # 2-slot blower variants exist (RTX 3090 / 4090 "turbo")
        fits = [c for c in pool if chassis_fits(c, gpu, gpus_per_node, site, slot_strict=False)]
    return sorted(fits, key=lambda c: (CHASSIS_ORDER[c.kind] if gpus_per_node <= 2 else 0, c.price_usd, c.max_gpus))


def pick_chassis(cat: Catalog, gpu: GPU, gpus_per_node: int, site: str, lean: bool = False) -> Chassis | None:
    options = chassis_options(cat, gpu, gpus_per_node, site, lean)
    return options[0] if options else None


def cpu_fits_chassis(cpu: CPU, chassis: Chassis | None) -> bool:
    """The one rule for which CPUs a chassis' board takes: its segment, and its socket's vendor when
    the board has one (a WRX90 board takes Threadripper PRO, not a Xeon W)."""
    if chassis is None:
        return cpu.segment == "server"
    return cpu.segment == chassis.cpu_segment and chassis.cpu_vendor in (None, cpu.vendor)


def desktop_board(chassis: Chassis | None) -> bool:
    """The chassis takes a desktop CPU, and so desktop memory (UDIMMs)."""
    return bool(chassis and chassis.cpu_segment == "desktop")


def pick_cpu(cat: Catalog, chassis: Chassis | None, cores: int, lanes: int,
             ram_gb: float | None = None) -> tuple[CPU | None, int]:
    """Cheapest CPU (x sockets) the chassis' board takes (cpu_fits_chassis) with enough cores and lanes; with
    ``ram_gb``, cheapest with the DIMMs its channels then take for that much RAM (``pick_memory``): two small
    sockets fill twice the channels, and a 4x L4 box took 2x 16-core EPYC and 24 DIMMs where one 32-core part
    and 12 cost $1.6k less (memoised per catalog: a pure function of its parts; the chassis is one of the
    catalog's rows)."""
    key = (id(chassis) if chassis is not None else None, cores, lanes, ram_gb)
    return memo.cached(cat, "pick_cpu", key, lambda: _pick_cpu(cat, chassis, cores, lanes, ram_gb),
                       catalog_only=True)


def _pick_cpu(cat: Catalog, chassis: Chassis | None, cores: int, lanes: int,
              ram_gb: float | None) -> tuple[CPU | None, int]:
    sockets_max = chassis.sockets if chassis else 2
    desktop = desktop_board(chassis)
    best: tuple[float, CPU, int] | None = None
    for cpu in cat.platforms.cpus:
        if not cpu_fits_chassis(cpu, chassis):
            continue
        for sockets in range(1, min(sockets_max, cpu.max_sockets) + 1):
            # Dual-socket EPYC/Xeon: some lanes go to the socket link; usable lanes ~ 1.25x one socket.
            have_lanes = cpu.pcie_lanes if sockets == 1 else int(cpu.pcie_lanes * 1.25)
            if cpu.cores * sockets >= cores and have_lanes >= lanes:
                cost = cpu.price_usd * sockets
                if ram_gb is not None:
                    dimm, n = pick_memory(cat, cpu, sockets, ram_gb, desktop)
                    cost += dimm.price_usd * n if dimm is not None else 0.0
                if best is None or cost < best[0]:
                    best = (cost, cpu, sockets)
    if best is None:  # nothing meets both: the most lanes there are, and of those parts the cheapest with the cores
        cands = [c for c in cat.platforms.cpus if cpu_fits_chassis(c, chassis)] or list(cat.platforms.cpus)
        if not cands:
            return None, 1
        most = max(c.pcie_lanes for c in cands)
        top = [c for c in cands if c.pcie_lanes == most]
        enough = [c for c in top if c.cores * min(sockets_max, c.max_sockets) >= cores]
        # (more cores than the node needs buy no lanes: a 128-core part was taken where a 48-core one had as many)
        cpu = min(enough, key=lambda c: c.price_usd) if enough else max(top, key=lambda c: c.cores)
        sockets = min(sockets_max, cpu.max_sockets)
        return cpu, sockets
    return best[1], best[2]


def cpu_lanes(cpu: CPU, sockets: int) -> int:
    return cpu.pcie_lanes if sockets == 1 else int(cpu.pcie_lanes * 1.25)


def _cpu_ok(cpu: CPU, sockets: int, cores: int, lanes: int) -> bool:
    return cpu.cores * sockets >= cores and cpu_lanes(cpu, sockets) >= lanes


# DIMM sizes are binary: a fill within this fraction of the target counts as meeting it (256 GB for a
# 275 GB target). The host-ram pitfall reads the same tolerance, so the build never carries RAM the
# tool then flags.
DIMM_TOLERANCE = 0.9


def pick_memory(cat: Catalog, cpu: CPU | None, sockets: int, target_gb: float,
                desktop: bool) -> tuple[Dimm | None, int]:
    """Fill memory channels evenly (1 or 2 DIMMs per channel) with the cheapest config >= target
    (memoised per catalog: a pure function of its parts; the CPU is one of the catalog's rows)."""
    key = (id(cpu) if cpu is not None else None, sockets, target_gb, desktop)
    return memo.cached(cat, "pick_memory", key, lambda: _pick_memory(cat, cpu, sockets, target_gb, desktop),
                       catalog_only=True)


def _pick_memory(cat: Catalog, cpu: CPU | None, sockets: int, target_gb: float,
                 desktop: bool) -> tuple[Dimm | None, int]:
    # Current desktop / Threadripper 7000 / EPYC 9004 / Xeon 4th-gen platforms take DDR5.
    kinds = ("ddr5-udimm",) if desktop else ("ddr5-rdimm",)
    dimms = ([d for d in cat.platforms.memory if d.kind in kinds]
             or [d for d in cat.platforms.memory if d.kind.endswith("udimm" if desktop else "rdimm")]
             or list(cat.platforms.memory))
    if not dimms:
        return None, 0
    # DIMMs rated at least at the CPU's memory speed (they run at the CPU's speed, never above).
    if cpu is not None:
        dimms = [d for d in dimms if d.mts >= cpu.memory_mts] or dimms
    channels = (cpu.memory_channels if cpu else 8) * sockets
    cap = (cpu.max_memory_gb * sockets) if cpu else 1e9
    best: tuple[float, Dimm, int] | None = None
    fallback: tuple[float, Dimm, int] | None = None
    for d in dimms:
        for per_channel in (1, 2):
            n = channels * per_channel
            total = n * d.capacity_gb
            if total > cap:
                continue
            cost = n * d.price_usd
            if total >= DIMM_TOLERANCE * target_gb and (best is None or cost < best[0]):
                best = (cost, d, n)
            if fallback is None or total > fallback[1].capacity_gb * fallback[2]:
                fallback = (cost, d, n)
    pick = best or fallback
    if pick is None:
        d = min(dimms, key=lambda x: x.capacity_gb)
        return d, channels
    return pick[1], pick[2]


def _tiers(cat: Catalog, *kinds: str) -> list[StorageTier]:
    return [s for s in cat.storage if s.kind in kinds]


M2_SLOTS = {"desktop": 2, "workstation": 4}  # M.2 sockets on typical AM5 / TRX50-WRX90 boards


def pick_nvme(cat: Catalog, chassis: Chassis | None, target_tb: float,
              read_gbps: float) -> tuple[StorageTier | None, int]:
    """The local NVMe tier and drive count: the cheapest set that holds ``target_tb`` and reads
    ``read_gbps``. Desktop / workstation boxes take consumer M.2 drives (as many as the board has
    M.2 sockets); servers take enterprise U.2 (hot-swap bays, power-loss protection)."""
    m2, pool = _nvme_pools(cat)
    kind = chassis.kind if chassis else "server"
    slots = M2_SLOTS.get(kind)
    if slots is not None:
        hit = _cheapest_drives(m2, target_tb, read_gbps, slots, strict=True)
        if hit is not None:
            return hit
    return _cheapest_drives(pool, target_tb, read_gbps, 16, strict=False) or (None, 1)


def _nvme_pools(cat: Catalog) -> tuple[list[StorageTier], list[StorageTier]]:
    """The catalog's NVMe tiers by capacity: (the M.2 ones, the others -- or all when there are none), once
    per catalog (a system sizing asks for them every time)."""
    got: tuple[list[StorageTier], list[StorageTier]] | None = cat.derived.get(("nvme-pools",))
    if got is None:
        tiers = sorted(_tiers(cat, "nvme"), key=lambda s: (s.capacity_tb or 0))
        got = cat.derived.setdefault(("nvme-pools",), ([t for t in tiers if t.form == "m.2"],
                                                       [t for t in tiers if t.form != "m.2"] or tiers))
    return got


def _cheapest_drives(tiers: list[StorageTier], target_tb: float, read_gbps: float, max_n: int,
                     strict: bool) -> tuple[StorageTier, int] | None:
    best: tuple[float, StorageTier, int] | None = None
    for t in tiers:
        cap = t.capacity_tb or 1.0
        n = max(1, math.ceil(target_tb / cap), math.ceil(read_gbps / t.read_gbps) if t.read_gbps else 1)
        if n > max_n:
            if strict:
                continue
            n = max_n
        cost = n * (t.price_usd or 0.0)
        if best is None or (n * cap >= target_tb
                            and (best[2] * (best[1].capacity_tb or 1) < target_tb or cost < best[0])):
            best = (cost, t, n)
    return (best[1], best[2]) if best else None


def pick_network(cat: Catalog, gpu: GPU, nodes: int) -> tuple[NetworkOption | None, int, float]:
    """(option, NICs per node, target Gb/s per GPU). Single node: ingest Ethernet only."""
    if nodes <= 1:
        eth = [n for n in cat.network if n.kind == "ethernet" and n.gbps >= 10]
        return (min(eth, key=lambda n: (n.nic_price_usd, -n.gbps)) if eth else None), 1, 0.0
    arch = gpu.architecture.lower()
    # H100 clusters: 8 x 400 Gb/s per node (Cheah 2024; DGX H100); A100: 200 Gb/s HDR per GPU.
    target = (400.0 if arch in ("hopper", "blackwell", "cdna3", "gaudi3") else 200.0 if arch in ("ampere", "cdna2")
              else 100.0)
    rdma = [n for n in cat.network if n.rdma]
    if not rdma:
        return None, 1, target
    ok = [n for n in rdma if n.gbps >= target]
    ib = [n for n in ok if n.kind == "infiniband"]
    pick = min(ib or ok, key=lambda n: (n.gbps, n.nic_price_usd)) if (ib or ok) else max(rdma, key=lambda n: n.gbps)
    return pick, 0, target


def _round_psu(w: float) -> int:
    for s in STD_PSU_W:
        if s >= w:
            return s
    return int(math.ceil(w / 1000.0) * 1000)


def _transient_heavy(gpu: GPU) -> bool:
    return gpu.segment == "consumer" and gpu.tdp_w >= 400


def driver_stack(cat: Catalog, gpu: GPU) -> list[str]:
    """Driver, CUDA and PyTorch wheel that work together (the catalog's ``platforms.software``)."""
    if gpu.vendor == "amd":
        target = f" ({gpu.rocm_gfx_target})" if gpu.rocm_gfx_target else ""
        return [f"ROCm 6.x{target}", _("PyTorch ROCm wheel (Linux only)")]
    if gpu.vendor == "intel":
        return [_("Intel Gaudi software (SynapseAI)"), _("PyTorch with the Gaudi bridge")]
    if gpu.vendor == "huawei":  # Ascend: CANN toolkit, torch_npu adapter, MindSpeed (Megatron-style) training
        return [_("Ascend NPU driver + firmware"), "CANN 8.x", "PyTorch + torch_npu",
                _("MindSpeed for large-model training")]
    stacks = {s.id: s for s in cat.platforms.software}
    s = stacks.get(gpu.architecture.lower())
    if s is None:
        return [_("NVIDIA driver (see NVIDIA's CUDA compatibility table)"), f"CUDA >= {gpu.min_cuda or '12.0'}",
                "PyTorch 2.x"]
    return [_("NVIDIA driver {version}").format(version=_(s.driver)), f"CUDA {s.cuda}", _(s.torch)]  # catalog text


def framework_line(w: Workload) -> str:
    """The training framework the estimate's plan uses, as one line."""
    fw = w.framework or "PyTorch DDP"
    if w.offload != "none" and "DeepSpeed" not in fw:
        fw = _("DeepSpeed ZeRO-{zero} with CPU offload ({what})").format(zero=max(w.zero_stage, 2), what=w.offload)
    if (w.tp > 1 or w.pp > 1) and "Megatron" not in fw:
        fw = _("{fw} (Megatron-style TP={tp}, PP={pp})").format(fw=fw, tp=w.tp, pp=w.pp)
    if w.method in ("lora", "qlora") and w.model_parallel:
        # Adapters on a tensor / pipeline / expert-parallel plan train with NeMo's PEFT recipes on Megatron-Core (as
        # `gpuwiz launch` says); its QLoRA quantises the base to NF4 with NVIDIA's Model Optimizer, not bitsandbytes,
        # whose 4-bit layers are not Megatron's parallel ones (NeMo QLoRA guide, NeMo Framework 24.07 and later)
        fw = (_("{fw} + NeMo PEFT (QLoRA: NF4 base via NVIDIA Model Optimizer)") if w.method == "qlora"
              else _("{fw} + NeMo PEFT (LoRA)")).format(fw=fw)
    elif w.method in ("lora", "qlora"):
        fw += " + PEFT" + (" + bitsandbytes" if w.method == "qlora" else "")
    return fw


def software_stack(cat: Catalog, gpu: GPU, nodes: int, w: Workload) -> list[str]:
    """OS, driver stack, collectives, containers and the training framework, one line each
    (memoised per catalog on what it reads: the GPU, one node or several, the framework line)."""
    fw = framework_line(w)
    return list(memo.cached(cat, "software_stack", (gpu.id, nodes > 1, fw),
                            lambda: tuple(_software_stack(cat, gpu, nodes, fw)), catalog_only=True))


def _software_stack(cat: Catalog, gpu: GPU, nodes: int, framework: str) -> list[str]:
    out = ["Ubuntu 22.04/24.04 LTS"]
    out += driver_stack(cat, gpu)
    # Collectives and monitoring per vendor: NCCL + DCGM (NVIDIA), RCCL + AMD SMI/ROCm
    # validation suite (AMD ROCm docs), HCCL + hl-smi (Intel Gaudi software docs).
    collectives, monitor = {
        "nvidia": (_("NCCL with GPUDirect RDMA"), _("DCGM monitoring + health checks")),
        "amd": (_("RCCL with GPUDirect-style RDMA (ROCm)"), _("AMD SMI / ROCm Validation Suite health checks")),
        "intel": (_("HCCL over the Gaudi on-chip RoCE ports"), _("hl-smi / Gaudi health checks")),
        "huawei": (_("HCCL (Huawei Collective Communication Library) over RoCE"), _("npu-smi health checks")),
    }[gpu.vendor]
    if nodes > 1:
        operator = _("the NVIDIA GPU operator") if gpu.vendor == "nvidia" else _("the vendor's device plugin")
        out += [_("Slurm for training jobs"), _("Kubernetes with {operator} for services").format(operator=operator),
                collectives, monitor]
        out.append(_("Enroot/Pyxis or Docker containers"))
    else:
        out.append("Docker + NVIDIA Container Toolkit" if gpu.vendor == "nvidia" else "Docker")
        if gpu.vendor == "nvidia":
            out.append(_("nvidia-smi / DCGM exporter for monitoring"))
    out.append(framework)
    return out


# ---- the build -----------------------------------------------------------------------------------


def storage_needed_tb(w: Workload) -> float:
    """Capacity the build (or a cloud volume) needs: raw + preprocessed data, local checkpoints, base weights."""
    return (w.dataset_gb * 2 + w.checkpoint_gb * KEEP_LOCAL_CKPTS + w.base_weights_gb) * FREE_SPACE / 1000


NAS_MAX_NODES = 4  # up to this many nodes: local NVMe + a NAS; above, a parallel file system
CKPT_WRITE_S = 300.0  # a full checkpoint lands on shared storage within ~5 min (ml-engineering fault-tolerance)
FRONTEND_GBPS = 100.0  # storage / front-end Ethernet per node in a cluster (DGX H100: 2 x 200/400 GbE in-band)


def fabric_ports(endpoints: int, radix: int) -> tuple[int, int, str]:
    """(switch ports, switches, topology) of a non-blocking fat tree for ``endpoints`` NIC ports.
    One switch when it has room; two tiers (leaves with half their ports up, spines) up to
    radix^2 / 2 endpoints; three tiers beyond (NVIDIA DGX SuperPOD reference architecture)."""
    if endpoints <= radix:
        return endpoints, 1, _("one switch")
    if endpoints <= radix * radix // 2:
        leaves = math.ceil(endpoints / (radix // 2))
        spines = math.ceil(leaves * (radix // 2) / radix)
        return 3 * endpoints, leaves + spines, _("2-tier fat tree ({leaves} leaf + {spines} spine switches)").format(
            leaves=leaves, spines=spines)
    return 5 * endpoints, math.ceil(5 * endpoints / radix), _("3-tier fat tree")


def _nas_or_pfs(cat: Catalog, nodes: int, need_tb: float, need_gbps: float) -> tuple[StorageTier | None, int]:
    """Shared storage for a cluster: the cheapest NAS (a few nodes) or parallel FS (more) that holds
    ``need_tb`` and reads ``need_gbps``; units rounded up for whichever binds."""
    kinds = ("nas",) if nodes <= NAS_MAX_NODES else ("parallel-fs",)
    tiers = _tiers(cat, *kinds) or _tiers(cat, "parallel-fs", "nas")
    best: tuple[float, StorageTier, int] | None = None
    for t in tiers:
        units = max(1, math.ceil(need_tb / (t.capacity_tb or need_tb)), math.ceil(need_gbps / t.read_gbps))
        cost = units * (t.price_usd or 0.0)
        if best is None or cost < best[0]:
            best = (cost, t, units)
    return (best[1], best[2]) if best else (None, 0)


def size_system(req: Requirements, cat: Catalog, gpu: GPU, gpus_per_node: int, nodes: int,
                w: Workload, lean: bool = False, used: bool | None = None) -> Build:
    """The build to own. ``lean``: the small-budget tier (a lean chassis if one takes the GPUs, no
    bulk HDD, no ingest NIC, host RAM at its floor). ``used``: price used GPUs (default: the
    deployment's ``used_hardware``). Memoised (core.memo) on everything it reads: the builds of a
    search's shortlist are the same for every edit that leaves the workload and the site alone."""
    site = req.deployment.site
    used = req.deployment.used_hardware if used is None else used
    circuit = office_circuit(cat, req.deployment.country)
    key = (gpu.id, gpus_per_node, nodes, w, lean, used, site, circuit)  # (memo tables are kept per language)
    return memo.cached(cat, "size_system", key,  # an answer shows 1-3 builds
                       lambda: _build(_size_system(cat, gpu, gpus_per_node, nodes, w, lean, used, site, circuit)),
                       maxsize=512)


@dataclass(frozen=True)
class Sizing:
    """What ranking a build reads of its sizing (``size_cost``): the capex, the tier and the facts
    owning it costs by (cost.Footprint.of) -- the same numbers as ``size_system``'s Build."""

    capex_usd: float
    tier: str
    nodes: int
    gpus_per_node: int
    max_power_w: int  # per node, worst case
    power_w: int  # sustained, per node
    chassis: str | None
    chassis_kind: str | None


def size_cost(req: Requirements, cat: Catalog, gpu: GPU, gpus_per_node: int, nodes: int,
              w: Workload, lean: bool = False, used: bool | None = None) -> Sizing:
    """``size_system``'s numbers without its text (bill-of-materials notes, storage and network lines,
    site, software): the recommender sizes ~10-60 builds per answer to rank them and shows 1-3.
    Memoised on the same key."""
    site = req.deployment.site
    used = req.deployment.used_hardware if used is None else used
    circuit = office_circuit(cat, req.deployment.country)
    key = (gpu.id, gpus_per_node, nodes, w, lean, used, site, circuit)
    return memo.cached(cat, "size_cost", key, lambda: _sizing(
        _size_system(cat, gpu, gpus_per_node, nodes, w, lean, used, site, circuit, text=False)), maxsize=1024)


def _build(b: Build | Sizing) -> Build:
    assert isinstance(b, Build)
    return b


def _sizing(b: Build | Sizing) -> Sizing:
    assert isinstance(b, Sizing)
    return b


@dataclass(frozen=True)
class Circuit:
    """One ordinary office / desk circuit where the build stands (catalog economics.<country>.office_circuit)."""

    volts: float
    amps: float
    continuous_w: float  # what a continuous load may draw from it


def office_circuit(cat: Catalog, country: str) -> Circuit:
    """The country's office circuit (its mains voltage and breaker rating, 80 % for a continuous load);
    a country without one in the catalog gets facility ``office_circuit_w`` (a 15 A/120 V circuit)."""
    row = cat.economics.get(country.upper())
    oc = row.office_circuit if row is not None else None
    if oc is not None:
        return Circuit(volts=oc.volts, amps=oc.amps, continuous_w=oc.continuous_w)
    return Circuit(volts=120.0, amps=15.0, continuous_w=cat.fac("office_circuit_w"))


class _Line:
    """A bill-of-materials line of a ``Sizing`` (``_size_system`` without text): what the capex sums, without
    ``BomLine``'s validation (the ranking sizes ~10-60 builds an answer and reads only their sums)."""

    __slots__ = ("item", "note", "qty", "total_usd", "unit_usd")

    def __init__(self, item: str, qty: int, unit_usd: float | None = None, total_usd: float | None = None,
                 note: str = "") -> None:
        self.item, self.qty, self.unit_usd, self.total_usd, self.note = item, qty, unit_usd, total_usd, note


def _size_system(cat: Catalog, gpu: GPU, gpus_per_node: int, nodes: int, w: Workload, lean: bool, used: bool,
                 site: str, circuit: Circuit, text: bool = True) -> Build | Sizing:
    """The sizing rules. ``text``: the Build with its sentences; without, its numbers alone
    (``Sizing``: the same parts, lines and sums; the sentences of every build are skipped)."""
    if gpu.buy_new_usd is None and gpu.price_used_usd:
        used = True  # not sold new (or no new price): the used market is the only way to buy it
    options = chassis_options(cat, gpu, gpus_per_node, site, lean=lean)
    chassis = options[0] if options else None
    hgx = bool(chassis and chassis.kind == "hgx") or gpu.form_factor in ("sxm", "oam")
    vram_gb = gpus_per_node * gpu.memory_gib * GB_PER_GIB
    bom: list[BomLine] = []
    # numbers alone: a _Line stands in for each BomLine (only its fields are read), without the validation
    line: Callable[..., BomLine] = BomLine if text else cast("Callable[..., BomLine]", _Line)

    ckpt_gb = w.checkpoint_gb
    data_gb = w.dataset_gb
    fast_need_gb = (data_gb + ckpt_gb * KEEP_LOCAL_CKPTS + w.base_weights_gb) * FREE_SPACE
    bulk_need_gb = (data_gb * 2 + ckpt_gb * BULK_CKPT_HISTORY + w.base_weights_gb) * FREE_SPACE
    needed_tb = storage_needed_tb(w)

    # Read throughput the data pipeline needs per node (GB/s).
    if w.samples_per_s_per_gpu and w.sample_kb and w.modality != "text":
        small = 2.7 if w.sample_kb < 64 else 1.0  # small-file penalty, ml-engineering storage
        read_need = gpus_per_node * w.samples_per_s_per_gpu * w.sample_kb / 1e6 * small
    elif w.tokens_per_s_per_gpu:
        read_need = gpus_per_node * w.tokens_per_s_per_gpu * 4 / 1e9  # uint32 token ids
    else:
        read_need = 0.0

    min_fast_tb = 1.0 if lean else 2.0 if nodes == 1 else 4.0  # OS, env, datasets, checkpoints
    fast_tb_target = max(min_fast_tb, fast_need_gb / 1000 if nodes == 1 else min(fast_need_gb / 1000, 30.0))

    # Network: the compute fabric (rails) and a separate storage / front-end network for clusters.
    net, _net_need, target_gbps = pick_network(cat, gpu, nodes)
    nics = 0
    per_gpu_gbps = 0.0
    net_lines: list[BomLine] = []
    if nodes > 1 and net:
        nics = gpus_per_node if hgx else max(1, gpus_per_node // 2)
        per_gpu_gbps = net.gbps * nics / gpus_per_node
        ports, switches, topo = fabric_ports(nics * nodes, net.switch_radix)
        rails = _("{n} rails").format(n=nics) if nics > 1 else _("1 rail")
        net_lines.append(line(item=f"{net.name} NIC", qty=nics * nodes, unit_usd=net.nic_price_usd,
                              total_usd=net.nic_price_usd * nics * nodes,
                              note=(_("compute fabric, one per GPU") if hgx else _("compute fabric")) if text else ""))
        if net.switch_port_usd:
            net_lines.append(line(item=_("{name} switch ports + cables").format(name=net.name), qty=ports,
                                  unit_usd=net.switch_port_usd,
                                  total_usd=net.switch_port_usd * ports,
                                  note=_("{topo}, {rails}, non-blocking ({n} x {radix}-port switches)").format(
                                      topo=topo, rails=rails, n=switches, radix=net.switch_radix) if text else ""))
        fe = [n for n in cat.network if n.kind == "ethernet" and n.gbps >= FRONTEND_GBPS]
        fe_net = min(fe, key=lambda n: (n.gbps, n.nic_price_usd)) if fe else None
        fe_txt = ""
        if fe_net:
            fe_ports, _fe_a, _fe_b = fabric_ports(nodes + 2, fe_net.switch_radix)  # + storage and login nodes
            net_lines.append(line(item=f"{fe_net.name} NIC", qty=nodes, unit_usd=fe_net.nic_price_usd,
                                  total_usd=fe_net.nic_price_usd * nodes,
                                  note=_("storage / front-end network") if text else ""))
            net_lines.append(line(item=_("{name} switch ports + cables").format(name=fe_net.name), qty=fe_ports,
                                  unit_usd=fe_net.switch_port_usd,
                                  total_usd=fe_net.switch_port_usd * fe_ports,
                                  note=_("storage / front-end network") if text else ""))
            fe_txt = _("; separate {name} storage / front-end network").format(name=fe_net.name)
        network = ((_("{n}x {name} per node ({gbps:g} Gb/s each, {per_gpu:g} Gb/s per GPU, RDMA / GPUDirect)")
                    if net.rdma else _("{n}x {name} per node ({gbps:g} Gb/s each, {per_gpu:g} Gb/s per GPU)")).format(
            n=nics, name=net.name, gbps=net.gbps, per_gpu=per_gpu_gbps) + f", {topo}, {rails}{fe_txt}")
    elif nodes > 1:
        network = _("InfiniBand / RoCE RDMA, >= {gbps:g} Gb/s per GPU (not in catalog)").format(gbps=target_gbps)
    elif net and not lean:
        network = _("{name} ({gbps:g} Gb/s) for data ingest").format(name=net.name, gbps=net.gbps) if text else ""
        net_lines.append(line(item=f"{net.name} NIC", qty=1, unit_usd=net.nic_price_usd,
                              total_usd=net.nic_price_usd, note=_("data ingest") if text else ""))
    else:
        network = _("on-board 1-2.5 GbE")

    # CPU and lanes: a box whose CPUs cannot feed the GPUs is the wrong box -- step up.
    pcie_server = not hgx and nodes == 1 and chassis is not None and chassis.cpu_segment == "server" \
        and gpu.segment == "datacenter"
    datacenter = hgx or nodes > 1 or pcie_server
    cores = cores_needed(gpus_per_node, w.modality, datacenter, dc_rate(cat, gpu) if pcie_server else 1.0)
    nvme, n_nvme = pick_nvme(cat, chassis, fast_tb_target, read_need)

    def lanes_in(ch: Chassis | None) -> int:
        return lanes_needed(gpu, gpus_per_node, n_nvme, nics, hgx or bool(ch and ch.pcie_switches))

    lanes = lanes_in(chassis)
    floor_gb, rec_gb = ram_target_gb(vram_gb, w.host_ram_gib, w.offload)
    ram_want = max(floor_gb, 32.0) if lean else rec_gb
    cpu, sockets = pick_cpu(cat, chassis, cores, lanes, ram_want)
    first = chassis
    for alt in options[1:]:
        if cpu is not None and _cpu_ok(cpu, sockets, cores, lanes):
            break
        alt_lanes = lanes_in(alt)
        c2, s2 = pick_cpu(cat, alt, cores, alt_lanes, ram_want)
        if c2 is not None and _cpu_ok(c2, s2, cores, alt_lanes):
            chassis, cpu, sockets, lanes = alt, c2, s2, alt_lanes
            break
    desktop = desktop_board(chassis)
    if chassis is not first:  # the drive form follows the chassis
        nvme, n_nvme = pick_nvme(cat, chassis, fast_tb_target, read_need)
    fast_tb = n_nvme * (nvme.capacity_tb or 1.0) if nvme else fast_tb_target
    fast_read = n_nvme * (nvme.read_gbps if nvme else 3.0)
    storage: list[str] = []
    if nvme:
        if text:
            raid = " RAID-0" if n_nvme > 1 else ""
            storage.append(_("{n}x {name} ({tb:g} TB NVMe{raid}, ~{gbps:.0f} GB/s read)").format(
                n=n_nvme, name=nvme.name, tb=fast_tb, raid=raid, gbps=fast_read))
        bom.append(line(item=nvme.name, qty=n_nvme * nodes, unit_usd=nvme.price_usd,
                        total_usd=(nvme.price_usd or 0) * n_nvme * nodes,
                        note=(_("data + last checkpoints (RAID-0 cache)") if n_nvme > 1
                              else _("data + last checkpoints")) if text else ""))
    elif text:
        storage.append(_("{tb:g} TB NVMe (data + last checkpoints)").format(tb=fast_tb))

    bulk_tb = 0.0
    # The bulk tier (raw data, checkpoint history) has room on the NVMe beside what training keeps there:
    # no drives for it (a pair of 20 TB HDDs was $760 of a $4k desk box fine-tuning on 0.4 GB of data).
    on_nvme = nodes == 1 and bulk_need_gb <= fast_tb * 1000 - fast_need_gb
    if on_nvme and not lean and text:
        storage.append(_("raw data and checkpoint history ({gb:,.0f} GB) on the NVMe too: no bulk drives").format(
            gb=bulk_need_gb))
    if nodes == 1 and not lean and not on_nvme:
        hdd = sorted(_tiers(cat, "hdd"), key=lambda s: (s.capacity_tb or 0))
        if hdd:
            # The smallest drive that makes a mirrored pair big enough, else the largest in numbers.
            fit = [t for t in hdd if 2 * (t.capacity_tb or 1.0) * 1000 >= bulk_need_gb]
            t = fit[0] if fit else hdd[-1]
            n = max(2, math.ceil(bulk_need_gb / 1000 / (t.capacity_tb or 1.0)))  # >= 2: a mirrored pair
            bulk_tb = n * (t.capacity_tb or 1.0)
            if text:
                storage.append(_("{n}x {name} ({tb:g} TB HDD bulk: raw data, checkpoint history)").format(
                    n=n, name=t.name, tb=bulk_tb))
            bom.append(line(item=t.name, qty=n, unit_usd=t.price_usd, total_usd=(t.price_usd or 0) * n,
                            note=_("bulk: raw data + checkpoint history") if text else ""))
    elif nodes > 1:
        shared_tb = max(bulk_need_gb / 1000, 10.0)
        shared_gbps = max(read_need * nodes, ckpt_gb / CKPT_WRITE_S)
        tier, units = _nas_or_pfs(cat, nodes, shared_tb, shared_gbps)
        if tier is not None:
            what = "NAS (NFS)" if tier.kind == "nas" else _("parallel file system (Lustre / GPFS / WEKA class)")
            storage.append(_("{name} ({units} unit(s), ~{gbps:.0f} GB/s, >= {tb:.0f} TB shared)").format(
                name=tier.name, units=units, gbps=units * tier.read_gbps, tb=shared_tb))
            bom.append(line(item=tier.name, qty=units, unit_usd=tier.price_usd,
                            total_usd=(tier.price_usd or 0) * units,
                            note=_("shared {what}: {tb:,.0f} TB, {gbps:,.1f} GB/s needed (data + checkpoint "
                                   "writes)").format(what=what, tb=shared_tb, gbps=shared_gbps) if text else ""))
        else:
            storage.append(_("shared storage, >= {tb:.0f} TB (not in catalog)").format(tb=shared_tb))
    if text:
        each = f"~{ckpt_gb:,.0f} GB" if ckpt_gb >= 1 else "< 1 GB"
        storage.append(_("off-site copy of checkpoints ({each} each) in object storage").format(each=each))
    bom += net_lines

    cpu_lanes_have = 0
    if cpu:
        cpu_lanes_have = cpu_lanes(cpu, sockets)
        bom.append(line(item=cpu.name, qty=sockets * nodes, unit_usd=cpu.price_usd,
                        total_usd=cpu.price_usd * sockets * nodes,
                        note=_("{cores} cores/node (need {need}), {lanes} lanes (need {need_lanes})").format(
                               cores=cpu.cores * sockets, need=cores, lanes=cpu_lanes_have, need_lanes=lanes)
                        if text else ""))

    # RAM.
    dimm, n_dimm = pick_memory(cat, cpu, sockets, ram_want, desktop)
    ram_gb = int(n_dimm * dimm.capacity_gb) if dimm else int(2 ** math.ceil(math.log2(max(rec_gb, 16))))
    if dimm:
        bom.append(line(item=dimm.name, qty=n_dimm * nodes, unit_usd=dimm.price_usd,
                        total_usd=dimm.price_usd * n_dimm * nodes,
                        note=(_("{gb} GB/node = {x:.1f}x VRAM").format(gb=ram_gb, x=ram_gb / max(vram_gb, 1))
                                 + (_("; runs at {mts} MT/s on this CPU").format(mts=min(dimm.mts, cpu.memory_mts))
                                    if cpu else "")) if text else ""))

    # Power and heat.
    cpu_w = (cpu.tdp_w if cpu else 250.0) * sockets
    gpu_w = gpus_per_node * gpu.tdp_w
    if hgx:
        max_w = max(gpu_w * CHIP_TO_SERVER_HGX, gpu_w + cpu_w + 1000)
        sustained = max_w * TRAIN_LOAD_FRAC
    else:
        base = 150.0 if desktop else 400.0  # board, RAM, drives, fans
        max_w = gpu_w + cpu_w + base
        # GPUs sit at their power limit while training (Puget 2020); CPUs ~60 %.
        sustained = gpu_w + 0.6 * cpu_w + base * 0.8
    psu_need = psu_needed_w(gpu, max_w, hgx)
    heat_kw = sustained * nodes / 1000.0
    where = place(site, sustained, nodes, chassis, circuit) if text else ""
    where_kind = place_kind(site, sustained, nodes, chassis, circuit.continuous_w) if text else ""

    # Chassis / board / PSUs. A chassis whose PSU is too small gets the extra PSU capacity in the BOM.
    gpu_unit = (gpu.price_used_usd if used and gpu.price_used_usd else gpu.buy_new_usd)
    # A GPU sold on a board of several (A16: four) is bought a whole board at a time: 2 asked for (hardware.count)
    # is one board with 2 of its GPUs idle (the search only makes whole boards)
    per_board = gpu.sold_as_board
    boards = -(-gpus_per_node // per_board)
    bought = boards * per_board  # GPUs per node paid for
    gpu_total = gpu_unit * bought * nodes if gpu_unit is not None else None
    psu_w: int
    if chassis:
        chassis_usd = chassis.price_usd
        chassis_note = ""
        if text:
            chassis_note = (_("{kind}, {w:g} W PSU").format(kind=chassis.kind, w=chassis.psu_w)
                            + (f", {chassis.rack_units}U" if chassis.rack_units else _(", tower")))
            if chassis.gpu_form == "pcie" and chassis.max_slot_width < gpu.slot_width:
                chassis_note += _("; needs {n}-slot (blower) variants of the card").format(n=chassis.max_slot_width)
            elif packed_open_air(chassis, gpu, gpus_per_node):
                chassis_note += "; " + _("needs blower or liquid-cooled variants of the card (open-air coolers "
                                         "slot to slot recirculate each other's heat)")
        bom.insert(0, line(item=chassis.name, qty=nodes, unit_usd=chassis_usd, total_usd=chassis_usd * nodes,
                           note=chassis_note))
        psu_w = int(chassis.psu_w)
        if chassis.psu_w < psu_need:
            extra = _round_psu(psu_need - chassis.psu_w)
            unit = extra * cat.fac("psu_usd_per_w")
            how = (_("a second ATX PSU (add2psu adapter), one per GPU pair") if chassis.kind in TOWER_KINDS
                   else _("higher-rated PSU modules"))
            bom.insert(1, line(item=f"PSU capacity +{extra:,} W", qty=nodes, unit_usd=round(unit, 2),
                               total_usd=round(unit * nodes, 2),
                               note=_("{how}: {need:,.0f} W needed for {peak:,.0f} W peak").format(
                                      how=how, need=psu_need, peak=max_w) if text else ""))
            psu_w = int(chassis.psu_w) + extra
    else:
        # No catalog chassis takes these GPUs: price the platform as a share of the GPU cost
        # (Epoch: server price ~1.64x GPU price).
        share = min(max(cat.fac("server_overhead_frac"), 0.0), 0.9)  # non-GPU share (Epoch: ~39 %)
        platform_usd = gpu_unit * gpus_per_node * share / (1 - share) if gpu_unit is not None else None
        bom.insert(0, line(item=f"{gpus_per_node}-GPU server platform (generic)", qty=nodes,
                           unit_usd=platform_usd, total_usd=platform_usd * nodes if platform_usd is not None else None,
                           note=(_("no catalog chassis fits; priced as a share of GPU cost (Epoch)")
                                 if platform_usd is not None else
                                 _("no catalog chassis fits; price unknown (a share of the GPUs' price)"))
                           if text else ""))
        psu_w = _round_psu(psu_need)
    board = ""
    if per_board > 1 and text:
        board = _(" ({n} board(s) of {per})").format(n=boards, per=per_board)
        if bought > gpus_per_node:
            board += _(": {idle} of its GPUs idle").format(idle=bought - gpus_per_node)
    bom.insert(0, line(item=gpu.name + (_(" (used)") if used and gpu.price_used_usd else ""),
                       qty=bought * nodes, unit_usd=gpu_unit, total_usd=gpu_total,
                       note=(_("price unknown") if gpu_unit is None else "") + board))
    capex = sum(b.total_usd or 0.0 for b in bom)
    build_tier = ("lean" if lean else "standard") + (USED_TIER if used and gpu.price_used_usd else "")
    if not text:
        return Sizing(capex_usd=round(capex, 2), tier=build_tier, nodes=nodes, gpus_per_node=gpus_per_node,
                      max_power_w=round(max_w), power_w=round(sustained), chassis=chassis.name if chassis else None,
                      chassis_kind=chassis.kind if chassis else None)

    return Build(
        gpu=gpu.id,
        gpu_name=gpu.name,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        cpu=cpu.name if cpu else "server CPU (not in catalog)",
        cpu_count=sockets,
        cpu_cores=(cpu.cores * sockets) if cpu else 0,
        pcie_lanes=cpu_lanes_have,
        ram_gb=ram_gb,
        storage=storage,
        network=network,
        psu_w=psu_w,
        power_w=round(sustained),
        heat_kw=round(heat_kw, 2),
        site=where,
        site_kind=where_kind,
        software=software_stack(cat, gpu, nodes, w),
        bom=bom,
        capex_usd=round(capex, 2),
        chassis=chassis.name if chassis else None,
        chassis_kind=chassis.kind if chassis else None,
        tier=build_tier,
        cpu_cores_needed=cores,
        pcie_lanes_needed=lanes,
        vram_gb=round(vram_gb, 1),
        storage_tb=round(fast_tb + bulk_tb, 2),
        storage_needed_tb=round(needed_tb, 3),
        checkpoint_gb=round(ckpt_gb, 2),
        read_gbps_needed=round(read_need, 3),
        read_gbps=round(fast_read, 2),
        network_gbps_per_gpu=round(per_gpu_gbps, 1),
        rdma=bool(net and net.rdma and nodes > 1),
        max_power_w=round(max_w),
        psu_needed_w=round(psu_need),
    )


def psu_needed_w(gpu: GPU, max_w: float, hgx: bool) -> float:
    """The one PSU-margin rule: HGX max power (1.82x GPU TDP) is already the system's worst case;
    PCIe builds add PSU_MARGIN, or PSU_MARGIN_TRANSIENT for 450-600 W consumer cards."""
    margin = 1.0 if hgx else PSU_MARGIN_TRANSIENT if _transient_heavy(gpu) else PSU_MARGIN
    return max_w * margin


def rented_build(build: Build, vcpus: int | None, ram_gib: float | None, local_nvme_tb: float | None,
                 site: str) -> Build:
    """The same plan as a rented instance: no chassis, PSU or BOM; the instance's host resources."""
    return build.model_copy(update={
        "rented": True, "chassis": None, "chassis_kind": None, "psu_w": None, "psu_needed_w": None, "bom": [],
        "capex_usd": 0.0, "site": site, "site_kind": "cloud",
        "cpu": _("{n} vCPUs per instance").format(n=vcpus) if vcpus else _("instance vCPUs (not published)"),
        "cpu_count": 0, "cpu_cores": 0, "pcie_lanes": 0, "ram_gb": round(ram_gib * GB_PER_GIB) if ram_gib else 0,
        "instance": RentedInstance(vcpus=vcpus, ram_gib=ram_gib, local_nvme_tb=local_nvme_tb),
    })


def place_kind(site: str, sustained_w: float, nodes: int, chassis: Chassis | None, circuit_w: float) -> str:
    """Where the build can live (cloud | colo | server-room | desk | office), from its draw and form
    factor: the fact ``place`` says in words."""
    node_kw = sustained_w / 1000.0
    rack = bool(chassis and chassis.rack_units) or (chassis is None and node_kw > 3)
    if site == "cloud":
        return "cloud"
    if nodes > 1 or node_kw > 6 or site == "colo":  # the site asked for, when it is a bigger one
        return "colo"
    if rack or node_kw > 3.5 or site == "server-room":
        return "server-room"
    return "desk" if sustained_w <= circuit_w else "office"


def place(site: str, sustained_w: float, nodes: int, chassis: Chassis | None, circuit: Circuit) -> str:
    """Where the build can live, in words (``place_kind`` is the fact)."""
    node_kw = sustained_w / 1000.0
    kind = place_kind(site, sustained_w, nodes, chassis, circuit.continuous_w)
    if kind == "cloud":
        return "cloud"
    if kind == "colo":
        return _("colocation / data centre ({kw:.1f} kW IT load, {node_kw:.1f} kW per node, 208-415 V)").format(
            kw=node_kw * nodes, node_kw=node_kw)
    if kind == "server-room":
        return _("server room or colocation ({kw:.1f} kW, 208-240 V circuit, rack cooling)").format(kw=node_kw)
    if kind == "desk":
        return _("desk or office ({w:,.0f} W fits one {a:g} A/{v:g} V circuit of {circuit:,.0f} W)").format(
            w=sustained_w, a=circuit.amps, v=circuit.volts, circuit=circuit.continuous_w)
    return _("office / server closet with a dedicated circuit of its own: {dedicated} ({w:,.0f} W, {kw:.1f} kW "
             "of heat)").format(dedicated=dedicated_circuit(circuit), w=sustained_w, kw=node_kw)


def dedicated_circuit(circuit: Circuit) -> str:
    """What to ask the electrician for when one office circuit is too small (judgement): 240 V split
    phase where the mains is 100-120 V, a 32 A or three-phase feed where it is 220-240 V."""
    return _("20 A/240 V") if circuit.volts < 200 else _("32 A/230 V or three-phase")


def platform_capex(req: Requirements, cat: Catalog, gpu: GPU, gpus_per_node: int, nodes: int, w: Workload,
                   cache: dict[tuple[str, int, int], float] | None = None) -> float:
    """Capex of a build (cached per GPU x per-node x nodes) for ranking many candidates."""
    key = (gpu.id, gpus_per_node, nodes)
    if cache is not None and key in cache:
        return cache[key]
    capex = size_system(req, cat, gpu, gpus_per_node, nodes, w).capex_usd
    if cache is not None:
        cache[key] = capex
    return capex
