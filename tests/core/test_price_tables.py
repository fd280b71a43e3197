"""The pricing stage's tables (core.recommend ``_Recommender._shape_table``, cost.PartsStem, the
memoised cost.cloud_options / market.assess): each key holds every requirement field its value
depends on. With every table warm from a base config, a valid change to any deployment, schedule or
data field prices every candidate exactly as the engine without a memo does; the fields that
change the prices are seen to change them (so a key that missed one would fail here)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from test_memo import _leaves, _valid_change

from gpuwiz.core import cost, market, memo
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import Cand, Quick, _Recommender, _Scanner
from scenario_set import ROOT

CAT = load_catalog()


def _fields(c: Cand) -> tuple[Any, ...]:
    return (c.gpu.id, c.gpn, c.nodes, c.rent_run, c.rent_inst.id if c.rent_inst else None, c.rent_n, c.rent_gpu_hour,
            c.spot_run, c.reserved_year, c.capex, c.buy_total, c.rent_total, c.score, c.mode, c.drop, c.tier, c.idle,
            c.overhead, c.build.capex_usd if c.build else None, c.build.tier if c.build else None)


def _priced(req: Requirements) -> tuple[Any, ...]:
    """Every candidate as the price and rank stages leave it, and the explain stage's cloud options
    and market status for a few shapes."""
    rec = _Recommender(req, CAT, req.deployment.objective)
    scan = _Scanner(req, CAT)
    found = rec.enumerated(scan)
    w0 = rec.workload0(scan)
    priced = rec.price(found, w0)
    ranked = rec.rank(priced, w0) if priced.ok else None
    out: list[Any] = [_fields(c) for c in (*priced.ok, *priced.over_budget)]
    out += [_fields(c) for c in ranked.priced] if ranked is not None else []
    for gpu, n, gpn in (("h100-sxm", 8, 8), ("rtx-4090", 1, 1), ("a100-80gb-sxm", 16, 8)):
        out.append(cost.cloud_options(req, CAT, gpu, n, gpn, 10.0, storage_tb=1.0))
        out.append(market.assess(req, CAT, CAT.gpu(gpu), n, gpn))
    return tuple(out)


@pytest.mark.parametrize("example", ["small-team-lora-7b.yaml", "resnet50-imagenet.yaml"])
def test_every_money_policy_and_schedule_edit_prices_as_the_plain_engine(example: str) -> None:
    base = load_config(ROOT / "examples" / example)
    edited: list[tuple[str, Requirements]] = []
    for path, ann, value in _leaves(base):
        if path[0] in ("deployment", "schedule", "data"):
            req = _valid_change(base, path, ann, value)
            if req is not None:
                edited.append((".".join(path), req))
    memo.clear()
    want_base = _priced(base)
    changed: set[str] = set()
    for name, req in edited:
        assert _priced(base) == want_base, name  # warm: the base again, from the tables
        try:
            got = _priced(req)
        except GpuwizError:
            continue  # a change the engine refuses (no data size this model can use, ...)
        with memo.disabled():
            assert got == _priced(req), name
        if got != want_base:
            changed.add(name)
    # The fields each table reads do change the prices here (a key without them would serve the base's).
    assert {"deployment.electricity_usd_per_kwh", "deployment.horizon_years", "deployment.country",
            "deployment.data_sensitivity", "deployment.regions", "deployment.used_hardware", "deployment.pue",
            "deployment.staff_usd_per_year", "schedule.runs_per_month", "data.dataset_gb"} <= changed


def test_parts_stem_gives_the_parts_and_total_of_onprem_parts_to_the_bit() -> None:
    """PartsStem (the parts before the $/kWh and the horizon) applied to a deployment is the
    OnPremParts that deployment's rates give, and its total the same float."""
    base = load_config(ROOT / "examples" / "enterprise-70b-pretrain.yaml")
    fps = [cost.Footprint(nodes=n, gpus_per_node=g, max_power_w=w, power_w=0.75 * w, rack=r)
           for n, g, w, r in ((1, 1, 700.0, False), (1, 8, 10_200.0, True), (16, 8, 10_200.0, True),
                              (1, 4, 2_400.0, False))]
    for site in ("any", "colo", "office"):
        for kwh, years in ((None, 3.0), (0.173, 1.5), (0.31, 5.0)):
            req = base.model_copy(update={"deployment": base.deployment.model_copy(update={
                "site": site, "electricity_usd_per_kwh": kwh, "horizon_years": years})})
            rates = cost.own_rates(req, CAT)
            for fp in fps:
                for capex in (12_345.67, 3.1e5):
                    parts = rates.parts(fp, capex)
                    stem = rates.stem(fp, capex)
                    assert stem.at(rates.kwh, rates.residual_factor) == parts
                    for busy in (0.0, 1234.5, 8760.0 * fp.gpus_per_node * fp.nodes):
                        assert stem.total(rates.kwh, rates.residual_factor, years, busy) == parts.total(years, busy)
            assert math.isfinite(rates.kwh)


