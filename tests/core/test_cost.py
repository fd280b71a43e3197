"""Rent vs buy: cloud cost per run, on-prem TCO, verdict, break-even, payback, flips, series."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from gpuwiz.core import cost as costmod
from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Build, Requirements
from gpuwiz.core.units import HOURS_PER_YEAR

CAT: Catalog = load_catalog()


def req(**deployment: Any) -> Requirements:
    runs = deployment.pop("runs_per_month", 2)
    return Requirements.model_validate({"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e9},
                                        "schedule": {"runs_per_month": runs}, "deployment": deployment})


def h100_node(nodes: int = 1, capex: float = 300_000.0, site: str = "colocation / data centre") -> Build:
    return Build(gpu="h100-sxm", gpu_name="H100", gpus_per_node=8, nodes=nodes, cpu="EPYC", power_w=7650,
                 max_power_w=10200, capex_usd=capex * nodes, site=site)


def test_cloud_options_match_gpu_and_count() -> None:
    r = req()
    opts = costmod.cloud_options(r, CAT, "h100-sxm", 8, 8, wall_hours=10.0)
    assert opts and all(o.gpu == "h100-sxm" for o in opts)
    assert [o.cost_per_run_usd for o in opts] == sorted(o.cost_per_run_usd for o in opts)
    for o in opts:
        assert o.gpus_per_instance * o.instances >= 8
        assert o.cost_per_run_usd == pytest.approx(o.usd_per_hour * 10.0, abs=0.01)
        assert o.cost_per_year_usd == pytest.approx(o.usd_per_hour * 10.0 * 24, abs=0.05)


def test_a_run_of_minutes_lists_the_lowest_rate_offer_first() -> None:
    """Rounded to the cent, a 2-minute run costs $0.01 on every offer: the order (and the offer the answer
    quotes, the first) is the unrounded cost's, not the provider's name."""
    opts = costmod.cloud_options(req(), CAT, "rtx-3090", 1, 1, wall_hours=0.03)
    rates = [o.usd_per_hour for o in opts]
    assert len(set(rates)) > 1 and len({o.cost_per_run_usd for o in opts}) == 1  # the case: one rounded cost
    assert rates == sorted(rates)


def test_the_answer_quotes_the_offer_its_ranking_priced() -> None:
    """A BERT-base pretrain of minutes: the answer quoted RunPod's $0.43/h (first by name among $0.01 runs) while
    the ranking had priced Vast.ai's $0.25/h, and called a $0.23 alternative 48 % dearer than the $0.24 pick."""
    from gpuwiz.core.recommend import recommend

    r = recommend(Requirements.model_validate({
        "model": {"preset": "bert-base"}, "training": {"method": "pretrain"}, "data": {"tokens": 7.3e6},
        "schedule": {"runs_per_month": 8, "deadline_days": 1},
        "deployment": {"mode": "either", "site": "cloud", "country": "JP", "horizon_years": 1}}), CAT)
    assert r.cost is not None and r.cost.verdict == "rent" and r.cost.rent_offer is not None
    same = [o for o in r.cost.cloud if o.gpu == r.build.gpu]  # type: ignore[union-attr]
    assert len({o.usd_per_hour for o in same}) > 1
    assert r.cost.rent_offer.usd_per_hour == min(o.usd_per_hour for o in same)
    assert r.cost_per_run_usd is not None
    for a in r.alternatives:
        assert (a.cost_per_run_usd < r.cost_per_run_usd) == ("cheaper" in a.reason), (a, r.cost_per_run_usd)


