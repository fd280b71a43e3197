"""Offer eligibility (residency, trust tiers, regions), export rules and local economics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuwiz.core import market
from gpuwiz.core.catalog import Catalog, CloudInstance, load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.cost import onprem_parts
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.money import format_money
from gpuwiz.core.recommend import recommend
from gpuwiz.core.report import recommendation_data, render_recommendation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CAT = load_catalog()


def req(**deployment: Any) -> Requirements:
    base = load_config(EXAMPLES / "small-team-lora-7b.yaml")
    data = base.model_dump(exclude_none=True)
    data["deployment"] = {**data.get("deployment", {}), **deployment}
    return Requirements.model_validate(data)


def offer(**kw: Any) -> CloudInstance:
    base: dict[str, Any] = {"id": "x", "provider": "P", "instance_type": "t", "gpu": "h100-sxm", "gpu_count": 8,
                                "country": "US", "region": "us-east-1", "tier": "hyperscaler", "currency": "USD",
                                "price_per_hour": 10.0, "source": "test", "observed": "2026-11", "retrieved": "2026-11"}
    return CloudInstance.model_validate({**base, **kw})


# ---- the rules, one by one -------------------------------------------------------------------------

def test_jurisdictions() -> None:
    assert market.jurisdiction("de") == market.jurisdiction("FR") == market.jurisdiction("NO") == "EU"
    assert market.jurisdiction("GB") == "GB"  # its own since Brexit
    assert market.jurisdiction("HK") != market.jurisdiction("CN") != market.jurisdiction("MO")


@pytest.mark.parametrize("user,where,ok", [
    ("CN", "CN", True), ("CN", "HK", False), ("CN", "MO", False), ("CN", "US", False),
    ("DE", "DE", True), ("DE", "FR", True), ("DE", "NO", True), ("DE", "GB", False), ("DE", "US", False),
    ("US", "US", True), ("US", "CA", False), ("GB", "GB", True), ("GB", "IE", False),
])
def test_regulated_data_stays_in_jurisdiction(user: str, where: str, ok: bool) -> None:
    r = req(country=user, data_sensitivity="regulated")
    chk = market.check_offer(r, offer(country=where))
    assert chk.ok is ok
    assert chk.rule == ("ok" if ok else "out-of-jurisdiction")


@pytest.mark.parametrize("tier,ok", [("hyperscaler", True), ("neocloud", True), ("marketplace-secure", True),
                                     ("marketplace-community", False)])
def test_confidential_data_never_on_community_hosts(tier: str, ok: bool) -> None:
    r = req(country="US", data_sensitivity="confidential")
    assert market.eligible(r, offer(tier=tier)) is ok
    # abroad is allowed for confidential (with the trade-off left to the user's contracts)
    assert market.eligible(r, offer(tier="hyperscaler", country="JP"))


def test_internal_data_goes_anywhere_with_the_tradeoff_stated() -> None:
    r = req(country="DE", data_sensitivity="internal")
    community = offer(tier="marketplace-community", country="SI")
    abroad = offer(country="US")
    assert market.eligible(r, community) and market.eligible(r, abroad)
    assert "community" in (market.tradeoff(r, community) or "")
    assert "EU/EEA" in (market.tradeoff(r, abroad) or "")
    assert market.tradeoff(r, offer(country="FR")) is None


def test_regions_restrict_further_by_country_or_region_id() -> None:
    r = req(country="US", regions=["us-west-2", "CA"])
    assert market.eligible(r, offer(region="us-west-2"))
    assert market.eligible(r, offer(country="CA", region="ca-central-1"))
    assert market.check_offer(r, offer(region="us-east-1")).rule == "not-in-regions"


def test_offer_without_country_is_an_error_not_us() -> None:
    with pytest.raises(ValueError, match="country"):
        CloudInstance.model_validate({"id": "x", "provider": "P", "instance_type": "t", "gpu": "h100-sxm",
                                      "gpu_count": 1, "tier": "neocloud", "price_usd_per_hour": 2.0,
                                      "source": "s", "as_of": "2026"})


# ---- scenarios end to end ------------------------------------------------------------------------

def _rented_offers(rec: Any) -> list[CloudInstance]:
    by_key = {(i.provider, i.instance_type, i.region): i for i in CAT.cloud_instances}
    return [by_key[(o.provider, o.instance, o.region)] for o in rec.cost.cloud]


@pytest.mark.parametrize("country", ["CN", "DE", "US"])
def test_regulated_scenarios_never_rent_outside_the_policy(country: str) -> None:
    r = recommend(req(country=country, data_sensitivity="regulated", mode="rent"), CAT)
    assert r.market is not None and r.market.jurisdiction == market.jurisdiction(country)
    if not r.found:  # nothing in-country holds the job: the answer says what the policy excluded
        assert r.market.excluded.get("out-of-jurisdiction", 0) > 0
        return
    assert r.cost is not None
    for inst in _rented_offers(r):
        assert market.jurisdiction(inst.country) == market.jurisdiction(country), inst.id
        assert inst.tier != "marketplace-community", inst.id
    if not r.cost.cloud:  # nothing compliant for this GPU: said so, with what is allowed instead
        assert r.market.no_compliant_offer
        assert r.market.excluded.get("out-of-jurisdiction", 0) > 0


@pytest.mark.parametrize("country", ["CN", "DE", "US"])
def test_confidential_scenarios_never_rent_community_hosts(country: str) -> None:
    r = recommend(req(country=country, data_sensitivity="confidential", mode="rent"), CAT)
    assert r.found and r.cost is not None and r.cost.cloud
    assert all(inst.tier != "marketplace-community" for inst in _rented_offers(r))


def test_no_compliant_offer_is_reported_with_the_closest_compliant_one() -> None:
    # 8x H100 for regulated data in Germany: the catalog's H100 offers are all outside the EU.
    r = req(country="DE", data_sensitivity="regulated", mode="rent")
    st = market.assess(r, CAT, CAT.gpu("h100-sxm"), 8, 8)
    if st.offers_for_gpu and not st.compliant_for_gpu:
        assert st.no_compliant_offer
        if st.closest_compliant_id:
            closest = next(i for i in CAT.cloud_instances if i.id == st.closest_compliant_id)
            assert market.jurisdiction(closest.country) == "EU"
            assert closest.id in st.closest_compliant_id and closest.provider in st.closest_compliant
    # the same job for internal data has compliant H100 offers
    st2 = market.assess(req(country="DE"), CAT, CAT.gpu("h100-sxm"), 8, 8)
    assert st2.compliant_for_gpu == st2.offers_for_gpu > 0 and not st2.no_compliant_offer


def test_policy_with_no_offer_at_all_says_so() -> None:
    r = req(country="BR", data_sensitivity="regulated", mode="rent")
    st = market.assess(r, CAT, CAT.gpu("h100-sxm"), 8, 8)
    assert st.no_compliant_offer and st.closest_compliant == ""


# ---- export rules --------------------------------------------------------------------------------

def test_purchase_and_remote_access_are_separate_rules() -> None:
    h100 = CAT.gpu("h100-sxm")
    assert h100.export_restricted
    buy = market.purchase_rule(CAT, "CN", h100)
    remote = market.remote_rule(CAT, "CN", h100)
    assert buy is not None and remote is not None and buy.id != remote.id
    assert buy.kind == "hardware-purchase" and market.purchase_blocked(CAT, "CN", h100)
    assert remote.kind == "remote-access" and not market.remote_blocked(CAT, "CN", h100)
    for rule in (buy, remote):
        assert rule.source and rule.observed[:4].isdigit()
    # nothing applies to an unrestricted GPU, or to a user elsewhere
    assert market.purchase_rule(CAT, "CN", CAT.gpu("t4")) is None
    assert market.purchase_rule(CAT, "DE", h100) is None


def test_a_remote_access_ban_in_an_overlay_drops_the_gpu(tmp_path: Path) -> None:
    over = tmp_path / "rules.yaml"
    over.write_text(
        "export_rules:\n"
        "- {id: ban, kind: remote-access, authority: test, destinations: [CN], effect: prohibited,\n"
        "   summary: hypothetical ban, source: test, observed: '2026-11'}\n"
        "- {id: buy, kind: hardware-purchase, authority: test, destinations: [CN], effect: license-required,\n"
        "   summary: licence, source: test, observed: '2026-11'}\n", encoding="utf-8")
    cat = load_catalog(over)
    r = recommend(req(country="CN", mode="rent"), cat)
    assert r.build is None or not cat.gpu(r.build.gpu).export_restricted


# ---- local economics ----------------------------------------------------------------------------

REQUIRED_COUNTRIES = {"US", "CN", "DE", "GB", "FR", "JP", "KR", "SG", "IN", "CA"}


def test_economics_rows_exist_with_source_and_date(cat: Catalog = CAT) -> None:
    assert set(cat.economics) >= REQUIRED_COUNTRIES
    for code, row in cat.economics.items():
        assert row.source.strip() and row.observed[:4].isdigit(), code
        assert row.currency == "USD" or row.currency in cat.fx, code


def test_economics_converts_local_money_to_usd() -> None:
    cn = market.economics(CAT, "cn")
    row = CAT.economics["CN"]
    assert cn.known and cn.currency == "CNY"
    assert cn.electricity_usd_per_kwh == pytest.approx(row.electricity_per_kwh * CAT.fx["CNY"].usd_per_unit)
    assert cn.staff_usd_per_year == pytest.approx(row.staff_per_year * CAT.fx["CNY"].usd_per_unit)
    unknown = market.economics(CAT, "BR")
    assert not unknown.known and unknown.electricity_usd_per_kwh == CAT.fac("electricity_usd_per_kwh")


def test_tco_reads_the_users_country() -> None:
    rec = recommend(req(country="US", mode="buy"), CAT)
    assert rec.buy_build is not None
    us = onprem_parts(req(country="US", mode="buy"), CAT, rec.buy_build)
    de = onprem_parts(req(country="DE", mode="buy"), CAT, rec.buy_build)
    cn = onprem_parts(req(country="CN", mode="buy"), CAT, rec.buy_build)
    e_us, e_de, e_cn = (market.economics(CAT, c) for c in ("US", "DE", "CN"))
    # staff and power follow each country's figures (same build, same hours)
    assert us.staff / e_us.staff_usd_per_year == pytest.approx(de.staff / e_de.staff_usd_per_year)
    assert (us.power_idle_per_year / e_us.electricity_usd_per_kwh / (e_us.pue if us.colo else 1)
            == pytest.approx(cn.power_idle_per_year / e_cn.electricity_usd_per_kwh / (e_cn.pue if cn.colo else 1)))
    # a user's own figure still wins
    mine = onprem_parts(req(country="DE", mode="buy", staff_usd_per_year=1000), CAT, rec.buy_build)
    assert mine.staff < de.staff


def test_currency_without_fx_rate_is_a_catalog_error(tmp_path: Path) -> None:
    over = tmp_path / "c.yaml"
    over.write_text(
        "cloud_instances:\n"
        "- {id: x-brl, provider: P, instance_type: t, gpu: h100-sxm, gpu_count: 1, country: BR,\n"
        "   tier: neocloud, currency: BRL, price_per_hour: 12, source: s, observed: '2026-11', retrieved: '2026-11'}\n",
        encoding="utf-8")
    with pytest.raises(GpuwizError, match="no fx rate for 'BRL'"):
        load_catalog(over)


def test_non_usd_offer_is_priced_in_usd_by_the_engine(tmp_path: Path) -> None:
    over = tmp_path / "c.yaml"
    over.write_text(
        "cloud_instances:\n"
        "- {id: x-cny, provider: P, instance_type: t, gpu: h100-sxm, gpu_count: 1, country: CN,\n"
        "   tier: hyperscaler, currency: CNY, price_per_hour: 100, spot_per_hour: 30, source: s,\n"
        "   observed: '2026-11', retrieved: '2026-11'}\n", encoding="utf-8")
    cat = load_catalog(over)
    inst = next(i for i in cat.cloud_instances if i.id == "x-cny")
    rate = cat.fx["CNY"].usd_per_unit
    assert inst.price_usd_per_hour == pytest.approx(100 * rate)
    assert inst.spot_usd_per_hour == pytest.approx(30 * rate)


def test_v1_overlay_keys_still_override_a_builtin_offer(tmp_path: Path) -> None:
    base = CAT.cloud_instances[0]
    over = tmp_path / "v1.yaml"
    over.write_text(f"cloud_instances:\n- id: {base.id}\n  price_usd_per_hour: 1.5\n  as_of: '2026-10'\n",
                    encoding="utf-8")
    inst = next(i for i in load_catalog(over).cloud_instances if i.id == base.id)
    assert inst.price_usd_per_hour == 1.5 and inst.currency == "USD" and inst.observed == "2026-10"
    assert inst.country == base.country and inst.tier == base.tier


def test_age_months() -> None:
    assert market.age_months("2025", "2026-12-01") == 23
    assert market.age_months("2026-11-30", "2026-12-01") == 1
    assert market.age_months("2027-01", "2026-12-01") == 0


def test_china_market_parts_are_bought_only_in_china() -> None:
    d = CAT.gpu("rtx-4090d")
    assert d.markets == ["CN"]
    assert market.can_buy(CAT, "CN", d) and not market.can_buy(CAT, "US", d)
    assert market.can_buy(CAT, "US", CAT.gpu("rtx-4090")) and not market.can_buy(CAT, "CN", CAT.gpu("h100-sxm"))
    r = recommend(req(country="US", mode="buy"), CAT)
    assert r.build is not None and CAT.gpu(r.build.gpu).markets is None


# ---- the China market (issue 14) ------------------------------------------------------------------

def _cn_regulated(tmp_path: Path, extra: str = "") -> Requirements:
    cfg = tmp_path / "cn.yaml"
    text = (EXAMPLES / "small-team-lora-7b.yaml").read_text(encoding="utf-8")
    text = (text.replace("mode: either", "mode: rent").replace("country: US", "country: CN")
            .replace("data_sensitivity: internal", "data_sensitivity: regulated")
            .replace("budget_usd: 40000", "budget_usd: ¥300,000"))
    cfg.write_text(text + extra, encoding="utf-8")
    return load_config(cfg)


def test_cn_regulated_config_rents_in_mainland_china_in_cny(tmp_path: Path) -> None:
    r_cfg = _cn_regulated(tmp_path)
    assert r_cfg.deployment.budget_usd == pytest.approx(300_000 * CAT.fx["CNY"].usd_per_unit)
    r = recommend(r_cfg, CAT)
    assert r.market is not None and r.market.jurisdiction == "CN"
    assert r.currency is not None and r.currency.code == "CNY"  # the country's currency, no key needed
    if not r.found or r.cost is None or not r.cost.cloud:  # the other answer the issue allows, said plainly
        assert r.market.no_compliant_offer and r.market.excluded.get("out-of-jurisdiction", 0) > 0
        return
    rented = _rented_offers(r)
    assert rented and all(i.country == "CN" for i in rented)  # mainland only: no HK, MO or abroad
    assert all(i.tier != "marketplace-community" for i in rented)
    data = recommendation_data(r)  # the JSON: USD fields stay USD, *_local twins are in CNY
    assert data["currency"]["code"] == "CNY" and r.cost_per_run_usd is not None
    assert data["cost_per_run_local"] == pytest.approx(r.cost_per_run_usd / r.currency.usd_rate, rel=1e-3)
    assert data["cost_per_run_local"] > data["cost_per_run_usd"]  # a yuan is worth less than a dollar


def test_cn_regulated_config_can_rent_a_cny_priced_offer_in_country(tmp_path: Path) -> None:
    # Tencent's China-site list (GT4 = A100 40GB) is priced in yuan; pinned to that GPU the regulated
    # CN scenario must be able to rent it in-country, at the catalog's CNY rate, and the memo says ¥.
    r_cfg = _cn_regulated(tmp_path, "hardware:\n  gpu: a100-40gb-sxm\n")
    r = recommend(r_cfg, CAT)
    assert r.found and r.cost is not None and r.market is not None and not r.market.no_compliant_offer
    rented = _rented_offers(r)
    assert rented and all(i.country == "CN" for i in rented)
    cny = [(o, i) for o, i in zip(r.cost.cloud, rented, strict=True) if i.currency == "CNY"]
    assert cny, [i.id for i in rented]
    rate = CAT.fx["CNY"].usd_per_unit
    for o, i in cny:
        assert o.currency == "CNY" and o.price_per_hour_local == pytest.approx(i.price_per_hour * o.instances)
        assert o.usd_per_hour == pytest.approx(i.price_per_hour * o.instances * rate, rel=1e-3)  # converted
        assert o.usd_per_hour < o.price_per_hour_local  # not yuan read as dollars
    memo = render_recommendation(r, r_cfg)
    o, i = cny[0]
    listed = format_money(i.price_per_hour * o.instances, "CNY")
    assert listed.startswith("¥") and f"({listed}/h)" in memo  # the offer's own list price, in yuan
    assert "(¥" in memo.split("cost per run", 1)[1].split("\n", 1)[0]  # the run cost in the user's yuan


def test_cn_offers_cover_the_china_market_gpus() -> None:
    mainland = [i for i in CAT.cloud_instances if i.country == "CN" and i.tier == "hyperscaler"]
    providers = {i.provider for i in mainland}
    assert {"Alibaba Cloud", "Tencent Cloud"} <= providers
    gpus = {i.gpu for i in mainland}
    assert {"h20", "l20", "a100-80gb-sxm", "a10"} <= gpus
    for i in mainland:
        assert i.source and i.observed[:4].isdigit() and i.retrieved


def test_cn_purchase_rule_is_the_newest_one_and_remote_access_is_separate() -> None:
    h200 = CAT.gpu("h200-sxm")
    buy = market.purchase_rule(CAT, "CN", h200)
    remote = market.remote_rule(CAT, "CN", h200)
    assert buy is not None and remote is not None
    older = [r for r in CAT.export_rules if r.kind == "hardware-purchase" and "CN" in r.destinations]
    assert buy.observed == max(r.observed for r in older)  # the 2026 case-by-case rule, not the 2023 one
    assert buy.effect == "license-required" and remote.effect == "not-controlled"
    # Hong Kong is not named in the 2026 rule: the 2023 rule still applies there
    hk = market.purchase_rule(CAT, "HK", h200)
    assert hk is not None and hk.id != buy.id


# ---- price age on the default examples ------------------------------------------------------------

@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_default_example_rent_price_is_current_or_flagged(example: str) -> None:
    # Done-when of issue 13: no price a default example uses is older than 12 months without a
    # warning in the output. The rented offer's age is read from the catalog entry itself.
    rec = recommend(load_config(EXAMPLES / example), CAT)
    assert rec.cost is not None and rec.cost.cloud, example
    used = rec.cost.cloud[0]
    entry = next(i for i in CAT.cloud_instances if i.provider == used.provider and i.instance_type == used.instance
                 and i.observed == used.observed)
    age = market.offer_age_months(CAT, entry.observed)
    text = render_recommendation(rec, load_config(EXAMPLES / example))
    flagged = any(p.id == "stale-price" for p in rec.pitfalls)
    if rec.cost.rent_option and age > market.STALE_MONTHS:
        assert flagged and f"observed {entry.observed}" in text, (example, entry.id, age)
    else:
        assert not flagged, (example, entry.id, age)