def test_size_cost_has_the_numbers_of_size_system_on_every_shape_and_tier() -> None:
    """The recommender ranks on system.size_cost (no text) and shows system.size_system: the
    capex, tier and footprint facts agree to the bit for every GPU, shape, tier and site."""
    from gpuwiz.core import system

    base = load_config(ROOT / "examples" / "resnet50-imagenet.yaml")
    w = system.workload_from(base, CAT, None)
    offload = system.Workload(**{**w.__dict__, "host_ram_gib": 600.0, "offload": "optimizer"})
    seen = 0
    for site in ("any", "office", "desk"):
        req = base.model_copy(update={"deployment": base.deployment.model_copy(update={"site": site})})
        for gpu in CAT.gpus:
            for gpn, nodes in ((1, 1), (2, 1), (4, 1), (8, 1), (8, 4), (4, 16)):
                if gpn > gpu.max_per_node:
                    continue
                for lean, used in ((False, None), (True, None), (True, True)):
                    for wl in (w, offload):
                        b = system.size_system(req, CAT, gpu, gpn, nodes, wl, lean=lean, used=used)
                        s = system.size_cost(req, CAT, gpu, gpn, nodes, wl, lean=lean, used=used)
                        assert (s.capex_usd, s.tier, s.nodes, s.gpus_per_node, s.max_power_w, s.power_w, s.chassis,
                                s.chassis_kind) == (b.capex_usd, b.tier, b.nodes, b.gpus_per_node, b.max_power_w,
                                                    b.power_w, b.chassis, b.chassis_kind), (gpu.id, gpn, nodes, site)
                        assert cost.Footprint.of(s) == cost.Footprint.of(b)
                        seen += 1
    assert seen > 500


@pytest.mark.parametrize("example", ["small-team-lora-7b.yaml", "resnet50-imagenet.yaml"])
def test_buy_floors_from_the_warm_stems_are_the_plain_engines(example: str) -> None:
    """rank's owning floors (``_buy_floor``: its PartsStem per shape is kept per catalog on the shape and
    ``stem_key``) after every deployment edit, warm from the base, equal the floors without a memo; and
    the fields the stems read do move them (a key that missed one would serve the base's)."""
    base = load_config(ROOT / "examples" / example)
    shapes = [(g, gpn, nodes) for g in CAT.gpus for gpn, nodes in ((1, 1), (4, 1), (8, 2)) if gpn <= g.max_per_node]

    def floors(req: Requirements) -> list[tuple[float, float]]:
        rec = _Recommender(req, CAT, req.deployment.objective)
        q = Quick(fits=True, wall_hours=10.0, gpu_hours=10.0)
        return [rec._buy_floor(Cand(gpu=g, gpn=gpn, nodes=nodes, q=q)) for g, gpn, nodes in shapes]

    memo.clear()
    want_base = floors(base)
    changed: set[str] = set()
    for path, ann, value in _leaves(base):
        if path[0] != "deployment":
            continue
        req = _valid_change(base, path, ann, value)
        if req is None:
            continue
        floors(base)
        got = floors(req)
        with memo.disabled():
            assert got == floors(req), path
        if got != want_base:
            changed.add(".".join(path))
    assert {"deployment.country", "deployment.staff_usd_per_year", "deployment.horizon_years",
            "deployment.site"} <= changed, changed


def test_cheapest_of_the_allowed_offers_is_cheapest_rate() -> None:
    """The recommender prices a shape with cost.cheapest_of over the GPU's allowed offers (no memo of
    its own: its per-shape table keys on the policy); the same answer as the memoised cheapest_rate,
    under data policies that allow different offers."""
    base = load_config(ROOT / "examples" / "small-team-lora-7b.yaml")
    seen = 0
    counts: set[int] = set()
    for upd in ({}, {"data_sensitivity": "regulated"}, {"data_sensitivity": "confidential", "country": "DE"},
                {"regions": ["us-east-1"]}):
        req = base.model_copy(update={"deployment": base.deployment.model_validate(
            {**base.deployment.model_dump(), **upd})})
        counts.add(sum(len(cost.allowed_offers(CAT, g.id, req, market.policy_key(req))) for g in CAT.gpus))
        policy = market.policy_key(req)
        for g in CAT.gpus:
            offers = cost.allowed_offers(CAT, g.id, req, policy)
            for total, gpn in ((1, 1), (8, 8), (16, 8), (4, 2)):
                for ram in (0.0, 900.0):
                    got = cost.cheapest_of(offers, total, gpn, host_ram_gib=ram)
                    assert got == cost.cheapest_rate(CAT, g.id, total, gpn, req=req, host_ram_gib=ram), (g.id, upd)
                    seen += got is not None
    assert seen > 50 and len(counts) > 1  # the policies do allow different offers


def test_eligible_is_check_offer_for_every_offer_and_policy() -> None:
    """market.eligible answers without check_offer where no policy can refuse an offer: the same
    answer as check_offer on every catalog offer, for every sensitivity, with and without regions."""
    base = load_config(ROOT / "examples" / "small-team-lora-7b.yaml")
    refused = 0
    for sens in ("public", "internal", "confidential", "regulated"):
        for regions in (None, ["US"], ["eu-west-1", "DE"]):
            for country in ("US", "DE"):
                dep = base.deployment.model_validate({**base.deployment.model_dump(), "data_sensitivity": sens,
                                                      "regions": regions, "country": country})
                req = base.model_copy(update={"deployment": dep})
                for inst in CAT.cloud_instances:
                    ok = market.check_offer(req, inst).ok
                    assert market.eligible(req, inst) == ok, (sens, regions, inst.id)
                    refused += not ok
    assert refused > 100