def test_a_reservation_that_wins_once_the_wait_is_counted_is_the_price_quoted() -> None:
    """SDXL pretrained 20 times a month on one rented H100 PCIe (the perf-per-watt pick): each run waits 1.2 h
    (provisioning, staging), paid at the hourly rate on demand and already paid on a reservation. The rent total
    counted it (a reservation, $16,569 a year) while the cost per run compared without it and quoted on demand
    ($70.28 x 240 = $16,867)."""
    from gpuwiz.core.recommend import recommend
    from gpuwiz.core.report import render_recommendation

    q = Requirements.model_validate({
        "model": {"preset": "sdxl"}, "training": {"method": "pretrain"}, "data": {"samples": 1.3e6},
        "schedule": {"runs_per_month": 20, "deadline_days": 3},
        "deployment": {"mode": "rent", "objective": "perf-per-watt", "horizon_years": 1, "used_hardware": True}})
    r = recommend(q, CAT)
    assert r.cost is not None and r.cost.rent_offer is not None and r.cost_per_run_usd is not None
    top, offer = r.cost.cloud[0], r.cost.rent_offer
    assert top.cost_per_run_reserved_usd is not None
    assert top.cost_per_run_usd < top.cost_per_run_reserved_usd  # the case: on demand is cheaper without the wait
    assert top.cost_per_run_reserved_usd < top.cost_per_run_usd + offer.overhead_hours * top.usd_per_hour
    assert r.cost.rent_usd_total == pytest.approx(r.cost_per_run_usd * 240, rel=0.002)
    assert r.build is not None and "1-year reservation" in r.build.site
    text = render_recommendation(r, q, "text")
    row = next(line for line in text.splitlines() if offer.instance in line and offer.provider in line
               and "/h" in line)  # the table's row (the Rent line names the offer too)
    assert "not worth it" not in row, row


def test_with_nothing_to_buy_the_rent_total_takes_the_reservation_too() -> None:
    """SDXL pretrained at a desk in China, rent only: no build to weigh, and the rent total and the verdict's price
    per run were on demand ($841 a run, $80,750 a year) while the ranking and the answer's cost per run took the
    reservation its 8 runs of 190 h a month fill ($828.36 a run)."""
    from gpuwiz.core.recommend import recommend

    q = Requirements.model_validate({
        "model": {"preset": "sdxl"}, "training": {"method": "pretrain"}, "data": {"samples": 1e7},
        "schedule": {"runs_per_month": 8, "deadline_days": 30},
        "deployment": {"mode": "rent", "site": "desk", "country": "CN", "currency": "USD", "horizon_years": 1,
                       "used_hardware": True}})
    r = recommend(q, CAT)
    assert r.cost is not None and r.cost.onprem is None and r.cost_per_run_usd is not None
    top = r.cost.cloud[0]
    assert top.cost_per_run_reserved_usd is not None and r.build is not None and "reservation" in r.build.site
    assert r.cost.rent_usd_total == pytest.approx(r.cost_per_run_usd * 96, rel=0.002)
    assert f"${r.cost_per_run_usd:,.0f} per run" in r.cost.verdict_reason, r.cost.verdict_reason


def test_multi_instance_needs_rdma() -> None:
    opts = costmod.cloud_options(req(), CAT, "h100-sxm", 32, 8, wall_hours=10.0)
    assert opts
    for o in opts:
        inst = next(i for i in CAT.cloud_instances if i.instance_type == o.instance and i.provider == o.provider)
        assert o.instances == 4 and inst.rdma


def test_spot_includes_restart_overhead_and_reserved_is_paid_all_year() -> None:
    r = req(runs_per_month=1)
    opts = costmod.cloud_options(r, CAT, "l40s", 1, 1, wall_hours=5.0)
    inst = next(i for i in CAT.cloud_instances if i.gpu == "l40s" and i.spot_usd_per_hour and i.gpu_count == 1
                and i.provider == "RunPod")
    o = next(x for x in opts if x.instance == inst.instance_type)
    assert o.cost_per_run_spot_usd == pytest.approx(
        inst.spot_usd_per_hour * 5 * (1 + CAT.fac("spot_overhead_frac")), abs=0.01)  # type: ignore[operator]
    # 12 runs of 5 h a year: a 1-year reservation is billed for 8,760 h, spread over 12 runs.
    res_rate = inst.price_usd_per_hour * (1 - CAT.fac("reserved_1y_discount"))
    assert o.cost_per_run_reserved_usd == pytest.approx(res_rate * HOURS_PER_YEAR / 12, abs=0.01)


