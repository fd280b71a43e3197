"""Expert scenario suite (issue 12): every scenario in scenarios.yaml must give an answer an
ML-infrastructure engineer would sign -- its own expected properties, and the ones every answer has:
one coherent build and price, rented picks described as instances, cooling the chassis can handle,
slack against the deadline, sane suggestions, and a binding constraint when nothing fits."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest

from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.cost import instance_ram_ok
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Recommendation, Requirements
from gpuwiz.core.recommend import (
    PARETO_COST_REACH,
    PARETO_MIN_NODES,
    PARETO_NODE_REACH,
    SLACK_FRAC,
    deadline_hours,
    recommend,
    staging_gbps,
)
from gpuwiz.core.units import HOURS_PER_YEAR
from scenario_set import SCENARIOS, scenario_requirements

CAT: Catalog = load_catalog()


def check_universal(req: Requirements, r: Recommendation) -> None:
    pinned = bool(req.hardware and req.hardware.gpu)
    if not r.found:
        assert r.binding_constraint is not None, "nothing fits: the answer names the binding constraint"
    else:
        b, est, cost = r.build, r.estimate, r.cost
        assert b is not None and est is not None and cost is not None
        gpu = CAT.gpu(b.gpu)
        # Rented picks are instances: no chassis, PSU or BOM; the instance's host resources instead.
        if b.rented:
            assert b.chassis is None and b.psu_w is None and b.bom == [] and b.instance is not None
            assert cost.verdict == "rent" and cost.rent_offer is not None
            assert cost.rent_offer.instances >= 1 and cost.rent_offer.gpus_per_instance >= 1
            top = cost.cloud[0] if cost.cloud else None
            reserved = top is not None and (top.cost_per_run_reserved_usd or 1e18) < top.cost_per_run_usd
            if cost.rent_usd_total and r.cost_per_run_usd and not reserved and req.deployment.utilization is None:
                runs = req.schedule.runs_per_month * 12 * req.deployment.horizon_years
                # one price (to 2 cents a run: the per-run figure and its parts are each rounded to cents)
                assert cost.rent_usd_total == pytest.approx(r.cost_per_run_usd * runs, rel=0.01, abs=0.02 * runs)
            # The dataset is staged over the instance's front-end network, not its RDMA fabric.
            o = cost.rent_offer
            inst = next((i for i in CAT.cloud_instances
                         if (i.provider, i.instance_type, i.region) == (o.provider, o.instance, o.region)), None)
            data_gb = sysmod.workload_from(req, CAT, est).dataset_gb
            want_h = CAT.fac("cloud_setup_hours") + data_gb * 8 / (staging_gbps(inst) * 0.5) / 3600
            assert o.overhead_hours == pytest.approx(want_h, rel=0.01, abs=0.002), (o, data_gb)
            if est.memory.host_ram_gib > 0:  # offload: the chosen instance's published RAM holds it
                ram = b.instance.ram_gib
                assert ram is not None and ram >= est.memory.host_ram_gib, (ram, est.memory.host_ram_gib)
            # A multi-GPU rent of cards without P2P only when no single GPU does the run with slack.
            if b.gpus_per_node * b.nodes >= 2 and not gpu.p2p and gpu.nvlink_gbps <= 0 and not pinned \
                    and r.objective != "fastest":
                slack = SLACK_FRAC * deadline_hours(req)
                assert not any(p.count == 1 and p.wall_hours <= slack for p in r.pareto), r.pareto
        else:
            assert b.bom and b.capex_usd > 0
            assert b.capex_usd == pytest.approx(sum(x.total_usd or 0 for x in b.bom), rel=1e-6)
            # The build never carries a part the tool itself flags.
            assert not any(p.id == "psu-undersized" for p in r.pitfalls)
            chassis = next((c for c in CAT.platforms.chassis if c.name == b.chassis), None)
            if chassis is not None:
                assert gpu.cooling in chassis.cools, f"{gpu.cooling} {gpu.name} in {chassis.name}"
                # The CPU fits the board (a WRX90 board takes Threadripper PRO, not a Xeon W).
                cpu = next(c for c in CAT.platforms.cpus if c.name == b.cpu)
                assert chassis.cpu_vendor in (None, cpu.vendor), (b.cpu, chassis.name)
                # Open-air coolers packed slot to slot only as their blower / liquid variants.
                if sysmod.packed_open_air(chassis, gpu, b.gpus_per_node):
                    assert "blower" in next(x.note for x in b.bom if x.item == b.chassis)
                if chassis.kind == "hgx":
                    assert b.gpus_per_node == chassis.max_gpus  # baseboards are sold whole
            assert next(x for x in b.bom if x.item.startswith(gpu.name)).qty % gpu.sold_as_board == 0  # whole boards
            if req.deployment.site == "desk":
                assert chassis is None or chassis.kind in ("desktop", "workstation")
            if b.nodes > 1:
                assert b.cpu_cores >= 12 * b.gpus_per_node  # DGX-class CPUs for loading, NCCL, checkpoints
                shared = " ".join(b.storage)
                pfs = "parallel file system" in shared or "Storage Scale" in shared
                assert pfs if b.nodes > 4 else "NAS" in shared
                assert "storage / front-end" in b.network
            if cost.verdict in ("buy", "hybrid") and req.deployment.budget_usd is not None:
                # within the budget, or the GPU was asked for by name and the answer says it is over
                over = pinned and "over-budget" in {p.id for p in r.pitfalls}
                assert b.capex_usd <= req.deployment.budget_usd or over
            # A consumer-density warning only where the cards sit packed (not in a spaced GPU chassis).
            if chassis is not None and chassis.max_slot_width > gpu.slot_width:
                assert "consumer-density" not in {p.id for p in r.pitfalls}
        # Every cloud row for the pick's GPU holds the plan's CPU offload in its RAM (not the row of another shape
        # of it that a bought pick is weighed against: its plan is that shape's).
        ro = cost.rent_offer
        for o in cost.cloud:
            key = (o.provider, o.instance, o.gpu, o.region)
            inst = next((i for i in CAT.cloud_instances if (i.provider, i.instance_type, i.gpu, i.region) == key), None)
            other_shape = (not b.rented and ro is not None
                           and (ro.provider, ro.instance, ro.region) == (o.provider, o.instance, o.region)
                           and ro.instances * ro.gpus_per_instance != b.gpus_per_node * b.nodes)
            if o.gpu == b.gpu and inst is not None and est.feasible and not other_shape:
                assert instance_ram_ok(inst, est.memory.host_ram_gib), (o.provider, o.instance, inst.ram_gb)
        # The plan trains with the batch asked: no more data-parallel replicas than samples per step.
        if req.training.global_batch and not pinned:
            assert est.plan.dp // max(1, est.plan.cp) <= req.training.global_batch, est.plan
        if not pinned:
            assert b.gpu not in {e.id for e in CAT.platforms.training_excluded}
        # One coherent answer: the pick on the Pareto front carries the price the answer quotes.
        me = [p for p in r.pareto if p.gpu == b.gpu and p.count == b.gpus_per_node * b.nodes and p.nodes == b.nodes
              and not p.owned]
        if me and r.cost_per_run_usd is not None:
            assert me[0].cost_per_run_usd == pytest.approx(r.cost_per_run_usd, rel=1e-6)
        # The pick is not dominated: no build as simple (no more GPUs, no more nodes) on the front is both
        # faster and cheaper per run (the ranking priced the build the answer quotes). A non-CUDA point
        # may be: the ranking adds the documented software-stack handicap (recommend.effective); so may one
        # that fits only inside the memory headroom asked beside a pick that keeps it (recommend.pick: the
        # alternatives say so), and one that may miss the deadline (``late``: the front says so).
        if r.objective == "cheapest" and not pinned and r.cost_per_run_usd is not None:
            count = b.gpus_per_node * b.nodes
            same_stack = CAT.gpu(b.gpu).vendor == "nvidia"
            beaten = [p for p in r.pareto if p.count <= count and p.nodes <= b.nodes and not p.late and not p.owned
                      and (not same_stack or CAT.gpu(p.gpu).vendor == "nvidia")
                      and p.wall_hours < 0.98 * est.time.wall_hours
                      and p.cost_per_run_usd < 0.995 * r.cost_per_run_usd]
            if beaten and _roomy(req, est.memory.per_gpu_gib, est.memory.capacity_gib):
                beaten = [p for p in beaten if _roomy(req, *_memory(req, p.gpu, p.count, p.nodes))]
            assert not beaten, (r.cost_per_run_usd, r.pareto)
        ids = {p.id for p in r.pitfalls}
        # Warnings about the option the answer gives: the marketplace-host one only on the community tier
        # (the verified data-centre tier is what it advises), reserved-vs-buy only against the same GPU owned.
        if "marketplace-host" in ids:
            assert cost.rent_offer is not None and cost.rent_offer.tier == "marketplace-community"
        if "reserved-vs-buy" in ids and b.rented:
            assert r.buy_build is not None and r.buy_build.gpu == b.gpu
        front = [p for p in r.pareto if not p.owned]  # (owned builds stand beside it at their energy cost)
        for a, c in pairwise(front):
            assert a.wall_hours <= c.wall_hours and a.cost_per_run_usd > c.cost_per_run_usd  # non-dominated
        assert [p.wall_hours for p in r.pareto] == sorted(p.wall_hours for p in r.pareto)
        # The front holds only what an expert weighs against the pick (recommend.trim_front), one row per build.
        if r.cost_per_run_usd:
            for p in r.pareto:
                assert p.cost_per_run_usd <= PARETO_COST_REACH * r.cost_per_run_usd * 1.0001, p
                assert p.nodes <= max(PARETO_MIN_NODES, PARETO_NODE_REACH * b.nodes), p
        rows = [(p.gpu, p.count, p.nodes, p.rented, p.owned, round(p.wall_hours, 1), round(p.cost_per_run_usd))
                for p in r.pareto]
        assert len(rows) == len(set(rows)), rows
        # Verdict, payback and total agree.
        late = cost.payback_months is not None and cost.payback_months > req.deployment.horizon_years * 12
        if cost.verdict == "buy" and late and cost.rent_usd_total and cost.onprem \
                and cost.onprem.total_usd < cost.rent_usd_total:
            assert cost.buy_wins_only_by_resale and "resale" in cost.verdict_reason
        # Slack: a run ends by 85 % of its deadline, or the answer says it could not.
        tight = est.time.wall_hours > SLACK_FRAC * deadline_hours(req) * 1.02
        if r.objective != "fastest" and not pinned and est.feasible and tight:
            assert r.binding_constraint is not None and r.binding_constraint.kind == "deadline"
        # The stack printed is the one the estimate used.
        sw = " ".join(b.software)
        if est.plan.offload != "none":
            assert "DeepSpeed" in sw or "offload" in sw
        if req.training.method in ("lora", "qlora") and (est.plan.tp > 1 or est.plan.pp > 1 or est.plan.cp > 1
                                                         or est.plan.ep > 1):
            # adapters on a model-parallel plan: NeMo's PEFT recipes, whose QLoRA is not bitsandbytes
            assert "NeMo PEFT" in sw and "bitsandbytes" not in sw, sw
        elif req.training.method == "qlora":
            assert "bitsandbytes" in sw and "Megatron" not in sw
        if gpu.architecture in ("ampere", "volta", "turing"):
            assert "R470+" not in sw and "R535+" in sw
    # Only sane suggestions.
    horizon_h = req.deployment.horizon_years * HOURS_PER_YEAR
    for s in r.suggestions:
        if req.training.method == "pretrain":
            assert "LoRA" not in s, s
        for hours in re.findall(r"([\d,.]+) h per run", s):
            assert float(hours.replace(",", "")) <= horizon_h, s


def _memory(req: Requirements, gpu: str, count: int, nodes: int) -> tuple[float, float]:
    """(GiB per GPU, GiB of the card) of the plan for ``count`` GPUs on ``nodes`` nodes."""
    e = estimate(req, CAT, gpu=gpu, count=count, gpus_per_node=count // nodes)
    return e.memory.per_gpu_gib, e.memory.capacity_gib


def _roomy(req: Requirements, per_gpu: float, capacity: float) -> bool:
    """The plan keeps the memory headroom asked (recommend.roomy)."""
    return per_gpu <= capacity * (1.0 - req.deployment.headroom) + 1e-9


def check_expected(req: Requirements, r: Recommendation, exp: dict[str, Any]) -> None:
    if "found" in exp:
        assert r.found == exp["found"], (r.binding_constraint, r.suggestions)
    if "binding_in" in exp:
        assert r.binding_constraint is not None and r.binding_constraint.kind in exp["binding_in"], r.binding_constraint
    for s in exp.get("suggestions_not", []):
        assert not any(s in x for x in r.suggestions), r.suggestions
    for s in exp.get("site_suggestions_not", []):  # not for the site asked: a rental in the cloud may name it
        assert not any(s in x for x in r.suggestions if "deployment.site: cloud" not in x), r.suggestions
    for s in exp.get("suggestions_has", []):
        assert any(s in x for x in r.suggestions), r.suggestions
    if not r.found:
        return
    b, est, cost = r.build, r.estimate, r.cost
    assert b is not None and est is not None and cost is not None
    if "gpu_in" in exp:
        assert b.gpu in exp["gpu_in"], b.gpu
    if "gpu_not_in" in exp:
        assert b.gpu not in exp["gpu_not_in"], b.gpu
    if "gpus_per_node_in" in exp:
        assert b.gpus_per_node in exp["gpus_per_node_in"], b.gpus_per_node
    if "nodes" in exp:
        lo, hi = exp["nodes"]
        assert lo <= b.nodes <= hi, b.nodes
    if "rented" in exp:
        assert b.rented == exp["rented"], (b.rented, cost.verdict_reason)
    if "verdict_in" in exp:
        assert cost.verdict in exp["verdict_in"]
    if "max_capex" in exp and not b.rented:
        assert b.capex_usd <= exp["max_capex"], b.capex_usd
    if "used" in exp:  # the build to own is priced with used GPUs (its BOM says so)
        assert b.tier.endswith("-used") == exp["used"] and ("(used)" in b.bom[0].item) == exp["used"], b.bom[0]
    if "cpu_in" in exp:
        assert any(c in b.cpu for c in exp["cpu_in"]), b.cpu
    if "ram_gb" in exp:
        lo, hi = exp["ram_gb"]
        assert lo <= b.ram_gb <= hi, b.ram_gb
    if "min_cores_per_node" in exp:
        assert b.cpu_cores >= exp["min_cores_per_node"], b.cpu
    if "max_cores_needed" in exp:  # the CPU sized for the GPUs it feeds, not a reference system's floor
        assert b.cpu_cores_needed <= exp["max_cores_needed"], (b.cpu_cores_needed, b.cpu)
    if exp.get("memory_p90_fits"):  # the P90 end of the pick's memory range is within its card
        rng = est.memory.per_gpu_gib_range
        assert rng is not None and rng.high <= est.memory.capacity_gib, (rng, est.memory.capacity_gib)
    if "buy_max_lanes_needed" in exp and r.buy_build is not None:
        bb = r.buy_build
        assert bb.pcie_lanes_needed <= min(exp["buy_max_lanes_needed"], bb.pcie_lanes), (bb.pcie_lanes_needed, bb.cpu)
    if "sockets" in exp:
        assert b.cpu_count == exp["sockets"]
    for key, field in (("storage_has", " ".join(b.storage)), ("network_has", b.network),
                       ("software_has", " ".join(b.software))):
        for s in exp.get(key, []):
            assert s in field, (s, field)
    for s in exp.get("software_not", []):
        assert s not in " ".join(b.software), b.software
    if "min_fast_tb" in exp:
        nvme = [x for x in b.bom if "NVMe" in x.item]
        tb = sum(x.qty * (next(s.capacity_tb for s in CAT.storage if s.name == x.item) or 0) for x in nvme)
        assert tb >= exp["min_fast_tb"]
    if "min_bulk_tb" in exp:
        assert b.storage_tb >= exp["min_bulk_tb"]
    if "min_gbps_per_gpu" in exp and b.nodes > 1:
        assert b.network_gbps_per_gpu >= exp["min_gbps_per_gpu"]
    if "chassis_kind_in" in exp and not b.rented:
        assert b.chassis_kind in exp["chassis_kind_in"], b.chassis
    if "cooling_in" in exp:
        assert CAT.gpu(b.gpu).cooling in exp["cooling_in"]
    ids = {p.id for p in r.pitfalls}
    for pid in exp.get("pitfalls_has", []):
        assert pid in ids, ids
    for pid in exp.get("pitfalls_not", []):
        assert pid not in ids, ids
    if "assumption" in exp:
        assert any(exp["assumption"] in a for a in r.assumptions), r.assumptions
    if "gpus_total_in" in exp:
        assert b.gpus_per_node * b.nodes in exp["gpus_total_in"], (b.gpus_per_node, b.nodes)
    if exp.get("buy_not_restricted") and r.buy_build is not None:  # a build to own must be buyable there
        assert not CAT.gpu(r.buy_build.gpu).export_restricted, r.buy_build.gpu
    if exp.get("value_of_time"):  # no equally simple build 1.25x faster for at most 5 % more per run
        me = r.cost_per_run_usd or 0
        assert not [p for p in r.pareto if p.count == b.gpus_per_node * b.nodes and p.nodes == b.nodes
                    and p.wall_hours * 1.25 <= est.time.wall_hours and p.cost_per_run_usd <= 1.04 * me], r.pareto
    for pid, text in exp.get("pitfall_text", {}).items():
        msgs = [p.message for p in r.pitfalls if p.id == pid]
        assert msgs and text in msgs[0], (pid, msgs)
    for pid, text in exp.get("pitfall_text_not", {}).items():
        assert not any(text in p.message for p in r.pitfalls if p.id == pid), (pid, text)
    if "marketplace_verdict" in exp:  # a rent verdict on a community host's price that a data centre would flip
        said = cost.datacentre_rent_usd_total is not None
        assert said == exp["marketplace_verdict"], (cost.verdict, cost.verdict_reason)
        if said:
            assert cost.verdict == "rent" and cost.rent_offer is not None
            assert cost.rent_offer.tier == "marketplace-community", cost.rent_offer
            assert cost.onprem is not None and cost.onprem.total_usd < 0.9 * (cost.datacentre_rent_usd_total or 0)
            assert cost.datacentre_rent_option and cost.datacentre_rent_option in cost.verdict_reason
    if "site_has" in exp:
        assert exp["site_has"] in b.site, b.site
    if "site_kind_in" in exp and not b.rented:
        assert b.site_kind in exp["site_kind_in"], b.site
    if "buy_site_kind_in" in exp and r.buy_build is not None:
        assert r.buy_build.site_kind in exp["buy_site_kind_in"], r.buy_build.site
    if exp.get("verdict_follows_pick"):  # any objective: the verdict is about the headline build
        if b.rented:
            assert cost.verdict == "rent", cost.verdict_reason
        else:
            assert r.buy_build is not None and (r.buy_build.gpu, r.buy_build.gpus_per_node, r.buy_build.nodes) == (
                b.gpu, b.gpus_per_node, b.nodes)
    if "max_wall_hours" in exp:
        assert est.time.wall_hours <= exp["max_wall_hours"]
    if exp.get("board_note"):
        assert "board(s) of 4" in b.bom[0].note
    if exp.get("no_b200_board_below_8"):
        if b.gpu == "b200" and not b.rented:
            assert b.gpus_per_node == 8
        if r.buy_build is not None and r.buy_build.gpu == "b200":
            assert r.buy_build.gpus_per_node == 8
    if "better_than" in exp and b.gpu != exp["better_than"]:
        other = [a for a in r.alternatives if a.gpu == exp["better_than"]]
        assert other and other[0].cost_per_run_usd > (r.cost_per_run_usd or 0), "a different GPU needs its reason"
    if exp.get("deadline_independent"):
        data = req.model_dump()
        data["schedule"] = {**data["schedule"], "deadline_days": (req.schedule.deadline_days or 30) * 3}
        r2 = recommend(Requirements.model_validate(data), CAT)
        assert r2.build is not None
        assert (r2.build.gpu, r2.build.gpus_per_node, r2.build.nodes) == (b.gpu, b.gpus_per_node, b.nodes)


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_expert_scenario(sc: dict[str, Any]) -> None:
    req = scenario_requirements(sc)
    r = recommend(req, CAT)
    check_universal(req, r)
    check_expected(req, r, sc.get("expect", {}))


def test_suite_is_big_enough() -> None:
    assert len(SCENARIOS) >= 40
    assert len({s["id"] for s in SCENARIOS}) == len(SCENARIOS)
