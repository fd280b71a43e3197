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
  cards (transients); 15 A/120 V office circuit = 1,440 W continuous (NEC 80 % rule) (§B5).
- Software: CUDA >= 11.8 for Hopper, >= 12.8 for Blackwell; driver branches from the NVIDIA MIG
  user guide; PyTorch ROCm wheels are Linux only (§B11, §B12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuwiz.core.catalog import CPU, GPU, Catalog, Chassis, Dimm, NetworkOption, StorageTier
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import BomLine, Build, Estimate, Requirements
from gpuwiz.core.units import GB_PER_GIB

# Epoch AI training-cost-trends: server power / (n x chip TDP) = (10.2/8)/0.7 for H100 HGX.
CHIP_TO_SERVER_HGX = 1.82
TRAIN_LOAD_FRAC = 0.75  # Epoch server_TDP_fraction(): servers draw ~75 % of max while training
PSU_MARGIN = 1.25  # PSU rating >= 1.25x worst-case load (Puget / thefpsreview 2020)
PSU_MARGIN_TRANSIENT = 1.4  # 4090/5090-class cards spike far above TGP (clankerbuilder 2026 [weak])
OFFICE_CIRCUIT_W = 1440.0  # 15 A x 120 V x 0.8 (NEC continuous-load rule); catalog may override
STD_PSU_W = (850, 1000, 1200, 1300, 1600, 2000, 2400, 2800, 3200, 4000, 5000, 6000, 8000, 10000, 12000,
             16000, 20000)

CKPT_BYTES_PER_PARAM = {"adamw": 14.0, "adamw-8bit": 8.0, "sgd": 10.0}  # bf16 w + fp32 master + states
KEEP_LOCAL_CKPTS = 3  # the 2 latest (the last may be corrupt) + the one being written
BULK_CKPT_HISTORY = 10  # checkpoints archived on the bulk tier
FREE_SPACE = 1.25  # keep 20 % free

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


def workload_from(req: Requirements, cat: Catalog, est: Estimate | None) -> Workload:
    """Collect the sizing inputs; dataset size from data.dataset_gb, else tokens / samples."""
    family = est.model.family if est else (req.model.family or "decoder")
    modality = MODALITY.get(family, "text")
    sample_kb = req.data.sample_kb
    if req.model.preset:
        try:
            preset = cat.model(req.model.preset)
            modality = preset.modality if preset.modality != "text" else modality
            sample_kb = sample_kb or preset.sample_kb
        except GpuwizError:  # unknown preset: the estimator reports it; sizing uses defaults
            pass
    if req.data.dataset_gb:
        dataset_gb = float(req.data.dataset_gb)
    elif req.data.tokens:
        dataset_gb = req.data.tokens * 4 / 1e9  # raw text ~4 bytes per token (~4 chars/token)
    elif req.data.samples:
        dataset_gb = req.data.samples * (sample_kb or 110.0) / 1e6
    else:
        dataset_gb = 100.0
    params_total = est.model.params_total if est else (req.model.params_b or 1.0) * 1e9
    trainable = est.model.params_trainable if est else params_total
    return Workload(
        modality=modality,
        params_total=params_total,
        params_trainable=trainable,
        method=req.training.method,
        optimizer=req.training.optimizer,
        dataset_gb=dataset_gb,
        sample_kb=sample_kb,
        samples_per_s_per_gpu=est.throughput.samples_per_s_per_gpu if est else None,
        tokens_per_s_per_gpu=est.throughput.tokens_per_s_per_gpu if est else None,
        offload=est.plan.offload if est else "none",
        host_ram_gib=est.memory.host_ram_gib if est else 0.0,
        framework=est.plan.framework if est else "PyTorch DDP",
        zero_stage=est.plan.zero_stage if est else 0,
        tp=est.plan.tp if est else 1,
        pp=est.plan.pp if est else 1,
    )


# ---- rules ---------------------------------------------------------------------------------------


def cores_needed(gpus_per_node: int, modality: str) -> int:
    """ml-engineering compute/cpu: 1 core per training process + 1 per DataLoader worker + 4 for the OS."""
    workers = 2 if modality == "text" else 4
    return gpus_per_node * (workers + 1) + 4


def lanes_per_gpu(gpu: GPU, gpus_per_node: int = 1) -> int:
    """x8 per card is fine for two consumer cards on a desktop board (x8/x8 bifurcation); past two,
    consumer cards have no P2P/NVLink, so every all-reduce crosses PCIe through host memory and each
    card wants its full x16 (a Threadripper PRO / Xeon W / EPYC platform)."""
    return 8 if gpu.segment == "consumer" and gpus_per_node <= 2 else 16


def lanes_needed(gpu: GPU, gpus_per_node: int, nvme: int, nics: int, hgx: bool) -> int:
    if hgx:
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


def chassis_options(cat: Catalog, gpu: GPU, gpus_per_node: int, site: str) -> list[Chassis]:
    """Chassis that take the GPUs, best first (smallest box, then price)."""
    first = pick_chassis(cat, gpu, gpus_per_node, site)
    if first is None:
        return []
    order = {"desktop": 0, "workstation": 1, "server": 2, "hgx": 3}
    rest = [c for c in cat.platforms.chassis if c is not first and c.gpu_form == first.gpu_form
            and c.max_gpus >= gpus_per_node
            and (c.gpu_form != "pcie" or c.max_slot_width >= min(gpu.slot_width, first.max_slot_width))
            and not (site == "desk" and c.kind not in ("desktop", "workstation"))]
    rest.sort(key=lambda c: (order[c.kind], c.price_usd))
    return [first, *rest]


def pick_chassis(cat: Catalog, gpu: GPU, gpus_per_node: int, site: str) -> Chassis | None:
    form = {"nvl": "pcie"}.get(gpu.form_factor, gpu.form_factor)
    fits = [
        c for c in cat.platforms.chassis
        if c.gpu_form == form and c.max_gpus >= gpus_per_node
        and (form != "pcie" or c.max_slot_width >= gpu.slot_width)
        and not (site == "desk" and c.kind not in ("desktop", "workstation"))
    ]
    if not fits and form == "pcie":
        # No chassis takes cards this wide: the widest-slot box, which needs 2-slot (blower) variants.
        fits = [c for c in cat.platforms.chassis if c.gpu_form == "pcie" and c.max_gpus >= gpus_per_node
                and not (site == "desk" and c.kind not in ("desktop", "workstation"))]
    if not fits:
        return None
    # Prefer the smallest box that takes the GPUs, then price.
    order = {"desktop": 0, "workstation": 1, "server": 2, "hgx": 3}
    return min(fits, key=lambda c: (order[c.kind] if gpus_per_node <= 2 else 0, c.price_usd, c.max_gpus))


def pick_cpu(cat: Catalog, chassis: Chassis | None, cores: int, lanes: int) -> tuple[CPU | None, int]:
    """Cheapest CPU (x sockets) of the chassis' segment with enough cores and lanes."""
    seg = chassis.cpu_segment if chassis else "server"
    sockets_max = chassis.sockets if chassis else 2
    best: tuple[float, CPU, int] | None = None
    for cpu in cat.platforms.cpus:
        if cpu.segment != seg:
            continue
        for sockets in range(1, min(sockets_max, cpu.max_sockets) + 1):
            # Dual-socket EPYC/Xeon: some lanes go to the socket link; usable lanes ~ 1.25x one socket.
            have_lanes = cpu.pcie_lanes if sockets == 1 else int(cpu.pcie_lanes * 1.25)
            if cpu.cores * sockets >= cores and have_lanes >= lanes:
                cost = cpu.price_usd * sockets
                if best is None or cost < best[0]:
                    best = (cost, cpu, sockets)
    if best is None:  # nothing meets both: take the part with the most lanes, then cores
        cands = [c for c in cat.platforms.cpus if c.segment == seg] or list(cat.platforms.cpus)
        if not cands:
            return None, 1
        cpu = max(cands, key=lambda c: (c.pcie_lanes, c.cores))
        sockets = min(sockets_max, cpu.max_sockets)
        return cpu, sockets
    return best[1], best[2]


def cpu_lanes(cpu: CPU, sockets: int) -> int:
    return cpu.pcie_lanes if sockets == 1 else int(cpu.pcie_lanes * 1.25)


def _cpu_ok(cpu: CPU, sockets: int, cores: int, lanes: int) -> bool:
    return cpu.cores * sockets >= cores and cpu_lanes(cpu, sockets) >= lanes


def pick_memory(cat: Catalog, cpu: CPU | None, sockets: int, target_gb: float,
                desktop: bool) -> tuple[Dimm | None, int]:
    """Fill memory channels evenly (1 or 2 DIMMs per channel) with the cheapest config >= target."""
    # Current desktop / Threadripper 7000 / EPYC 9004 / Xeon 4th-gen platforms take DDR5.
    kinds = ("ddr5-udimm",) if desktop else ("ddr5-rdimm",)
    dimms = ([d for d in cat.platforms.memory if d.kind in kinds]
             or [d for d in cat.platforms.memory if d.kind.endswith("udimm" if desktop else "rdimm")]
             or list(cat.platforms.memory))
    if not dimms:
        return None, 0
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
            if total >= target_gb and (best is None or cost < best[0]):
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
    tiers = sorted(_tiers(cat, "nvme"), key=lambda s: (s.capacity_tb or 0))
    kind = chassis.kind if chassis else "server"
    slots = M2_SLOTS.get(kind)
    if slots is not None:
        m2 = [t for t in tiers if t.form == "m.2"]
        hit = _cheapest_drives(m2, target_tb, read_gbps, slots, strict=True)
        if hit is not None:
            return hit
    pool = [t for t in tiers if t.form != "m.2"] or tiers
    return _cheapest_drives(pool, target_tb, read_gbps, 16, strict=False) or (None, 1)


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


def driver_stack(gpu: GPU) -> list[str]:
    arch = gpu.architecture.lower()
    if gpu.vendor == "amd":
        target = f" ({gpu.rocm_gfx_target})" if gpu.rocm_gfx_target else ""
        return [f"ROCm 6.x{target}", "PyTorch ROCm wheel (Linux only)"]
    if gpu.vendor == "intel":
        return ["Intel Gaudi software (SynapseAI)", "PyTorch with the Gaudi bridge"]
    if gpu.vendor == "huawei":  # Ascend: CANN toolkit, torch_npu adapter, MindSpeed (Megatron-style) training
        return ["Ascend NPU driver + firmware", "CANN 8.x", "PyTorch + torch_npu", "MindSpeed for large-model training"]
    cuda = gpu.min_cuda or {"blackwell": "12.8", "hopper": "11.8", "ada": "11.8", "ampere": "11.0",
                            "turing": "10.0", "volta": "9.0"}.get(arch, "12.0")
    driver = {"blackwell": "R570+ (>= 570.133)", "hopper": "R550+" if gpu.memory_gib > 100 else "R525+",
              "ada": "R525+", "ampere": "R470+"}.get(arch, "R535+")
    torch = {"blackwell": "PyTorch >= 2.7 (cu128 wheel)", "hopper": "PyTorch >= 2.0 (cu118+; current cu126/cu128)",
             "ada": "PyTorch >= 2.0 (cu118+)"}.get(arch, "PyTorch 2.x (cu126 wheel)")
    return [f"NVIDIA driver {driver}", f"CUDA >= {cuda}", torch]


def software_stack(gpu: GPU, nodes: int, w: Workload) -> list[str]:
    out = ["Ubuntu 22.04/24.04 LTS"]
    out += driver_stack(gpu)
    # Collectives and monitoring per vendor: NCCL + DCGM (NVIDIA), RCCL + AMD SMI/ROCm
    # validation suite (AMD ROCm docs), HCCL + hl-smi (Intel Gaudi software docs).
    collectives, monitor = {
        "nvidia": ("NCCL with GPUDirect RDMA", "DCGM monitoring + health checks"),
        "amd": ("RCCL with GPUDirect-style RDMA (ROCm)", "AMD SMI / ROCm Validation Suite health checks"),
        "intel": ("HCCL over the Gaudi on-chip RoCE ports", "hl-smi / Gaudi health checks"),
        "huawei": ("HCCL (Huawei Collective Communication Library) over RoCE", "npu-smi health checks"),
    }[gpu.vendor]
    if nodes > 1:
        operator = "the GPU operator" if gpu.vendor == "nvidia" else "the vendor's device plugin"
        out += [f"Slurm (or Kubernetes with {operator})", collectives, monitor]
        out.append("Enroot/Pyxis or Docker containers")
    else:
        out.append("Docker + NVIDIA Container Toolkit" if gpu.vendor == "nvidia" else "Docker")
        if gpu.vendor == "nvidia":
            out.append("nvidia-smi / DCGM exporter for monitoring")
    fw = w.framework or "PyTorch DDP"
    if w.tp > 1 or w.pp > 1:
        fw = f"{fw} (Megatron-style TP={w.tp}, PP={w.pp})" if "Megatron" not in fw else fw
    if w.method in ("lora", "qlora"):
        fw += " + PEFT" + (" + bitsandbytes" if w.method == "qlora" else "")
    out.append(fw)
    return out


# ---- the build -----------------------------------------------------------------------------------


def storage_needed_tb(w: Workload) -> float:
    """Capacity the build (or a cloud volume) needs: raw + preprocessed data, local checkpoints, base weights."""
    return (w.dataset_gb * 2 + w.checkpoint_gb * KEEP_LOCAL_CKPTS + w.base_weights_gb) * FREE_SPACE / 1000


def size_system(req: Requirements, cat: Catalog, gpu: GPU, gpus_per_node: int, nodes: int,
                w: Workload) -> Build:
    site = req.deployment.site
    used = req.deployment.used_hardware
    options = chassis_options(cat, gpu, gpus_per_node, site)
    chassis = options[0] if options else None
    hgx = bool(chassis and chassis.kind == "hgx") or gpu.form_factor in ("sxm", "oam")
    vram_gb = gpus_per_node * gpu.memory_gib * GB_PER_GIB
    bom: list[BomLine] = []

    # Storage sizing (whole build), then per node.
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

    min_fast_tb = 2.0 if nodes == 1 else 4.0  # a 2 TB floor: OS, env, datasets, checkpoints
    fast_tb_target = max(min_fast_tb, fast_need_gb / 1000 if nodes == 1 else min(fast_need_gb / 1000, 30.0))
    # The chassis may still step up below (when the CPU cannot feed the GPUs); the drive form follows it.
    nvme, n_nvme = pick_nvme(cat, options[0] if options else None, fast_tb_target, read_need)
    storage: list[str] = []
    storage_at = len(bom)
    storage.append("")  # the fast tier, filled in once the chassis is final
    bulk_tb = 0.0
    pfs_line = None
    if nodes == 1:
        hdd = sorted(_tiers(cat, "hdd"), key=lambda s: (s.capacity_tb or 0))
        if hdd:
            t = hdd[-1]
            n = max(2, math.ceil(bulk_need_gb / 1000 / (t.capacity_tb or 1.0)))  # >= 2: a mirrored pair
            bulk_tb = n * (t.capacity_tb or 1.0)
            storage.append(f"{n}x {t.name} ({bulk_tb:g} TB HDD bulk: raw data, checkpoint history)")
            bom.append(BomLine(item=t.name, qty=n, unit_usd=t.price_usd, total_usd=(t.price_usd or 0) * n,
                               note="bulk: raw data + checkpoint history"))
    else:
        pfs = _tiers(cat, "parallel-fs") or _tiers(cat, "nas")
        if pfs:
            t = max(pfs, key=lambda s: s.read_gbps)
            need_read = read_need * nodes
            pfs_tb = max(bulk_need_gb / 1000, 10.0)
            units = max(1, math.ceil(pfs_tb / (t.capacity_tb or pfs_tb)), math.ceil(need_read / t.read_gbps))
            pfs_line = f"{t.name} ({units} unit(s), ~{units * t.read_gbps:.0f} GB/s, >= {pfs_tb:.0f} TB shared)"
            bom.append(BomLine(item=t.name, qty=units, unit_usd=t.price_usd, total_usd=(t.price_usd or 0) * units,
                               note="shared parallel file system (Lustre / GPFS / WEKA class)"))
        else:
            pfs_line = f"parallel file system (Lustre/GPFS class), >= {bulk_need_gb / 1000:.0f} TB shared"
        storage.append(pfs_line)
    storage.append(f"off-site copy of checkpoints (~{ckpt_gb:,.0f} GB each) in object storage")

    # Network.
    net, nics, target_gbps = pick_network(cat, gpu, nodes)
    if nodes > 1:
        nics = gpus_per_node if hgx else max(1, gpus_per_node // 2)
    per_gpu_gbps = (net.gbps * nics / gpus_per_node) if (net and nodes > 1) else 0.0
    if nodes > 1 and net:
        network = (f"{nics}x {net.name} per node ({net.gbps:g} Gb/s each, {per_gpu_gbps:g} Gb/s per GPU"
                   f"{', RDMA / GPUDirect' if net.rdma else ''}) + 25/100 GbE for storage and management")
        switch_ports = nics * nodes
        bom.append(BomLine(item=f"{net.name} NIC", qty=nics * nodes, unit_usd=net.nic_price_usd,
                           total_usd=net.nic_price_usd * nics * nodes, note="one per GPU" if hgx else ""))
        if net.switch_port_usd:
            bom.append(BomLine(item=f"{net.name} switch ports + cables", qty=switch_ports,
                               unit_usd=net.switch_port_usd, total_usd=net.switch_port_usd * switch_ports,
                               note="non-blocking fat tree" if nodes > 2 else "2 nodes could link directly"))
    elif nodes > 1:
        network = f"InfiniBand / RoCE RDMA, >= {target_gbps:g} Gb/s per GPU (not in catalog)"
    else:
        network = (f"{net.name} ({net.gbps:g} Gb/s) for data ingest" if net else "10 GbE for data ingest")
        if net and net.nic_price_usd:
            bom.append(BomLine(item=f"{net.name} NIC", qty=1, unit_usd=net.nic_price_usd,
                               total_usd=net.nic_price_usd, note="data ingest"))

    # CPU and lanes.
    cores = cores_needed(gpus_per_node, w.modality)
    lanes = lanes_needed(gpu, gpus_per_node, n_nvme, nics if nodes > 1 else 0, hgx)
    cpu, sockets = pick_cpu(cat, chassis, cores, lanes)
    # A box whose CPUs cannot feed the GPUs is the wrong box: step up (desktop -> workstation -> server).
    for alt in options[1:]:
        if cpu is not None and _cpu_ok(cpu, sockets, cores, lanes):
            break
        c2, s2 = pick_cpu(cat, alt, cores, lanes)
        if c2 is not None and _cpu_ok(c2, s2, cores, lanes):
            chassis, cpu, sockets = alt, c2, s2
            break
    desktop = bool(chassis and chassis.cpu_segment == "desktop")
    nvme, n_nvme = pick_nvme(cat, chassis, fast_tb_target, read_need)
    fast_tb = n_nvme * (nvme.capacity_tb or 1.0) if nvme else fast_tb_target
    fast_read = n_nvme * (nvme.read_gbps if nvme else 3.0)
    if nvme:
        raid = " RAID-0" if n_nvme > 1 else ""
        storage[0] = f"{n_nvme}x {nvme.name} ({fast_tb:g} TB NVMe{raid}, ~{fast_read:.0f} GB/s read)"
        bom.insert(storage_at, BomLine(item=nvme.name, qty=n_nvme * nodes, unit_usd=nvme.price_usd,
                                       total_usd=(nvme.price_usd or 0) * n_nvme * nodes,
                                       note="data + last checkpoints" + (" (RAID-0 cache)" if n_nvme > 1 else "")))
    else:
        storage[0] = f"{fast_tb:g} TB NVMe (data + last checkpoints)"
    cpu_lanes = 0
    if cpu:
        cpu_lanes = cpu.pcie_lanes if sockets == 1 else int(cpu.pcie_lanes * 1.25)
        bom.append(BomLine(item=cpu.name, qty=sockets * nodes, unit_usd=cpu.price_usd,
                           total_usd=cpu.price_usd * sockets * nodes,
                           note=f"{cpu.cores * sockets} cores/node (need {cores}), {cpu_lanes} lanes (need {lanes})"))

    # RAM.
    _floor_gb, rec_gb = ram_target_gb(vram_gb, w.host_ram_gib, w.offload)
    dimm, n_dimm = pick_memory(cat, cpu, sockets, rec_gb, desktop)
    ram_gb = int(n_dimm * dimm.capacity_gb) if dimm else int(2 ** math.ceil(math.log2(max(rec_gb, 16))))
    if dimm:
        bom.append(BomLine(item=dimm.name, qty=n_dimm * nodes, unit_usd=dimm.price_usd,
                           total_usd=dimm.price_usd * n_dimm * nodes,
                           note=f"{ram_gb} GB/node = {ram_gb / max(vram_gb, 1):.1f}x VRAM"))

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
    # HGX max power (1.82x GPU TDP) is already the system's worst case; PCIe builds add margin.
    margin = 1.0 if hgx else PSU_MARGIN_TRANSIENT if _transient_heavy(gpu) else PSU_MARGIN
    psu_need = max_w * margin
    psu_w = _round_psu(psu_need)
    if chassis and chassis.psu_w >= psu_need:
        psu_w = int(chassis.psu_w)
    heat_kw = sustained * nodes / 1000.0
    circuit = cat.fac("office_circuit_w") if "office_circuit_w" in cat.facility else OFFICE_CIRCUIT_W
    where = place(site, sustained, nodes, chassis, circuit)

    # Chassis / board / PSUs.
    gpu_unit = (gpu.price_used_usd if used and gpu.price_used_usd else gpu.price_new_usd)
    gpu_total = (gpu_unit or 0.0) * gpus_per_node * nodes
    if chassis:
        chassis_usd = chassis.price_usd
        chassis_note = (f"{chassis.kind}, {chassis.psu_w:g} W PSU"
                        + (f", {chassis.rack_units}U" if chassis.rack_units else ", tower"))
        if chassis.gpu_form == "pcie" and chassis.max_slot_width < gpu.slot_width:
            chassis_note += f"; needs {chassis.max_slot_width}-slot (blower) variants of the card"
        if chassis.psu_w < psu_need:
            if chassis.kind in ("desktop", "workstation"):
                # ATX PSUs stop at ~1,600 W on 120 V: a second PSU, or a power cap, covers the transients.
                chassis_note += (f"; {psu_need:,.0f} W of PSU for GPU transients: add a second PSU or cap "
                                 "GPU power (nvidia-smi -pl)")
            else:
                chassis_note += f"; upgrade PSU to >= {psu_w} W"
        bom.insert(0, BomLine(item=chassis.name, qty=nodes, unit_usd=chassis_usd, total_usd=chassis_usd * nodes,
                              note=chassis_note))
    else:
        # No catalog chassis takes these GPUs: price the platform as a share of the GPU cost
        # (Epoch: server price ~1.64x GPU price).
        share = cat.fac("server_overhead_frac") if "server_overhead_frac" in cat.facility else 0.39
        share = min(max(share, 0.0), 0.9)  # non-GPU share of a GPU server's price (Epoch: ~39 %)
        chassis_usd = (gpu_unit or 0.0) * gpus_per_node * share / (1 - share)
        bom.insert(0, BomLine(item=f"{gpus_per_node}-GPU server platform (generic)", qty=nodes,
                              unit_usd=chassis_usd, total_usd=chassis_usd * nodes,
                              note="no catalog chassis fits; priced as a share of GPU cost (Epoch)"))
    bom.insert(0, BomLine(item=gpu.name + (" (used)" if used and gpu.price_used_usd else ""),
                          qty=gpus_per_node * nodes, unit_usd=gpu_unit, total_usd=gpu_total,
                          note="price unknown" if gpu_unit is None else ""))
    capex = sum(b.total_usd or 0.0 for b in bom)

    return Build(
        gpu=gpu.id,
        gpu_name=gpu.name,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        cpu=cpu.name if cpu else "server CPU (not in catalog)",
        cpu_count=sockets,
        cpu_cores=(cpu.cores * sockets) if cpu else 0,
        pcie_lanes=cpu_lanes,
        ram_gb=ram_gb,
        storage=storage,
        network=network,
        psu_w=psu_w,
        power_w=round(sustained),
        heat_kw=round(heat_kw, 2),
        site=where,
        software=software_stack(gpu, nodes, w),
        bom=bom,
        capex_usd=round(capex, 2),
        chassis=chassis.name if chassis else "",
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
    )


def place(site: str, sustained_w: float, nodes: int, chassis: Chassis | None, circuit_w: float) -> str:
    """Where the build can live, from its draw and form factor."""
    node_kw = sustained_w / 1000.0
    rack = bool(chassis and chassis.rack_units) or (chassis is None and node_kw > 3)
    if site == "cloud":
        return "cloud"
    if nodes > 1 or node_kw > 6:
        return f"colocation / data centre ({node_kw * nodes:.1f} kW IT load, {node_kw:.1f} kW per node, 208-415 V)"
    if rack or node_kw > 3.5:
        return f"server room or colocation ({node_kw:.1f} kW, 208-240 V circuit, rack cooling)"
    if sustained_w <= circuit_w:
        return f"desk or office ({sustained_w:,.0f} W fits one 15 A/120 V circuit of {circuit_w:,.0f} W)"
    return (f"office / server closet with a dedicated 20 A/240 V circuit ({sustained_w:,.0f} W, "
            f"{node_kw:.1f} kW of heat)")


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