def test_onprem_tco_components() -> None:
    r = req(electricity_usd_per_kwh=0.10, pue=1.25, colo_usd_per_kw_month=184.0, staff_usd_per_year=150_000,
            site="colo")
    b = h100_node()
    parts = costmod.onprem_parts(r, CAT, b)
    assert parts.colo
    assert parts.space == pytest.approx(10.2 * 184 * 12)
    assert parts.maintenance == pytest.approx(CAT.fac("maintenance_frac_per_year") * 300_000)
    # Idle power: 25 % of max draw all year, with PUE.
    assert parts.power_idle_per_year == pytest.approx(0.25 * 10.2 * 1.25 * HOURS_PER_YEAR * 0.10)
    # Residual value decays as residual_frac ** (years / depreciation_years).
    frac = CAT.fac("residual_value_frac") ** (3 / CAT.fac("depreciation_years"))
    assert parts.residual == pytest.approx(300_000 * frac)
    tco = costmod.onprem_tco(r, parts, busy_gpu_hours_per_year=0.5 * 8 * HOURS_PER_YEAR)
    assert tco.utilization == pytest.approx(0.5)
    expected = 300_000 - parts.residual + 3 * parts.opex_per_year(0.5 * 8 * HOURS_PER_YEAR)
    assert tco.total_usd == pytest.approx(expected, rel=1e-6)
    assert tco.usd_per_gpu_hour == pytest.approx(expected / (0.5 * 8 * HOURS_PER_YEAR * 3), rel=1e-4)


def test_user_overrides_beat_catalog_defaults() -> None:
    b = h100_node()
    cheap = costmod.onprem_parts(req(electricity_usd_per_kwh=0.05, site="colo"), CAT, b)
    dear = costmod.onprem_parts(req(electricity_usd_per_kwh=0.30, site="colo"), CAT, b)
    assert dear.power_idle_per_year == pytest.approx(6 * cheap.power_idle_per_year)
    office = costmod.onprem_parts(req(site="office"), CAT, b.model_copy(update={"gpus_per_node": 2}))
    assert not office.colo and office.space == pytest.approx(2 * CAT.fac("office_space_usd_per_gpu_year"))


def rent_ref(per_run: float, gpu_hour: float = 3.0) -> costmod.RentRef:
    return costmod.RentRef(usd_per_run=per_run, label="8x H100 somewhere", usd_per_gpu_hour=gpu_hour)


def test_rare_runs_rent() -> None:
    r = req(runs_per_month=1, site="colo")
    a = costmod.analyse(r, CAT, h100_node(), gpu_hours_per_run=200.0, cloud=[], rent=rent_ref(600.0))
    assert a.verdict == "rent"
    assert a.onprem is not None and a.onprem.utilization < 0.05
    assert a.breakeven_utilization is not None and a.breakeven_utilization > a.onprem.utilization
    assert a.payback_months is None or a.payback_months > 36
    assert "busy only" in a.verdict_reason


def test_full_time_work_at_hyperscaler_prices_buys() -> None:
    # Busy ~90 % of the year at $12/GPU-h on demand: the research's break-even is ~15-30 %.
    gph = 8 * 730 * 0.9
    r = req(runs_per_month=1, site="colo")
    a = costmod.analyse(r, CAT, h100_node(), gpu_hours_per_run=gph, cloud=[], rent=rent_ref(gph * 12.0, 12.0))
    assert a.verdict == "buy"
    assert a.breakeven_utilization is not None and 0.05 < a.breakeven_utilization < 0.6
    assert a.payback_months is not None and 2 < a.payback_months < 36
    assert a.onprem is not None and a.onprem.usd_per_gpu_hour < 12.0
    assert any("utilisation below" in f for f in a.flip_inputs)


def test_breakeven_formula() -> None:
    gph = 1000.0
    r = req(runs_per_month=2, site="colo")
    b = h100_node()
    a = costmod.analyse(r, CAT, b, gpu_hours_per_run=gph, cloud=[], rent=rent_ref(gph * 4.0, 4.0))
    parts = costmod.onprem_parts(r, CAT, b)
    expect = parts.fixed_per_year(3) / (8 * HOURS_PER_YEAR * (4.0 - parts.power_per_gpu_hour))
    assert a.breakeven_utilization == pytest.approx(expect, rel=1e-3)


