"""Pitfall rules: every rule fires on a situation built to trigger it and stays quiet on one that
should not, and its message quotes the triggering numbers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpuwiz.core import cost as costmod
from gpuwiz.core import pitfalls as pit
from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import CostAnalysis, Estimate, Range, Requirements
from gpuwiz.core.recommend import recommend

CAT: Catalog = load_catalog()

LLAMA7B_LORA: dict[str, Any] = {
    "model": {"preset": "llama-2-7b", "seq_len": 2048},
    "training": {"method": "lora"},
    "data": {"tokens": 1e8},
}


def make_req(base: dict[str, Any] | None = None, **sections: dict[str, Any]) -> Requirements:
    data = {k: dict(v) for k, v in (base or LLAMA7B_LORA).items()}
    for key, upd in sections.items():
        data[key] = {**data.get(key, {}), **upd}
    return Requirements.model_validate(data)


def ctx(req: Requirements | None = None, gpu: str = "a100-80gb-sxm", gpn: int = 1, nodes: int = 1,
        verdict: str | None = None, build_update: dict[str, Any] | None = None,
        est_update: Callable[[Estimate], Estimate] | None = None, cost: CostAnalysis | None = None,
        with_cost: bool = True) -> pit.Context:
    req = req or make_req()
    g = CAT.gpu(gpu)
    est = estimate(req, CAT, gpu=gpu, count=gpn * nodes, gpus_per_node=gpn)
    if est_update:
        est = est_update(est)
    w = sysmod.workload_from(req, CAT, est)
    build = sysmod.size_system(req, CAT, g, gpn, nodes, w)
    if build_update:
        build = build.model_copy(update=build_update)
    if cost is None and with_cost:
        cloud = costmod.cloud_options(req, CAT, gpu, gpn * nodes, gpn, est.time.wall_hours)
        ref = costmod.RentRef(usd_per_run=cloud[0].cost_per_run_usd, label="ref",
                              usd_per_gpu_hour=cloud[0].usd_per_hour / cloud[0].gpus_per_instance,
                              spot_usd_per_run=cloud[0].cost_per_run_spot_usd) if cloud else None
        cost = costmod.analyse(req, CAT, build, est.time.gpu_hours, cloud, ref)
    if cost is not None and verdict:
        cost = cost.model_copy(update={"verdict": verdict})
    return pit.Context(req=req, cat=CAT, gpu=g, build=build, est=est, cost=cost)


TOWER_4GPU = next(c.name for c in CAT.platforms.chassis if c.id == "workstation-4gpu")


def test_consumer_density_only_where_the_cards_sit_packed() -> None:
    """Four 3-slot RTX 4090 in a tower recirculate each other's heat; gpuwiz's own build puts them in a
    GPU chassis with a gap between the cards (90 mm pitch), where the warning would change nothing."""
    c = ctx(gpu="rtx-4090", gpn=4, verdict="buy")
    assert c.build is not None
    ch = next(x for x in CAT.platforms.chassis if x.name == c.build.chassis)
    assert ch.max_slot_width > CAT.gpu("rtx-4090").slot_width
    assert not fired(c, "consumer-density")
    assert fired(ctx(gpu="rtx-4090", gpn=4, verdict="buy", build_update={"chassis": TOWER_4GPU}), "consumer-density")


def test_vram_headroom_near_the_plan_limit_only_when_the_p90_misses_the_card() -> None:
    """The plan's micro-batch fills the card up to the headroom limit: near that limit the warning
    changes nothing unless the slow (P90) end of the memory estimate is above the card."""
    near = ctx(est_update=tight_memory(0.18))
    m = near.est.memory  # type: ignore[union-attr]
    assert m.per_gpu_gib > 0.95 * m.usable_gib and not m.p90_exceeds_capacity
    assert not fired(near, "vram-headroom")

    def p90_above(e: Estimate) -> Estimate:
        e = tight_memory(0.18)(e)
        cap = e.memory.capacity_gib
        mem = e.memory.model_copy(update={"p90_exceeds_capacity": True,
                                          "per_gpu_gib_range": Range(low=0.7 * cap, high=1.2 * cap)})
        return e.model_copy(update={"memory": mem})
    c = ctx(est_update=p90_above)
    (p,) = fired(c, "vram-headroom")
    assert f"P90 {1.2 * c.est.memory.capacity_gib:.1f} GiB" in p.message  # type: ignore[union-attr]


def with_gpu(c: pit.Context, **upd: Any) -> pit.Context:
    assert c.gpu is not None
    return pit.Context(req=c.req, cat=c.cat, gpu=c.gpu.model_copy(update=upd), build=c.build, est=c.est, cost=c.cost)


def only_provider(c: pit.Context, provider: str) -> pit.Context:
    assert c.cost is not None
    cost = c.cost.model_copy(update={"cloud": [o for o in c.cost.cloud if o.provider == provider]})
    return pit.Context(req=c.req, cat=c.cat, gpu=c.gpu, build=c.build, est=c.est, cost=cost)


def fired(c: pit.Context, rid: str) -> list[pit.Pitfall]:
    return [p for p in pit.check(c) if p.id == rid]


def tight_memory(frac_free: float) -> Callable[[Estimate], Estimate]:
    def upd(e: Estimate) -> Estimate:
        cap = e.memory.capacity_gib
        mem = e.memory.model_copy(update={"per_gpu_gib": cap * (1 - frac_free), "fits": True})
        return e.model_copy(update={"memory": mem, "feasible": True})
    return upd


def not_fitting(e: Estimate) -> Estimate:
    mem = e.memory.model_copy(update={"per_gpu_gib": e.memory.capacity_gib * 2, "fits": False})
    return e.model_copy(update={"memory": mem, "feasible": False, "problems": ["needs 2x the memory"]})


def slow(hours: float) -> Callable[[Estimate], Estimate]:
    def upd(e: Estimate) -> Estimate:
        t = e.time.model_copy(update={"wall_hours": hours, "gpu_hours": hours * e.plan.gpus})
        return e.model_copy(update={"time": t})
    return upd


def offload(host_gib: float) -> Callable[[Estimate], Estimate]:
    def upd(e: Estimate) -> Estimate:
        return e.model_copy(update={"memory": e.memory.model_copy(update={"host_ram_gib": host_gib})})
    return upd


def rent_offer(c: pit.Context, provider: str, overhead_hours: float = 0.5, tier: str | None = None,
               instances: int = 1) -> pit.Context:
    from gpuwiz.core.models import RentOffer

    assert c.cost is not None
    tier = tier or ("marketplace-community" if provider == "Vast.ai" else "hyperscaler")
    offer = RentOffer(provider=provider, instance="x", region="us", country="US", tier=tier, instances=instances,
                      gpus_per_instance=1, usd_per_hour=2.0 * instances, overhead_hours=overhead_hours,
                      egress_usd=1.0)
    return pit.Context(req=c.req, cat=c.cat, gpu=c.gpu, build=c.build, est=c.est,
                       cost=c.cost.model_copy(update={"rent_offer": offer}))


def buy_cost(utilization: float, breakeven: float | None,
             payback: float | None = 12.0) -> Callable[[pit.Context], pit.Context]:
    def upd(c: pit.Context) -> pit.Context:
        assert c.cost and c.cost.onprem
        onprem = c.cost.onprem.model_copy(update={"utilization": utilization})
        cost = c.cost.model_copy(update={"onprem": onprem, "breakeven_utilization": breakeven,
                                         "payback_months": payback, "verdict": "buy"})
        return pit.Context(req=c.req, cat=c.cat, gpu=c.gpu, build=c.build, est=c.est, cost=cost)
    return upd


def rent_price_observed(when: str) -> Callable[[], pit.Context]:
    def make() -> pit.Context:
        c = ctx(gpu="h100-sxm", gpn=8, verdict="rent")
        assert c.cost is not None and c.cost.cloud
        cloud = [c.cost.cloud[0].model_copy(update={"observed": when}), *c.cost.cloud[1:]]
        return pit.Context(req=c.req, cat=c.cat, gpu=c.gpu, build=c.build, est=c.est,
                           cost=c.cost.model_copy(update={"cloud": cloud}))
    return make


# Each case: rule id -> (context that triggers it, context that does not).
CASES: dict[str, tuple[Callable[[], pit.Context], Callable[[], pit.Context]]] = {
    "batch-rounded": (  # 12 replicas cannot split a batch of 64; 8 can
        lambda: ctx(make_req(training={"global_batch": 64}), gpu="h100-sxm", gpn=4, nodes=3),
        lambda: ctx(make_req(training={"global_batch": 64}), gpu="h100-sxm", gpn=8),
    ),
    "batch-grown": (  # no batch stated: 1,024 replicas take 1,024 sequences a step (a fine-tune uses <= 512); 8 do not
        lambda: ctx(gpu="h100-sxm", gpn=8, nodes=128),
        lambda: ctx(gpu="h100-sxm", gpn=8),
    ),
    "vram-headroom": (
        lambda: ctx(est_update=tight_memory(0.08)),
        lambda: ctx(est_update=tight_memory(0.28)),
    ),
    "does-not-fit": (
        lambda: ctx(est_update=not_fitting),
        lambda: ctx(),
    ),
    "legacy-gpu": (
        lambda: with_gpu(ctx(gpu="t4"), architecture="pascal"),
        lambda: ctx(gpu="a100-80gb-sxm"),
    ),
    "underprovisioned": (
        lambda: ctx(req=make_req(schedule={"deadline_days": 1}), est_update=slow(100.0)),
        lambda: ctx(req=make_req(schedule={"deadline_days": 10}), est_update=slow(100.0)),
    ),
    "deadline-tight": (
        lambda: ctx(req=make_req(schedule={"deadline_days": 5}), est_update=slow(110.0)),
        lambda: ctx(req=make_req(schedule={"deadline_days": 5}), est_update=slow(50.0)),
    ),
    "overprovisioned": (
        lambda: buy_cost(0.02, 0.4)(ctx()),
        lambda: buy_cost(0.8, 0.4)(ctx()),
    ),
    "over-budget": (  # 2 H100 SXM asked for by name, bought, on a $20,000 budget; the same on $200,000
        lambda: ctx(make_req(deployment={"mode": "buy", "budget_usd": 20_000}, hardware={"gpu": "h100-sxm"}),
                    gpu="h100-sxm", gpn=2, verdict="buy"),
        lambda: ctx(make_req(deployment={"mode": "buy", "budget_usd": 200_000}, hardware={"gpu": "h100-sxm"}),
                    gpu="h100-sxm", gpn=2, verdict="buy"),
    ),
    "baseboard-gpu": (  # 2 B200 SXM modules in a generic server (none sells them so); 8 on an HGX baseboard
        lambda: ctx(make_req(deployment={"mode": "buy"}), gpu="b200", gpn=2, verdict="buy"),
        lambda: ctx(make_req(deployment={"mode": "buy"}), gpu="b200", gpn=8, verdict="buy"),
    ),
    "short-horizon": (
        lambda: buy_cost(0.8, 0.4, payback=60.0)(ctx(req=make_req(deployment={"horizon_years": 2}))),
        lambda: buy_cost(0.8, 0.4, payback=10.0)(ctx(req=make_req(deployment={"horizon_years": 2}))),
    ),
    "reserved-vs-buy": (
        lambda: only_provider(ctx(gpu="h100-sxm", gpn=8, req=make_req(deployment={"utilization": 0.9})), "AWS"),
        lambda: ctx(gpu="h100-sxm", gpn=8, req=make_req(schedule={"runs_per_month": 0.1})),
    ),
    "family-not-validated": (  # a ViT: no published ViT run in the validation data; a Llama LoRA has 180
        lambda: ctx(req=make_req({"model": {"preset": "vit-b-16"}, "training": {"method": "pretrain"},
                                   "data": {"samples": 1.28e6, "epochs": 10}})),
        lambda: ctx(),
    ),
    "ex-mining": (
        lambda: ctx(gpu="rtx-3090", req=make_req(deployment={"used_hardware": True})),
        # (a 3090 bought today is used whatever was asked: it is no longer sold new; a 4090 is past the mining era)
        lambda: ctx(gpu="rtx-4090", req=make_req(deployment={"used_hardware": True})),
    ),
    "gddr6x-thermals": (
        lambda: ctx(gpu="rtx-3090", gpn=4),
        lambda: ctx(gpu="rtx-4090", gpn=4),
    ),
    "consumer-no-p2p": (
        lambda: ctx(gpu="rtx-4090", gpn=2, verdict="buy"),
        lambda: ctx(gpu="rtx-4090", gpn=1, verdict="buy"),
    ),
    "consumer-density": (
        lambda: ctx(gpu="rtx-4090", gpn=4, verdict="buy", build_update={"chassis": TOWER_4GPU}),
        lambda: ctx(gpu="rtx-4090", gpn=2, verdict="buy"),
    ),
    "geforce-eula": (
        lambda: ctx(gpu="rtx-4090", req=make_req(deployment={"site": "colo", "mode": "buy"})),
        lambda: ctx(gpu="rtx-4090", req=make_req(deployment={"site": "office", "mode": "buy"})),
    ),
    "power-connector": (
        lambda: ctx(gpu="rtx-4090"),
        lambda: ctx(gpu="rtx-a6000"),
    ),
    "pcie-lanes": (
        lambda: ctx(gpu="rtx-a6000", gpn=2, verdict="buy", build_update={"pcie_lanes": 24, "pcie_lanes_needed": 44}),
        lambda: ctx(gpu="rtx-a6000", gpn=2, verdict="buy"),
    ),
    "wall-circuit": (
        lambda: ctx(gpu="rtx-a6000", gpn=8, req=make_req(deployment={"site": "office", "mode": "buy"})),
        lambda: ctx(gpu="rtx-a6000", gpn=2, req=make_req(deployment={"site": "office", "mode": "buy"})),
    ),
    "psu-undersized": (
        # A build sized elsewhere whose PSU is short of the margin rule; gpuwiz's own builds carry the
        # extra PSU capacity in the BOM, so they never trip it.
        lambda: ctx(gpu="rtx-a6000", gpn=4, verdict="buy", build_update={"psu_w": 2000, "psu_needed_w": 3200}),
        lambda: ctx(gpu="rtx-4090", gpn=2, verdict="buy", req=make_req(deployment={"site": "desk"})),
    ),
    "office-heat-noise": (
        lambda: ctx(gpu="rtx-a6000", gpn=8, req=make_req(deployment={"site": "office", "mode": "buy"})),
        lambda: ctx(gpu="rtx-a6000", gpn=8, req=make_req(deployment={"site": "colo", "mode": "buy"})),
    ),
    "rack-density": (
        lambda: ctx(gpu="h100-sxm", gpn=8, req=make_req(deployment={"site": "colo", "mode": "buy"})),
        lambda: ctx(gpu="l40s", gpn=4, req=make_req(deployment={"site": "colo", "mode": "buy"})),
    ),
    "cpu-dataloader": (
        lambda: ctx(gpu="a100-80gb-pcie", gpn=8, verdict="buy", build_update={"cpu_cores": 16}),
        lambda: ctx(gpu="a100-80gb-pcie", gpn=8, verdict="buy"),
    ),
    "host-ram": (
        lambda: ctx(gpu="a100-80gb-pcie", gpn=4, verdict="buy", build_update={"ram_gb": 128}),
        lambda: ctx(gpu="a100-80gb-pcie", gpn=4, verdict="buy"),
    ),
    "storage-io": (
        lambda: ctx(verdict="buy", build_update={"read_gbps_needed": 20.0, "read_gbps": 3.0}),
        lambda: ctx(verdict="buy"),
    ),
    "multinode-network": (
        lambda: ctx(gpu="h100-sxm", gpn=8, nodes=2, build_update={"rdma": False, "network_gbps_per_gpu": 12.5}),
        lambda: ctx(gpu="h100-sxm", gpn=8, nodes=2),
    ),
    "checkpoint-storage": (
        lambda: ctx(verdict="buy", build_update={"checkpoint_gb": 1500.0, "storage_tb": 2.0}),
        lambda: ctx(verdict="buy"),
    ),
    "cuda-arch": (
        lambda: ctx(gpu="b200", gpn=8),
        lambda: ctx(gpu="a100-80gb-sxm"),
    ),
    "rocm-caveats": (
        lambda: ctx(gpu="mi300x", gpn=8),
        lambda: ctx(gpu="h100-sxm", gpn=8),
    ),
    "precision-unsupported": (
        lambda: ctx(gpu="a100-80gb-sxm", req=make_req(training={"precision": "fp8"})),
        lambda: ctx(gpu="h100-sxm", req=make_req(training={"precision": "fp8"})),
    ),
    "start-in-cloud": (
        lambda: ctx(verdict="buy"),
        lambda: ctx(verdict="buy", req=make_req(calibration={"tokens_per_s_per_gpu": 3000})),
    ),
    "passive-cooling-in-tower": (
        lambda: ctx(gpu="l40s", gpn=1, verdict="buy", req=make_req(deployment={"site": "desk", "mode": "buy"})),
        lambda: ctx(gpu="rtx-6000-ada", gpn=1, verdict="buy", req=make_req(deployment={"site": "desk", "mode": "buy"})),
    ),
    "marketplace-host": (
        lambda: rent_offer(ctx(gpu="h100-sxm", verdict="rent"), "Vast.ai"),
        lambda: rent_offer(ctx(gpu="h100-sxm", verdict="rent"), "AWS"),
    ),
    "data-staging": (
        lambda: rent_offer(ctx(gpu="h100-sxm", verdict="rent"), "AWS", overhead_hours=3.0),
        lambda: rent_offer(ctx(gpu="h100-sxm", verdict="rent"), "AWS", overhead_hours=0.5),
    ),
    "rent-cluster-capacity": (  # 8 rented instances at once are booked ahead; 7 are not
        lambda: rent_offer(ctx(gpu="h100-sxm", verdict="rent"), "AWS", instances=8),
        lambda: rent_offer(ctx(gpu="h100-sxm", verdict="rent"), "AWS", instances=7),
    ),
    "hgx-lead-time": (
        lambda: ctx(gpu="h100-sxm", gpn=8, verdict="buy"),
        lambda: ctx(gpu="l40s", gpn=8, verdict="buy"),
    ),
    "host-ram-offload": (
        lambda: ctx(gpu="h100-sxm", est_update=offload(2000.0), verdict="buy", build_update={"ram_gb": 1024}),
        lambda: ctx(gpu="h100-sxm", est_update=offload(200.0), verdict="buy", build_update={"ram_gb": 1024}),
    ),
    "spot-checkpointing": (
        lambda: ctx(gpu="l40s", gpn=1, verdict="rent"),
        # RunPod's H100 spot is dearer than Vast.ai's on-demand: no spot advice worth giving.
        lambda: ctx(gpu="h100-sxm", gpn=8, verdict="rent"),
    ),
    "data-residency": (
        lambda: ctx(verdict="rent", req=make_req(deployment={"data_sensitivity": "regulated"})),
        lambda: ctx(verdict="rent", req=make_req(deployment={"data_sensitivity": "internal"})),
    ),
    "export-control": (
        lambda: ctx(gpu="h100-sxm", req=make_req(deployment={"country": "CN"})),
        lambda: ctx(gpu="h20", gpn=8, req=make_req(deployment={"country": "CN"})),
    ),
    "stale-price": (
        rent_price_observed("2024-06"),
        rent_price_observed(CAT.as_of),
    ),
    "stale-purchase-price": (
        lambda: with_gpu(ctx(gpu="h100-sxm", gpn=8, verdict="buy"), price_new_observed="2024-06"),
        lambda: with_gpu(ctx(gpu="h100-sxm", gpn=8, verdict="buy"), price_new_observed=CAT.as_of),
    ),
    "obsolescence": (
        lambda: ctx(verdict="buy", gpu="v100-32gb-sxm2", gpn=8),
        lambda: ctx(verdict="buy", gpu="b200", gpn=8),
    ),
    "reliability-spares": (
        lambda: ctx(verdict="buy", gpu="h100-sxm", gpn=8, nodes=4),
        lambda: ctx(verdict="buy", gpu="h100-sxm", gpn=8, nodes=1),
    ),
    "failures-per-run": (
        lambda: ctx(gpu="h100-sxm", gpn=8, est_update=slow(20_000.0)),
        lambda: ctx(gpu="h100-sxm", gpn=8, est_update=slow(10.0)),
    ),
    "energy-efficiency": (
        lambda: buy_cost(0.9, 0.3)(ctx(gpu="rtx-3090", gpn=2, req=make_req(
            deployment={"electricity_usd_per_kwh": 0.6, "staff_usd_per_year": 0, "utilization": 0.9}))),
        lambda: buy_cost(0.9, 0.3)(ctx(gpu="h100-sxm", gpn=8, req=make_req(
            deployment={"electricity_usd_per_kwh": 0.05}))),
    ),
}


def test_at_least_twenty_rules_each_with_a_case() -> None:
    ids = pit.rule_ids()
    assert len(ids) >= 20
    assert len(set(ids)) == len(ids)
    assert set(CASES) == set(ids), set(ids) ^ set(CASES)


def test_every_rule_has_source_and_valid_severity() -> None:
    for r in pit.RULES:
        assert r.source.strip()
        assert r.severity in pit.SEVERITY_ORDER


@pytest.mark.parametrize("rid", sorted(CASES))
def test_rule_triggers(rid: str) -> None:
    hits = fired(CASES[rid][0](), rid)
    assert len(hits) == 1, rid
    p = hits[0]
    assert p.severity in ("block", "high", "medium", "info")
    assert p.source
    assert any(ch.isdigit() for ch in p.message) or rid in ("start-in-cloud", "rocm-caveats", "geforce-eula"), p.message


@pytest.mark.parametrize("rid", sorted(CASES))
def test_rule_stays_quiet(rid: str) -> None:
    assert fired(CASES[rid][1](), rid) == []


def test_messages_quote_their_numbers() -> None:
    c = ctx(est_update=tight_memory(0.08))
    (p,) = fired(c, "vram-headroom")
    assert f"{c.est.memory.per_gpu_gib:.1f} GiB" in p.message  # type: ignore[union-attr]
    assert "8%" in p.message
    assert p.severity == "high"
    c2 = ctx(est_update=tight_memory(0.12))  # under 15 % free
    assert fired(c2, "vram-headroom")[0].severity == "medium"
    # past 95 % of the plan's 80 % limit with the P90 inside the card: see the test above
    # 72 % used (129 of 180 GiB) sits inside the plan's headroom: nothing to warn about
    assert fired(ctx(est_update=tight_memory(0.28)), "vram-headroom") == []


def test_wall_circuit_blocks_only_a_chosen_office() -> None:
    c = ctx(gpu="rtx-a6000", gpn=8, req=make_req(deployment={"site": "office", "mode": "buy"}))
    (p,) = fired(c, "wall-circuit")
    assert p.severity == "block"
    assert f"{c.build.power_w:,}" in p.message  # type: ignore[union-attr]
    # Rented hardware: the provider's problem, not a pitfall for the user.
    rented = ctx(gpu="rtx-a6000", gpn=8, req=make_req(deployment={"site": "office", "mode": "rent"}))
    assert fired(rented, "wall-circuit") == []


def test_data_residency_counts_only_the_offers_priced_and_the_jurisdiction() -> None:
    """A DE team with regulated data renting only in EU regions: the offers sit in FI / NL (inside the
    GDPR's EU/EEA), so no "transfer path" warning; GCP's a4 in US regions is not one of the offers."""
    req = make_req(deployment={"data_sensitivity": "regulated", "country": "DE", "mode": "rent",
                               "regions": ["DE", "FR", "NL", "FI", "BE", "eu-central-1", "europe-west4"]})
    c = ctx(gpu="b200", gpn=8, verdict="rent", req=req)
    assert c.cost is not None and c.cost.cloud
    assert all(o.region and not o.region.startswith("us") for o in c.cost.cloud)
    (p,) = fired(c, "data-residency")
    assert p.severity == "medium" and "US" not in p.message and "transfer path" not in p.message
    # Abroad (confidential data may be rented in the US by a DE team) still needs the transfer path.
    (q,) = fired(ctx(gpu="b200", gpn=8, verdict="rent", req=make_req(deployment={
        "data_sensitivity": "confidential", "country": "DE", "mode": "rent"})), "data-residency")
    assert "transfer path" in q.message and "US" in q.message and "FI" not in q.message


def test_wall_circuit_reads_the_country_mains() -> None:
    """A ~1.8 kW desk build: fine on one 230 V / 16 A circuit in Germany, too much for a 120 V / 15 A US
    circuit, and more so for a 100 V Japanese one (catalog economics.<country>.office_circuit)."""
    from gpuwiz.core.system import office_circuit
    de, us, jp = (office_circuit(CAT, k) for k in ("DE", "US", "JP"))
    assert (de.volts, de.amps, us.volts, us.amps, jp.volts) == (230, 16, 120, 15, 100)
    draw = {"power_w": 1800}
    for country, fires in (("DE", False), ("US", True), ("JP", True)):
        c = ctx(gpu="rtx-4090", gpn=2, build_update=draw,
                req=make_req(deployment={"site": "desk", "mode": "buy", "country": country}))
        got = fired(c, "wall-circuit")
        assert bool(got) == fires, (country, got)
        if got:
            oc = office_circuit(CAT, country)
            assert f"{oc.amps:g} A/{oc.volts:g} V" in got[0].message and "20 A/240 V" in got[0].message
    # A country without mains data in the catalog: the facility default (15 A / 120 V).
    assert office_circuit(CAT, "BR").continuous_w == CAT.fac("office_circuit_w")


def test_export_control_names_in_market_alternatives() -> None:
    (p,) = fired(ctx(gpu="h100-sxm", verdict="buy", req=make_req(deployment={"country": "CN", "mode": "buy"})),
                 "export-control")
    assert p.severity == "block"
    assert "CN" in p.message
    names = {g.name for g in CAT.gpus if not g.export_restricted}
    assert any(n in p.message for n in names)


def test_sorted_by_severity() -> None:
    c = ctx(gpu="rtx-3090", gpn=4, req=make_req(deployment={"used_hardware": True, "site": "office", "mode": "buy"}),
            est_update=tight_memory(0.05))
    sev = [pit.SEVERITY_ORDER[p.severity] for p in pit.check(c)]
    assert sev == sorted(sev)
    assert len(sev) >= 3


def test_overprovisioned_is_high_only_when_mostly_idle() -> None:
    (p,) = fired(buy_cost(0.02, 0.4)(ctx()), "overprovisioned")
    assert p.severity == "high"
    (q,) = fired(buy_cost(0.91, 0.95)(ctx()), "overprovisioned")
    assert q.severity == "medium"


def test_spot_advice_is_about_the_picked_provider() -> None:
    c = ctx(gpu="l40s", gpn=1, verdict="rent")
    assert fired(c, "spot-checkpointing")
    assert c.cost is not None
    spot_providers = {o.provider for o in c.cost.cloud if o.cost_per_run_spot_usd is not None}
    other = next(o.provider for o in c.cost.cloud if o.provider not in spot_providers) if any(
        o.provider not in spot_providers for o in c.cost.cloud) else "Nobody"
    assert fired(rent_offer(c, other), "spot-checkpointing") == []


def test_export_control_for_renting_abroad_is_the_remote_access_rule() -> None:
    (p,) = fired(ctx(gpu="h100-sxm", verdict="rent", req=make_req(deployment={"country": "CN", "mode": "rent"})),
                 "export-control")
    assert p.severity == "info" and "remote-access" in p.message


def test_no_export_note_when_the_rented_offer_is_in_the_users_own_country() -> None:
    """A CN team renting A100s on an Alibaba Cloud region in China imports nothing: the note about renting 'outside
    CN' (the remote-access rule) was said of an offer in Hangzhou. Abroad, it is still said."""
    c = rent_offer(ctx(gpu="h100-sxm", verdict="rent", req=make_req(deployment={"country": "CN", "mode": "rent"})),
                   "Alibaba Cloud")
    assert c.cost is not None and c.cost.rent_offer is not None
    home = c.cost.rent_offer.model_copy(update={"country": "CN", "region": "cn-hangzhou"})
    abroad = c.cost.rent_offer.model_copy(update={"country": "SG", "region": "ap-southeast-1"})
    at_home = pit.Context(req=c.req, cat=c.cat, gpu=c.gpu, build=c.build, est=c.est,
                          cost=c.cost.model_copy(update={"rent_offer": home}))
    away = pit.Context(req=c.req, cat=c.cat, gpu=c.gpu, build=c.build, est=c.est,
                       cost=c.cost.model_copy(update={"rent_offer": abroad}))
    assert fired(at_home, "export-control") == []
    (p,) = fired(away, "export-control")
    assert p.severity == "info" and "outside CN" in p.message


def test_stale_purchase_price_follows_the_price_the_build_used() -> None:
    # Priced used (deployment.used_hardware): the used price's date counts, not the new one's.
    used_req = make_req(deployment={"used_hardware": True})
    c = with_gpu(ctx(req=used_req, gpu="a100-80gb-sxm", gpn=8, verdict="buy"),
                 price_new_observed=CAT.as_of, price_used_observed="2023-03")
    assert c.build is not None and c.build.tier.endswith("-used")
    hit = fired(c, "stale-purchase-price")
    assert len(hit) == 1 and "2023-03" in hit[0].message and "used price" in hit[0].message
    fresh = with_gpu(c, price_new_observed="2019-01", price_used_observed=CAT.as_of)
    assert fired(fresh, "stale-purchase-price") == []
    # A rent verdict buys nothing: an old purchase price does not matter.
    rent = with_gpu(ctx(gpu="h100-sxm", gpn=8, verdict="rent"), price_new_observed="2019-01")
    assert fired(rent, "stale-purchase-price") == []


def test_batch_rounded_says_the_batch_planned_and_only_for_a_stated_batch() -> None:
    c = ctx(make_req(training={"global_batch": 64}), gpu="h100-sxm", gpn=4, nodes=3)
    p = c.est.plan if c.est else None
    assert p is not None and p.dp == 12
    planned = p.micro_batch * p.grad_accum * p.dp
    assert planned > 64 and planned % 12 == 0
    (hit,) = fired(c, "batch-rounded")
    assert f"global batch of {planned:,}" in hit.message and "not the 64 asked" in hit.message
    assert fired(ctx(gpu="h100-sxm", gpn=4, nodes=3), "batch-rounded") == []  # the estimator chose the batch


def test_a_short_run_on_a_big_rented_cluster_names_the_day_a_reservation_bills() -> None:
    c = rent_offer(ctx(gpu="h100-sxm", verdict="rent", est_update=slow(2.0)), "AWS", instances=16)
    (hit,) = fired(c, "rent-cluster-capacity")
    assert "16 x AWS x" in hit.message and "whole days" in hit.message
    assert "$768" in hit.message  # a day of 16 instances at $2/h each
    long = rent_offer(ctx(gpu="h100-sxm", verdict="rent", est_update=slow(40.0)), "AWS", instances=16)
    (hit,) = fired(long, "rent-cluster-capacity")
    assert "a day of these instances" not in hit.message  # a run of days: the reservation's days are used


def test_the_deadline_rules_count_a_rented_runs_staging() -> None:
    """10 h of training after 9 h of provisioning and staging is 95 % of a 20 h deadline when rented: the deadline
    is tight, and the warning says the staging is in it; the same run with 0.5 h of it is not tight. 9 h more of
    staging misses the deadline."""
    tight_req = make_req(schedule={"deadline_days": 20 / 24})
    slow_staging = rent_offer(ctx(req=tight_req, verdict="rent", est_update=slow(10.0)), "AWS", overhead_hours=9.0)
    (hit,) = fired(slow_staging, "deadline-tight")
    assert "19 h of a 20 h deadline" in hit.message and "9.0 h of provisioning and data staging" in hit.message
    quick = rent_offer(ctx(req=tight_req, verdict="rent", est_update=slow(10.0)), "AWS", overhead_hours=0.5)
    assert fired(quick, "deadline-tight") == [] and fired(quick, "underprovisioned") == []
    late = rent_offer(ctx(req=tight_req, verdict="rent", est_update=slow(10.0)), "AWS", overhead_hours=11.0)
    (miss,) = fired(late, "underprovisioned")
    assert "past the" in miss.message and "11.0 h of provisioning" in miss.message


def test_no_claim_about_renting_where_no_rental_was_priced() -> None:
    """A desk team that asked to buy (mode: buy), whose only builds are used RTX 3090 boxes -- GPUs the catalog
    rents nowhere: no rented build was priced, yet the memo said 'no cloud offer in the catalog can run this
    workload', 'Renting is cheaper.' and 'Buying never pays back: renting is cheaper every month'. With no rental
    priced, the verdict says why none was and the pitfalls make no claim about renting; with one, they still do."""
    req = make_req({"model": {"preset": "llama-3-8b"}, "training": {"method": "full"},
                    "data": {"tokens": 5e8}, "schedule": {"runs_per_month": 2, "deadline_days": 5},
                    "deployment": {"mode": "buy", "site": "desk", "country": "US", "budget_usd": 10_000,
                                   "used_hardware": True}})
    rec = recommend(req, CAT)
    assert rec.found and rec.cost is not None and rec.build is not None and rec.build.gpu == "rtx-3090"
    assert rec.cost.rent_usd_per_gpu_hour is None and rec.cost.verdict == "buy"
    assert "deployment.mode: buy" in rec.cost.verdict_reason and "can run this workload" not in rec.cost.verdict_reason
    said = " ".join(p.message for p in rec.pitfalls)
    assert "Renting is cheaper" not in said and "renting is cheaper" not in said
    idle = next(p for p in rec.pitfalls if p.id == "overprovisioned")
    assert "no rental was priced to compare" in idle.message
    # a priced rental keeps both claims
    (p,) = fired(buy_cost(0.02, None, payback=None)(ctx()), "overprovisioned")
    assert "Renting at " in p.message and "no utilisation breaks even at this cloud price" in p.message
    assert fired(buy_cost(0.02, None, payback=None)(ctx()), "short-horizon")
