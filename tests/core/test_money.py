"""Money as people write it, conversion at catalog FX rates, display in the user's currency."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import loads_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.money import Money, convert, format_money, parse_money
from gpuwiz.core.recommend import recommend
from gpuwiz.core.report import recommendation_data, render_recommendation

CAT = load_catalog()
FX = {k: v.usd_per_unit for k, v in CAT.fx.items()}


@pytest.mark.parametrize("text,amount,code", [
    ("¥1,800,000", 1_800_000, "CNY"), ("250,000 EUR", 250_000, "EUR"), ("$250,000", 250_000, "USD"),
    ("EUR 250000", 250_000, "EUR"), ("£40k", 40_000, "GBP"), ("1.5M USD", 1_500_000, "USD"),
    ("CAD 1,000", 1_000, "CAD"), ("€ 12.50", 12.5, "EUR"), ("300000円", 300_000, "JPY"),
])
def test_parse_money(text: str, amount: float, code: str) -> None:
    assert parse_money(text) == Money(amount, code)


@pytest.mark.parametrize("text,value", [("1,000", 1000.0), ("2k", 2000.0), (12, 12), ("abc", "abc"), ("¥", "¥")])
def test_plain_numbers_and_non_money_pass_through(text: object, value: object) -> None:
    assert parse_money(text) == value


def test_convert_and_format() -> None:
    cny = convert(1_800_000, "CNY", FX)
    assert cny == pytest.approx(1_800_000 * FX["CNY"])
    assert convert(cny, "USD", FX, to="CNY") == pytest.approx(1_800_000)
    with pytest.raises(KeyError):
        convert(1, "BRL", FX)
    assert format_money(1234.4, "CNY") == "¥1,234" and format_money(12.345, "EUR") == "€12.35"
    assert format_money(5, "BRL") == "5.00 BRL" and format_money(None) == "-"


def _cfg(deployment: str) -> str:
    return ("version: 1\nmodel: {preset: llama-2-7b}\ntraining: {method: lora}\ndata: {tokens: 300M}\n"
            f"deployment: {{{deployment}}}\n")


def test_config_money_fields_convert_at_catalog_rates() -> None:
    req = loads_config(_cfg('country: CN, budget_usd: "¥1,800,000", staff_usd_per_year: "90,000 EUR", '
                            'electricity_usd_per_kwh: "$0.09"'), catalog=CAT)
    d = req.deployment
    assert d.budget_usd == pytest.approx(1_800_000 * FX["CNY"])
    assert d.staff_usd_per_year == pytest.approx(90_000 * FX["EUR"])
    assert d.electricity_usd_per_kwh == pytest.approx(0.09)
    # the saved config is in USD and loads back to the same requirements
    assert Requirements.model_validate(req.model_dump()) == req


def test_unknown_currency_is_one_line_with_file_and_field() -> None:
    with pytest.raises(GpuwizError, match=r"cfg.yaml:5: deployment.budget_usd: no exchange rate for BRL"):
        loads_config(_cfg('budget_usd: "250,000 BRL"'), "cfg.yaml", catalog=CAT)


def test_without_rates_only_usd_is_accepted() -> None:
    assert Requirements.model_validate({"deployment": {"budget_usd": "$1,000"}}).deployment.budget_usd == 1000
    with pytest.raises(ValueError, match="no exchange rate for EUR"):
        Requirements.model_validate({"deployment": {"budget_usd": "€1,000"}})


def test_json_keeps_usd_and_adds_currency_and_local_twins() -> None:
    req = loads_config(_cfg("country: CN"), catalog=CAT)
    rec = recommend(req, CAT)
    data = recommendation_data(rec)
    assert data["currency"]["code"] == "CNY" and data["currency"]["usd_rate"] == FX["CNY"]
    assert data["currency"]["observed"] == CAT.fx["CNY"].observed
    assert data["cost_per_run_local"] == pytest.approx(data["cost_per_run_usd"] / FX["CNY"], abs=0.01)
    if data["cost"]["rent_usd_total"] is not None:
        assert data["cost"]["rent_total_local"] == pytest.approx(data["cost"]["rent_usd_total"] / FX["CNY"], abs=0.01)
    memo = render_recommendation(rec, req, "md")
    assert "¥" in memo
    # deployment.currency overrides the country's; USD users see no twins' symbol noise
    eur = recommend(loads_config(_cfg("country: CN, currency: EUR"), catalog=CAT), CAT)
    assert recommendation_data(eur)["currency"]["code"] == "EUR"
    us = recommend(loads_config(_cfg("country: US"), catalog=CAT), CAT)
    assert recommendation_data(us)["currency"]["code"] == "USD" and "¥" not in render_recommendation(us, None, "md")


def test_cn_regulated_scenario_rents_in_country_and_shows_cny(tmp_path: Path) -> None:
    req = loads_config(_cfg("country: CN, data_sensitivity: regulated, mode: rent"), catalog=CAT)
    rec = recommend(req, CAT)
    assert rec.market is not None and rec.currency is not None and rec.currency.code == "CNY"
    if rec.found and rec.cost and rec.cost.cloud:
        assert {o.country for o in rec.cost.cloud} == {"CN"}
        assert "¥" in render_recommendation(rec, req, "text")
    else:
        assert rec.market.excluded.get("out-of-jurisdiction", 0) > 0