def test_a_rent_verdict_on_a_marketplace_price_says_what_a_data_centre_would_cost() -> None:
    # Busy most of the year: $2/GPU-h (a marketplace ask) rents cheaper than owning, $12/GPU-h (a data centre) does not
    gph = 8 * 730 * 0.6
    r = req(runs_per_month=1, site="colo")
    cheap, dear = rent_ref(gph * 2.0, 2.0), costmod.RentRef(usd_per_run=gph * 12.0, label="8x H100 on DC (big)",
                                                             usd_per_gpu_hour=12.0)
    a = costmod.analyse(r, CAT, h100_node(), gph, [], cheap, datacentre=dear)
    assert a.verdict == "rent" and a.onprem is not None
    assert a.datacentre_rent_usd_total == pytest.approx(gph * 12.0 * 12 * 3, rel=1e-6)
    assert a.onprem.total_usd < 0.9 * a.datacentre_rent_usd_total  # owning wins against the data centre
    assert a.datacentre_rent_option == "8x H100 on DC (big)"
    assert "community marketplace host's price" in a.verdict_reason and "8x H100 on DC (big)" in a.verdict_reason
    assert any(f.startswith("renting from a data centre") for f in a.flip_inputs)
    # not said: without a data-centre offer, when the data centre is cheap too, when the user asked to rent
    for other in (costmod.analyse(r, CAT, h100_node(), gph, [], cheap),
                  costmod.analyse(r, CAT, h100_node(), gph, [], cheap, datacentre=rent_ref(gph * 2.1, 2.1)),
                  costmod.analyse(req(runs_per_month=1, site="colo", mode="rent"), CAT, h100_node(), gph, [], cheap,
                                  datacentre=dear)):
        assert other.datacentre_rent_usd_total is None and other.datacentre_rent_option == ""
        assert "marketplace" not in other.verdict_reason
        assert not any(f.startswith("renting from a data centre") for f in other.flip_inputs)


def test_mode_forces_the_verdict() -> None:
    a = costmod.analyse(req(mode="buy", site="colo"), CAT, h100_node(), 10.0, [], rent_ref(30.0))
    assert a.verdict == "buy"
    b = costmod.analyse(req(mode="rent", site="colo"), CAT, h100_node(), 8 * 700.0, [], rent_ref(8 * 700 * 12.0, 12.0))
    assert b.verdict == "rent"


def test_hybrid_when_close_and_splittable() -> None:
    r = req(runs_per_month=1, site="colo")
    b = h100_node(nodes=4)
    gph = 32 * 700.0
    parts = costmod.onprem_parts(r, CAT, b)
    buy_total = parts.total(3, gph * 12)
    per_run = buy_total / 3 / 12  # renting costs the same over the horizon
    a = costmod.analyse(r, CAT, b, gph, [], rent_ref(per_run, per_run / gph))
    assert a.verdict == "hybrid"
    assert a.hybrid_usd_total is not None
    assert "own 2 of 4 nodes" in a.verdict_reason
    # When the ranking chose renting (the answer is a rented build), no hybrid of another owned build
    # beside it: the verdict is the ranking's.
    d = costmod.analyse(r, CAT, b, gph, [], rent_ref(per_run, per_run / gph), decided="rent", decided_why="x")
    assert d.verdict == "rent" and d.hybrid_usd_total is None


def test_monthly_series_is_cumulative_over_the_horizon() -> None:
    r = req(runs_per_month=4, site="colo", horizon_years=2)
    a = costmod.analyse(r, CAT, h100_node(), 100.0, [], rent_ref(500.0))
    assert len(a.monthly) == 25 and a.monthly[0].month == 0
    assert a.monthly[0].rent_usd == 0 and a.monthly[0].buy_usd == pytest.approx(300_000)
    assert all(x.rent_usd <= y.rent_usd and x.buy_usd <= y.buy_usd for x, y in pairwise(a.monthly))
    assert a.monthly[12].rent_usd == pytest.approx(500.0 * 4 * 12)


def test_no_cloud_offer_means_buy_and_no_price_means_rent() -> None:
    a = costmod.analyse(req(site="colo"), CAT, h100_node(), 100.0, [], None)
    assert a.verdict == "buy" and a.onprem is not None
    b = costmod.analyse(req(), CAT, None, 100.0, [], rent_ref(50.0), gpu_priced=False)
    assert b.verdict == "rent" and b.onprem is None


