"""System sizing: CPU cores and lanes, host RAM, storage, network, power/site, software, BOM."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Build, Requirements

CAT: Catalog = load_catalog()


def req(**sections: dict[str, Any]) -> Requirements:
    data: dict[str, Any] = {"model": {"preset": "llama-2-7b", "seq_len": 2048}, "training": {"method": "lora"},
                            "data": {"tokens": 1e8}}
    for k, v in sections.items():
        data[k] = {**data.get(k, {}), **v}
    return Requirements.model_validate(data)


def build(r: Requirements, gpu: str, gpn: int, nodes: int = 1) -> Build:
    est = estimate(r, CAT, gpu=gpu, count=gpn * nodes, gpus_per_node=gpn)
    return sysmod.size_system(r, CAT, CAT.gpu(gpu), gpn, nodes, sysmod.workload_from(r, CAT, est))


def test_cores_rule_by_modality() -> None:
    # ml-engineering: GPUs x (workers + 1) + 4; 2 workers for text, 4 for images.
    assert sysmod.cores_needed(8, "text") == 28
    assert sysmod.cores_needed(8, "image") == 44
    assert sysmod.cores_needed(1, "audio") == 9


def test_ram_floor_and_recommendation() -> None:
    floor, rec = sysmod.ram_target_gb(320.0, 0.0, "none")
    assert (floor, rec) == (320.0, 640.0)
    floor_o, rec_o = sysmod.ram_target_gb(320.0, 500.0, "optimizer")
    assert rec_o >= 960.0 and floor_o > floor
    # Beyond 1 TB of VRAM the 2x rule gives way to the ~2 TB reference systems.
    _, rec_big = sysmod.ram_target_gb(1546.0, 0.0, "none")
    assert 2048.0 <= rec_big < 2 * 1546.0


def test_ram_is_a_real_dimm_configuration_at_least_vram() -> None:
    b = build(req(), "a100-80gb-pcie", 4)
    dimm_lines = [x for x in b.bom if "DIMM" in x.item.upper() or "DDR" in x.item.upper()]
    assert len(dimm_lines) == 1
    line = dimm_lines[0]
    dimm = next(d for d in CAT.platforms.memory if d.name == line.item)
    assert b.ram_gb == line.qty * dimm.capacity_gb
    assert b.ram_gb >= b.vram_gb  # never below the 1x floor
    assert b.ram_gb >= 2 * b.vram_gb * 0.95  # 2x recommended


def test_cpu_has_cores_and_lanes_for_the_gpus() -> None:
    b = build(req(), "a100-80gb-pcie", 8)
    assert b.cpu_cores >= b.cpu_cores_needed == 96  # data-centre node: 12 cores per GPU (DGX-class)
    assert b.pcie_lanes >= b.pcie_lanes_needed >= 4 * 16  # behind the chassis' PCIe switches: an x16 per 2 GPUs
    cpu = next(c for c in CAT.platforms.cpus if c.name == b.cpu)
    assert cpu.segment == "server"


def test_a_pcie_server_of_slower_cards_takes_a_floor_scaled_by_their_rate() -> None:
    """8x A10 in one PCIe server: not the 96 cores of a DGX-class node (it was 2x 48-core EPYC, $10k of CPUs
    beside $22k of GPUs), but the floor times the A10's dense 16-bit rate over the A100's; still at least the
    ml-engineering rule. An A100 PCIe server, an HGX board and a cluster keep the full floor."""
    a10 = CAT.gpu("a10")
    rate = sysmod.dc_rate(CAT, a10)
    assert rate == pytest.approx(a10.bf16_tflops / CAT.gpu(sysmod.DC_REFERENCE_GPU).bf16_tflops)
    assert 0.2 < rate < 0.6
    b = build(req(), "a10", 8)
    assert sysmod.cores_needed(8, "text") < b.cpu_cores_needed == math.ceil(12 * rate * 8) < 96
    assert b.cpu_cores >= b.cpu_cores_needed
    assert build(req(), "a100-80gb-pcie", 8).cpu_cores_needed == 96
    assert build(req(), "h20", 8).cpu_cores_needed == 96  # HGX H20: the reference systems' floor
    assert build(req(), "a10", 8, nodes=2).cpu_cores_needed == 96  # a cluster node: NCCL proxies, NICs


def test_the_cpu_is_chosen_with_the_dimms_its_sockets_take() -> None:
    """4x L4 in a PCIe server needs 19 cores: two 16-core EPYCs are the cheapest CPUs, but two sockets fill 24
    memory channels; one 32-core part and 12 DIMMs is the cheaper platform for the same RAM."""
    b = build(req(), "l4", 4)
    assert b.cpu_cores_needed == 19
    cpu_line = next(x for x in b.bom if x.item == b.cpu)
    dimm_line = next(x for x in b.bom if "DIMM" in x.item.upper())
    assert (b.cpu_count, cpu_line.qty) == (1, 1)
    small = next(c for c in CAT.platforms.cpus if c.name == "AMD EPYC 9124")
    two_dimm, two_n = sysmod.pick_memory(CAT, small, 2, b.ram_gb, False)
    assert two_dimm is not None
    two_sockets = 2 * small.price_usd + two_n * two_dimm.price_usd
    assert cpu_line.total_usd + dimm_line.total_usd < two_sockets
    assert b.cpu_cores >= 19 and b.ram_gb >= b.vram_gb


def test_an_8_gpu_pcie_server_with_switches_needs_uplinks_not_a_lane_per_gpu() -> None:
    """Two nodes of 8x RTX A6000 with 4 fabric NICs each: 8 x16 GPUs + 4 x16 NICs + NVMe was 196 CPU lanes, more than
    two EPYCs have, and the fallback took 2x 128-core EPYC 9755 ($26k a node). The chassis' GPUs and NICs sit behind
    PCIe switches (Chassis.pcie_switches): one x16 uplink per two GPUs, as on an HGX board."""
    ch = next(c for c in CAT.platforms.chassis if c.name.startswith("4U dual-socket 8 x PCIe"))
    assert ch.pcie_switches
    b = build(req(), "rtx-a6000", 8, nodes=2)
    assert b.chassis == ch.name
    assert 16 * 4 + 16 + 4 <= b.pcie_lanes_needed <= 16 * 4 + 16 + 4 * 4 < 8 * 16  # uplinks, a NIC, the NVMe drives
    assert b.pcie_lanes >= b.pcie_lanes_needed and b.cpu_cores >= b.cpu_cores_needed
    assert b.cpu != "AMD EPYC 9755"


def test_when_no_cpu_has_the_lanes_the_cheapest_with_the_cores_among_the_widest() -> None:
    ch = next(c for c in CAT.platforms.chassis if c.name.startswith("4U dual-socket 8 x PCIe"))
    cpu, sockets = sysmod.pick_cpu(CAT, ch, 96, 10_000)
    assert cpu is not None and cpu.cores * sockets >= 96
    widest = max(c.pcie_lanes for c in CAT.platforms.cpus if sysmod.cpu_fits_chassis(c, ch))
    peers = [c for c in CAT.platforms.cpus if sysmod.cpu_fits_chassis(c, ch) and c.pcie_lanes == widest
             and c.cores * min(ch.sockets, c.max_sockets) >= 96]
    assert cpu.pcie_lanes == widest and cpu.price_usd == min(c.price_usd for c in peers)


def test_two_datacentre_cards_do_not_go_in_a_desktop() -> None:
    # 2 x16 cards + NVMe = 36 lanes: more than a desktop CPU's 24, so a workstation platform.
    b = build(req(), "rtx-a6000", 2)
    cpu = next(c for c in CAT.platforms.cpus if c.name == b.cpu)
    assert cpu.segment in ("workstation", "server")
    assert b.pcie_lanes >= b.pcie_lanes_needed


def test_two_consumer_cards_fit_a_desktop_tower() -> None:
    b = build(req(deployment={"site": "desk"}), "rtx-4090", 2)
    ch = next(c for c in CAT.platforms.chassis if c.name == b.chassis)
    assert ch.kind in ("desktop", "workstation")
    assert b.site.startswith(("desk", "office"))


def test_single_node_storage_nvme_plus_bulk_hdd_when_the_nvme_cannot_hold_the_bulk() -> None:
    """The bulk tier (raw data twice, ten checkpoints, the base weights) gets a mirrored HDD pair only when it does
    not fit beside the working set on the NVMe: a LoRA on 0.1B tokens keeps it there, 3 TB of images does not."""
    small = build(req(), "rtx-a6000", 2)
    assert any("NVMe" in s for s in small.storage) and any("off-site" in s for s in small.storage)
    assert not any("HDD" in x.item for x in small.bom)
    assert any("no bulk drives" in s for s in small.storage)
    assert small.storage_tb >= max(2.0, small.storage_needed_tb)
    big = build(req(data={"dataset_gb": 3000}), "rtx-a6000", 2)
    hdd = [x for x in big.bom if "HDD" in x.item]
    assert hdd and hdd[0].qty >= 2  # a mirrored pair at least
    assert any("HDD" in s for s in big.storage) and not any("no bulk drives" in s for s in big.storage)
    assert big.storage_tb >= big.storage_needed_tb


def test_checkpoint_size_full_vs_lora() -> None:
    full = build(req(training={"method": "full"}), "a100-80gb-sxm", 8)
    lora = build(req(), "a100-80gb-sxm", 8)
    # Mixed-precision AdamW: ~14 bytes per parameter (bf16 weights + fp32 master + m + v).
    assert full.checkpoint_gb == pytest.approx(6.74e9 * 14 / 1e9, rel=0.03)
    assert lora.checkpoint_gb < full.checkpoint_gb / 50


def test_storage_covers_dataset_and_checkpoints() -> None:
    r = req(training={"method": "full"}, data={"tokens": 1e8, "dataset_gb": 3000})
    b = build(r, "a100-80gb-sxm", 8)
    need_tb = (3000 * 2 + b.checkpoint_gb * 3) / 1000
    assert b.storage_needed_tb >= need_tb
    assert b.storage_tb >= 3000 / 1000  # the dataset fits locally at least once


def test_image_pipeline_read_rate_and_raid() -> None:
    r = Requirements.model_validate({"model": {"preset": "resnet-50"}, "training": {"optimizer": "sgd"},
                                     "data": {"samples": 1281167, "epochs": 90, "sample_kb": 110, "dataset_gb": 150}})
    b = build(r, "h100-sxm", 8)
    est = estimate(r, CAT, gpu="h100-sxm", count=8, gpus_per_node=8)
    sps = est.throughput.samples_per_s_per_gpu or 0
    assert b.read_gbps_needed == pytest.approx(8 * sps * 110 / 1e6, rel=0.02)
    assert b.read_gbps >= b.read_gbps_needed
    # image decode needs 4 workers per GPU (44 cores), but an HGX node carries DGX-class CPUs: 12 per GPU
    assert b.cpu_cores_needed == 96
    assert sysmod.cores_needed(8, "image") == 44 and sysmod.cores_needed(8, "image", datacenter=True) == 96


def test_multinode_gets_rdma_fabric_and_parallel_fs() -> None:
    r = req(model={"preset": "llama-2-70b"}, training={"method": "pretrain"}, data={"tokens": 1e11})
    b = build(r, "h100-sxm", 8, nodes=8)
    assert b.rdma
    assert b.network_gbps_per_gpu >= 400
    assert "InfiniBand" in b.network or "RoCE" in b.network
    assert any("parallel file system" in s.lower() for s in b.storage)
    assert any("Slurm" in s for s in b.software) and any("DCGM" in s for s in b.software)
    assert any("switch" in x.item.lower() for x in b.bom)
    assert b.cpu_count == 2
    assert 1000 <= b.ram_gb <= 2100
    assert b.cpu_cores >= 96  # DGX-class: 2 x 48 cores or more
    assert any("storage / front-end" in x.note for x in b.bom)  # a separate storage network
    assert "rails" in b.network


def test_few_nodes_get_a_nas_not_a_parallel_fs() -> None:
    r = req(model={"preset": "llama-2-70b"}, training={"method": "pretrain"}, data={"tokens": 1e11})
    b = build(r, "h100-sxm", 8, nodes=2)
    kinds = {s.id: s.kind for s in CAT.storage}
    shared = [x for x in b.bom if any(s.name == x.item and kinds[s.id] in ("nas", "parallel-fs") for s in CAT.storage)]
    assert shared and all("NAS" in x.note for x in shared)
    assert sum(x.total_usd or 0 for x in shared) < 100_000


def test_fabric_ports_follow_a_real_topology() -> None:
    assert sysmod.fabric_ports(16, 64) == (16, 1, "one switch")
    ports, switches, topo = sysmod.fabric_ports(512, 64)
    assert ports == 3 * 512 and "2-tier" in topo  # leaf down + leaf up + spine ports
    assert switches == 16 + 8


def test_a100_cluster_gets_200g_per_gpu() -> None:
    r = req(model={"preset": "llama-2-70b"}, training={"method": "pretrain"}, data={"tokens": 1e11})
    b = build(r, "a100-80gb-sxm", 8, nodes=2)
    assert 200 <= b.network_gbps_per_gpu < 400


def test_power_psu_and_site() -> None:
    hgx = build(req(), "h100-sxm", 8)
    # Epoch: an 8x H100 HGX node draws ~10.2 kW at most, ~75 % of it while training.
    assert hgx.max_power_w == pytest.approx(8 * 700 * 1.82, rel=0.05)
    assert hgx.power_w == pytest.approx(0.75 * hgx.max_power_w, rel=0.05)
    assert hgx.psu_w >= hgx.max_power_w
    assert "server room" in hgx.site or "colocation" in hgx.site
    ws = build(req(), "rtx-4090", 1)
    # Consumer 450 W cards: PSU >= 1.4x the worst case for transients.
    assert ws.psu_w >= 1.4 * ws.max_power_w
    assert ws.power_w <= 1440 and ws.site.startswith("desk")
    assert ws.heat_kw == pytest.approx(ws.power_w / 1000, rel=0.01)


def test_software_stack_by_architecture() -> None:
    assert any("12.8" in s for s in build(req(), "b200", 8).software)
    hop = build(req(), "h100-sxm", 8).software
    assert any("R550" in s for s in hop) and any("Docker" in s for s in hop)
    amp = build(req(), "a100-80gb-pcie", 4).software
    # cu12x wheels need R525+ (NVIDIA CUDA minor-version compatibility); R470 does not run them
    assert any("cu126" in s for s in amp) and not any("R470+" in s for s in amp)
    amd = build(req(), "mi300x", 8).software
    assert any("ROCm" in s for s in amd) and not any("CUDA" in s for s in amd)
    assert any("PEFT" in s for s in hop)  # LoRA plan implies PEFT


def test_adapters_on_a_model_parallel_plan_train_with_nemo_not_bitsandbytes() -> None:
    """QLoRA of DeepSeek-V3 on 16 B200 plans TP=8 PP=2: its software line read 'Megatron-LM TP=8 PP=2 + PEFT +
    bitsandbytes', a stack that does not exist (bitsandbytes' 4-bit layers are not Megatron's parallel ones).
    Such a plan trains with NeMo's PEFT recipes, as `gpuwiz launch` says; a data-parallel QLoRA keeps
    bitsandbytes."""
    from gpuwiz.core.recommend import recommend

    moe = Requirements.model_validate({
        "model": {"preset": "deepseek-v3"}, "training": {"method": "qlora"}, "data": {"samples": 20_000},
        "schedule": {"runs_per_month": 8, "deadline_days": 2},
        "deployment": {"mode": "rent", "objective": "perf-per-watt", "budget_usd": 150_000}})
    r = recommend(moe, CAT)
    assert r.build is not None and r.estimate is not None and r.estimate.plan.tp * r.estimate.plan.pp > 1
    line = r.build.software[-1]
    assert "NeMo PEFT (QLoRA" in line and "bitsandbytes" not in line, line
    small = build(req(training={"method": "qlora"}), "rtx-4090", 1).software[-1]
    assert small.endswith("+ PEFT + bitsandbytes") and "NeMo" not in small, small


def test_bom_sums_to_capex_and_prices_the_gpus() -> None:
    b = build(req(), "a100-80gb-pcie", 4)
    assert b.capex_usd == pytest.approx(sum(x.total_usd or 0 for x in b.bom))
    gpu_line = b.bom[0]
    assert gpu_line.qty == 4 and gpu_line.unit_usd == CAT.gpu("a100-80gb-pcie").price_new_usd
    used = build(req(deployment={"used_hardware": True}), "a100-80gb-sxm", 8)
    new = build(req(), "a100-80gb-sxm", 8)
    assert used.capex_usd < new.capex_usd


def test_desk_site_never_gets_a_rack_chassis() -> None:
    assert sysmod.pick_chassis(CAT, CAT.gpu("h100-sxm"), 8, "desk") is None
    ch = sysmod.pick_chassis(CAT, CAT.gpu("rtx-a6000"), 2, "desk")
    assert ch is not None and ch.kind in ("desktop", "workstation")


def test_desk_and_workstation_boxes_get_m2_servers_get_u2() -> None:
    """Consumer M.2 drives in desktop / workstation towers; enterprise U.2 in servers."""
    desk = build(req(deployment={"site": "desk"}), "rtx-4090", 1)
    ws = build(req(), "rtx-a6000", 4)
    srv = build(req(), "h100-sxm", 8)
    for b, form in ((desk, "m.2"), (ws, "m.2"), (srv, "u.2")):
        line = next(x for x in b.bom if x.item.startswith(("Consumer NVMe", "Enterprise NVMe")))
        tier = next(t for t in CAT.storage if t.name == line.item)
        assert tier.form == form, (b.chassis, line.item)
    assert not any("U.2" in x.item for x in desk.bom)
    # The M.2 tier's price is a consumer drive's, not an enterprise one's.
    m2 = next(x for x in desk.bom if x.item.startswith("Consumer NVMe"))
    assert (m2.unit_usd or 0) < 500


def test_m2_falls_back_to_u2_when_the_board_runs_out_of_sockets() -> None:
    ws = next(c for c in CAT.platforms.chassis if c.kind == "workstation")
    tier, n = sysmod.pick_nvme(CAT, ws, 3.0, 0.1)
    assert tier is not None and tier.form == "m.2" and n * (tier.capacity_tb or 0) >= 3.0
    tier, n = sysmod.pick_nvme(CAT, ws, 40.0, 0.1)  # 40 TB: more than 4 M.2 sockets hold
    assert tier is not None and tier.form == "u.2"


def test_four_triple_slot_consumer_cards_get_a_real_chassis() -> None:
    """4x RTX 4090 (3-slot coolers): a chassis with room for them -- no 'blower variants' -- a CPU with
    lanes for 4 x16 links, PSUs for the transients, and a site with a 208-240 V circuit."""
    b = build(req(), "rtx-4090", 4)
    ch = next(c for c in CAT.platforms.chassis if c.name == b.chassis)
    assert ch.max_gpus >= 4 and ch.max_slot_width >= CAT.gpu("rtx-4090").slot_width
    assert not any("blower" in x.note for x in b.bom)
    assert b.pcie_lanes >= b.pcie_lanes_needed >= 64
    assert b.psu_w >= b.max_power_w
    assert "240 V" in b.site and not b.site.startswith("desk")


# ---- issue 12: form factor and cooling, PSU, tiers, stack, rented instances ----------------------


def test_towers_cannot_cool_passive_cards() -> None:
    for gid in ("l40s", "a10", "a100-80gb-pcie", "h100-pcie", "l4"):
        g = CAT.gpu(gid)
        assert g.cooling == "passive"
        assert all(c.kind not in ("desktop", "workstation") for c in sysmod.chassis_options(CAT, g, 1, "any"))
        assert sysmod.chassis_options(CAT, g, 1, "desk") == []
    assert sysmod.pick_chassis(CAT, CAT.gpu("rtx-6000-ada"), 2, "desk") is not None  # blower card


def test_hgx_boards_are_sold_whole_and_b200_is_8_gpu_only() -> None:
    b200 = CAT.gpu("b200")
    assert sysmod.chassis_options(CAT, b200, 4, "any") == []
    assert [c.max_gpus for c in sysmod.chassis_options(CAT, b200, 8, "any")] == [8]
    h100 = CAT.gpu("h100-sxm")
    assert {c.max_gpus for n in (4, 8) for c in sysmod.chassis_options(CAT, h100, n, "any")} == {4, 8}
    assert sysmod.chassis_options(CAT, h100, 2, "any") == []


def test_a16_is_one_board_of_four() -> None:
    a16 = CAT.gpu("a16")
    assert a16.sold_as_board == 4
    assert sysmod.chassis_options(CAT, a16, 2, "any") == [] and sysmod.chassis_options(CAT, a16, 4, "any")
    b = build(req(), "a16", 4)
    assert "1 board(s) of 4" in b.bom[0].note


def test_a_short_psu_is_replaced_in_the_bom_not_warned_about() -> None:
    b = build(req(), "rtx-4090", 2)
    assert b.psu_needed_w is not None and b.psu_w is not None and b.psu_w >= b.psu_needed_w
    extra = [x for x in b.bom if x.item.startswith("PSU capacity")]
    assert extra and extra[0].total_usd and extra[0].total_usd > 0


def test_lean_tier_drops_bulk_disk_and_nic_and_costs_less() -> None:
    r = req(model={"preset": "gpt2-124m"}, training={"method": "pretrain"}, data={"tokens": 1e9})
    w = sysmod.workload_from(r, CAT, None)
    std = sysmod.size_system(r, CAT, CAT.gpu("rtx-3090"), 1, 1, w)
    lean = sysmod.size_system(r, CAT, CAT.gpu("rtx-3090"), 1, 1, w, lean=True, used=True)
    assert lean.capex_usd < std.capex_usd and lean.tier == "lean-used"
    assert not any("HDD" in x.item or "NIC" in x.item for x in lean.bom)
    assert lean.bom[0].unit_usd == CAT.gpu("rtx-3090").price_used_usd


def test_open_air_cards_are_not_packed_three_or_more_slot_to_slot() -> None:
    """Four open-air RTX 5090 (2-slot flow-through) would sit slot to slot in the 2-slot-spaced tower:
    they get a GPU chassis with a gap between the cards; blower cards (RTX 6000 Ada) still fit the tower."""
    tower = next(c for c in CAT.platforms.chassis if c.id == "workstation-4gpu")
    assert sysmod.packed_open_air(tower, CAT.gpu("rtx-5090"), 4)
    assert not sysmod.chassis_fits(tower, CAT.gpu("rtx-5090"), 4, "office")
    assert sysmod.chassis_fits(tower, CAT.gpu("rtx-5090"), 2, "office")
    assert sysmod.chassis_fits(tower, CAT.gpu("rtx-6000-ada"), 4, "office")
    b = build(req(), "rtx-5090", 4)
    assert b.chassis != tower.name
    # at a desk (towers only) the box takes their blower / liquid-cooled variants, and says so
    desk = build(req(deployment={"site": "desk"}), "rtx-5090", 4)
    line = next(x for x in desk.bom if x.item == desk.chassis)
    assert "blower" in line.note


def test_the_cpu_fits_the_board() -> None:
    """A chassis whose board has an AMD socket (WRX90, SP5) gets an AMD CPU, the cheapest that does."""
    rack = next(c for c in CAT.platforms.chassis if c.id == "rack-4u-4gpu-consumer")
    assert rack.cpu_vendor == "amd"
    cpu, _sockets = sysmod.pick_cpu(CAT, rack, 24, 68)
    assert cpu is not None and cpu.vendor == "amd" and cpu.segment == "workstation"
    free = rack.model_copy(update={"cpu_vendor": None})
    cheapest, _s = sysmod.pick_cpu(CAT, free, 24, 68)
    assert cheapest is not None and cheapest.price_usd <= cpu.price_usd
    b = build(req(), "rtx-4090", 4)
    assert b.chassis == rack.name and "Threadripper" in b.cpu


def test_text_samples_are_sequences_not_images() -> None:
    """20M BERT-large samples of 512 tokens are ~41 GB of text (4 bytes a token), not 20M x 110 KB
    (the ImageNet JPEG size image models default to) = 2.2 TB to stage and store."""
    def samples(model: dict[str, Any], n: float) -> Requirements:
        return Requirements.model_validate({"model": model, "training": {"method": "full"}, "data": {"samples": n}})
    text = sysmod.workload_from(samples({"preset": "bert-large"}, 20e6), CAT, None)
    assert text.modality == "text" and text.dataset_gb == pytest.approx(20e6 * 512 * 4 / 1e9)
    shorter = sysmod.workload_from(samples({"preset": "bert-large", "seq_len": 128}, 20e6), CAT, None)
    assert shorter.dataset_gb == pytest.approx(text.dataset_gb / 4)
    images = sysmod.workload_from(samples({"preset": "resnet-50"}, 1e6), CAT, None)
    assert images.dataset_gb == pytest.approx(1e6 * 110 / 1e6)


def test_stack_follows_the_plan() -> None:
    w = sysmod.workload_from(req(), CAT, None)
    import dataclasses

    offload = dataclasses.replace(w, method="full", offload="optimizer", zero_stage=3)
    assert "DeepSpeed" in sysmod.framework_line(offload)
    assert "Megatron" in sysmod.framework_line(dataclasses.replace(w, method="full", tp=2, framework="PyTorch FSDP"))
    assert "bitsandbytes" in sysmod.framework_line(dataclasses.replace(w, method="qlora"))


def test_rented_build_is_an_instance() -> None:
    b = build(req(), "h100-sxm", 8)
    rb = sysmod.rented_build(b, 208, 1800.0, 30.0, "cloud: x")
    assert rb.rented and rb.chassis is None and rb.psu_w is None and rb.bom == [] and rb.capex_usd == 0
    assert rb.instance is not None and rb.instance.vcpus == 208 and rb.instance.local_nvme_tb == 30.0


def test_dimms_run_at_the_cpus_memory_speed() -> None:
    r = req(model={"preset": "llama-2-70b"}, training={"method": "pretrain"}, data={"tokens": 1e11})
    b = build(r, "h100-sxm", 8, nodes=8)
    cpu = next(c for c in CAT.platforms.cpus if c.name == b.cpu)
    line = next(x for x in b.bom if "DIMM" in x.item)
    dimm = next(d for d in CAT.platforms.memory if d.name == line.item)
    assert dimm.mts >= cpu.memory_mts and f"runs at {min(dimm.mts, cpu.memory_mts)} MT/s" in line.note


def test_where_a_build_lives_reads_the_country_mains() -> None:
    """The same 2x RTX PRO 6000 desk box (~1.7 kW sustained) fits one 230 V / 16 A circuit in Germany;
    in the US (15 A / 120 V) and Japan (15 A / 100 V) it needs a dedicated circuit."""
    kinds = {}
    for country in ("DE", "US", "JP"):
        b = build(req(deployment={"site": "desk", "mode": "buy", "country": country}), "rtx-pro-6000", 2)
        oc = sysmod.office_circuit(CAT, country)
        assert oc.continuous_w == pytest.approx(oc.volts * oc.amps * 0.8)
        kinds[country] = b.site_kind
        if b.site_kind == "desk":
            assert f"{oc.amps:g} A/{oc.volts:g} V" in b.site
    assert 1440 < build(req(deployment={"site": "desk", "mode": "buy"}), "rtx-pro-6000", 2).power_w < 2944
    assert kinds == {"DE": "desk", "US": "office", "JP": "office"}


def test_a_box_lives_where_the_user_put_it() -> None:
    """site: colo means a colocation rack even for a 1.7 kW box (it was described as an office closet
    with a dedicated circuit); a server room likewise. A desk box at the desk stays a desk box."""
    for site, kind in (("colo", "colo"), ("server-room", "server-room"), ("desk", "desk")):
        b = build(req(deployment={"site": site, "mode": "buy", "country": "DE"}), "rtx-pro-6000", 2)
        assert b.site_kind == kind, (site, b.site)
    assert "colocation" in build(req(deployment={"site": "colo", "mode": "buy"}), "rtx-pro-6000", 2).site


@pytest.mark.parametrize(("gpu", "board"), [("a100-80gb-sxm", "A100"), ("h100-sxm", "H100"), ("h200-sxm", "H200"),
                                            ("b200", "B200")])
def test_an_8_gpu_sxm_server_is_the_board_of_its_generation(gpu: str, board: str) -> None:
    """SXM modules sit on their generation's baseboard (SXM2, HGX A100, HGX H100/H200, HGX B200): the
    chassis a build names is that board's server, not another generation's (a B200 build once named a
    DGX H100-class box), and its power train carries the node's worst-case draw."""
    g = CAT.gpu(gpu)
    ch = sysmod.pick_chassis(CAT, g, 8, "colo")
    assert ch is not None and ch.kind == "hgx"
    assert board in ch.name, ch.name
    others = {"V100", "A100", "H100", "B200"} - {board, "H100" if board == "H200" else board}
    assert not [o for o in others if o in ch.name], ch.name
    req = Requirements.model_validate({"model": {"preset": "llama-3-8b"}})
    b = sysmod.size_system(req, CAT, g, 8, 1, sysmod.workload_from(req, CAT, None))
    assert ch.psu_w is not None and ch.psu_w >= b.max_power_w, (ch.psu_w, b.max_power_w)


def test_a_platform_not_sold_new_is_never_in_a_build() -> None:
    """A V100 SXM2 server is sold used or refurbished only and the catalog has no price for one (catalog
    ``sold_new: false``): no build is sized on it -- so no V100 SXM2 build is bought -- while the GPU itself stays
    rentable. Its old list price once priced a 32x V100 cluster at $1M for a Chinese buyer."""
    assert any(not c.sold_new for c in CAT.platforms.chassis)
    for gid in ("v100-32gb-sxm2", "v100-16gb-sxm2"):
        g = CAT.gpu(gid)
        assert not g.sold_new and g.buy_new_usd is None
        for site in ("server-room", "colo"):
            assert all(c.sold_new for c in sysmod.chassis_options(CAT, g, 8, site))
            assert sysmod.pick_chassis(CAT, g, 8, site) is None