def test_cheapest_rate_respects_countries() -> None:
    hit = costmod.cheapest_rate(CAT, "a100-40gb-sxm", 8, 8)
    assert hit is not None
    rate, _inst, _n = hit
    us = costmod.cheapest_rate(CAT, "a100-40gb-sxm", 8, 8, countries={"US"})
    assert us is not None and us[1].country == "US" and us[0] >= rate


def _pinned_rent(training: dict[str, Any]) -> Any:
    from gpuwiz.core.recommend import recommend

    return recommend(Requirements.model_validate({
        "model": {"preset": "llama-2-7b"}, "training": training, "data": {"tokens": 1e8},
        "deployment": {"mode": "rent"}, "hardware": {"gpu": "h100-sxm", "count": 2}}), CAT)


def test_small_count_on_a_big_instance_says_the_gpus_are_idle() -> None:
    """2x H100 for a ZeRO-3 full fine-tune: no 2-GPU offer, and splitting over 1-GPU VMs without RDMA
    would drown in weight gathers -> the smallest instance with >= 2 GPUs, saying 6 are idle."""
    r = _pinned_rent({"method": "full"})
    assert r.estimate is not None and r.estimate.plan.zero_stage == 3
    assert r.cost is not None and r.cost.cloud and r.build is not None
    top = r.cost.cloud[0]
    assert top.instances == 1 and top.gpus_per_instance == 8
    assert "6 of 8 paid but idle" in top.note and "idle" in r.build.site
    assert all(o.gpus_per_instance >= 2 for o in r.cost.cloud)


def test_small_ddp_job_may_split_over_single_gpu_instances() -> None:
    """LoRA (tiny gradients, long steps): 2 x 1-GPU instances over plain Ethernet cost a quarter of an
    8-GPU box, with the all-reduce time added and said."""
    r = _pinned_rent({"method": "lora", "global_batch": 512})
    assert r.cost is not None and r.cost.cloud and r.estimate is not None
    top = r.cost.cloud[0]
    assert top.gpus_per_instance == 1 and top.instances == 2 and "no RDMA" in top.note
    small = Requirements.model_validate({"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e8}})
    whole = costmod.cloud_options(small, CAT, "h100-sxm", 2, 2, r.estimate.time.wall_hours)
    assert whole and all("idle" in o.note for o in whole)  # without the split: only 8-GPU boxes
    assert top.cost_per_run_usd < min(o.cost_per_run_usd for o in whole) / 2
    # ... which the answer no longer lists: they cost more than the exact fit.
    assert not any("idle" in o.note for o in r.cost.cloud)
    # The split costs time: the run is longer than the estimate by the all-reduce share.
    rate = top.usd_per_hour
    assert top.cost_per_run_usd >= rate * r.estimate.time.wall_hours


def test_split_job_refuses_zero3_tp_and_slow_networks() -> None:
    from types import SimpleNamespace as NS

    def est(zero: int, tp: int, trainable: float, step: float) -> Any:
        return NS(plan=NS(tp=tp, pp=1, zero_stage=zero, gpus=2), throughput=NS(step_time_s=step),
                  model=NS(params_trainable=trainable))
    assert costmod.SplitJob.from_estimate(est(3, 1, 7e9, 10.0)) is None
    assert costmod.SplitJob.from_estimate(est(0, 2, 7e9, 10.0)) is None
    job = costmod.SplitJob.from_estimate(est(0, 1, 7e9, 10.0))  # full DDP of 7B: 28 GB per step
    one_gpu = next(i for i in CAT.cloud_instances if i.gpu_count == 1)
    assert job is not None and job.slowdown(one_gpu) is None


def test_buying_that_wins_only_through_resale_says_so() -> None:
    """Payback past the horizon but a lower total: the resale value is what makes buying win."""
    req = Requirements.model_validate({"model": {"preset": "llama-2-7b"}, "training": {"method": "lora"},
                                       "data": {"tokens": 1e8}, "schedule": {"runs_per_month": 30},
                                       "deployment": {"horizon_years": 1, "mode": "either"}})
    est = estimate(req, CAT, gpu="rtx-4090", count=1, gpus_per_node=1)
    build = sysmod.size_system(req, CAT, CAT.gpu("rtx-4090"), 1, 1, sysmod.workload_from(req, CAT, est))
    parts = costmod.onprem_parts(req, CAT, build)
    gph = est.time.gpu_hours
    busy = costmod.busy_hours(req, gph, 1)
    buy_total = parts.total(1.0, busy)
    # Rent priced so that owning is 12 % cheaper in total but does not pay back within 12 months.
    rent_year = buy_total / 0.88
    ref = costmod.RentRef(usd_per_run=rent_year / costmod.runs_per_year(req), label="ref", usd_per_gpu_hour=1.0)
    a = costmod.analyse(req, CAT, build, gph, [], ref)
    assert a.payback_months is not None and a.payback_months > 12
    assert a.verdict == "buy" and a.buy_wins_only_by_resale and "resale" in a.verdict_reason


def test_rough_and_exact_owning_cost_share_one_rule() -> None:
    """cost.onprem_parts prices a footprint with the same staff / space / power rules as a build."""
    req = Requirements.model_validate({"model": {"preset": "llama-2-7b"}, "training": {"method": "lora"},
                                       "data": {"tokens": 1e8}})
    est = estimate(req, CAT, gpu="rtx-4090", count=2, gpus_per_node=2)
    b = sysmod.size_system(req, CAT, CAT.gpu("rtx-4090"), 2, 1, sysmod.workload_from(req, CAT, est))
    exact = costmod.onprem_parts(req, CAT, b)
    rough = costmod.onprem_parts(req, CAT, costmod.Footprint.of(b), capex=b.capex_usd)
    assert rough == exact
    one = costmod.onprem_parts(req, CAT, costmod.Footprint(1, 1, 800, 600, False), capex=5000)
    eight = costmod.onprem_parts(req, CAT, costmod.Footprint(1, 8, 6000, 5000, False), capex=50000)
    assert one.staff == eight.staff  # one box is one box to run: staff is not a per-GPU cost


def test_offers_are_checked_one_by_one_against_the_plans_host_ram() -> None:
    # Every 8x A100 40GB offer is checked, not only the cheapest: the cheapest that holds 1,500 GiB of
    # offloaded optimizer state per node may be dearer than the cheapest offer overall.
    need = 1500.0
    plain = costmod.cheapest_rate(CAT, "a100-40gb-sxm", 8, 8)
    held = costmod.cheapest_rate(CAT, "a100-40gb-sxm", 8, 8, host_ram_gib=need)
    assert plain is not None and held is not None
    assert costmod.instance_ram_ok(held[1], need) and held[0] >= plain[0]
    if not costmod.instance_ram_ok(plain[1], need):
        assert held[1] is not plain[1]
    rows = costmod.cloud_options(req(), CAT, "a100-40gb-sxm", 8, 8, 10.0, host_ram_gib=need)
    every = costmod.cloud_options(req(), CAT, "a100-40gb-sxm", 8, 8, 10.0)
    assert rows and len(rows) < len(every)
    by_key = {(i.provider, i.instance_type, i.gpu, i.region): i for i in CAT.cloud_instances}
    assert all(costmod.instance_ram_ok(by_key[(o.provider, o.instance, o.gpu, o.region)], need) for o in rows)
    assert costmod.cloud_options(req(), CAT, "a100-40gb-sxm", 8, 8, 10.0, host_ram_gib=1e6) == []


def test_the_verdicts_price_per_run_is_the_answers_to_the_cent() -> None:
    """A V100 asked for by name, rented for a run of seconds: the verdict said '$1.56 per run', the answer's cost
    per run $1.55 -- its egress and object-storage share were each rounded to the cent before being added."""
    from gpuwiz.core.recommend import recommend

    q = Requirements.model_validate({
        "model": {"preset": "resnet-50"}, "training": {"method": "pretrain"}, "data": {"samples": 2000},
        "schedule": {"runs_per_month": 0.25, "deadline_days": 0.5},
        "deployment": {"mode": "rent", "horizon_years": 1}, "hardware": {"gpu": "v100-16gb-sxm2", "count": 1}})
    r = recommend(q, CAT)
    assert r.cost is not None and r.cost.onprem is None and r.cost_per_run_usd is not None
    assert f"${r.cost_per_run_usd:.2f} per run" in r.cost.verdict_reason, (r.cost_per_run_usd, r.cost.verdict_reason)
